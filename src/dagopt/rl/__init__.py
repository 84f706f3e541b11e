"""Reinforcement-learning pieces shared by training runs (``dagopt.train``) and by
placers that learn per graph (``dagopt.place.hsdag``): the policy-gradient loss, the
``Environment`` interface and REINFORCE baselines as objects."""

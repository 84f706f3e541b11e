"""Training runs with checkpoints and resume.

``loop`` (``fit``: epochs on the run-directory contract of ``rundir``), ``reinforce``
(the policy-gradient loss and ``Environment``), ``baselines`` (REINFORCE baselines as
objects), and one module or package per trained model: ``ordering`` (Topoformer,
paper 000 4.3) and ``regal`` (paper 003 2.3).
"""

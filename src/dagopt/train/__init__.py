"""Training runs with checkpoints and resume.

``loop`` (``fit``: epochs on the run-directory contract of ``rundir``) and one module or
package per trained model: ``ordering`` (Topoformer, paper 000 4.3) and ``regal``
(paper 003 2.3). REINFORCE and its baselines come from ``dagopt.rl``.
"""

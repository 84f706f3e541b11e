"""Configuration ranking (paper 002, TGraph): data preparation for learned cost models.

``preprocess.py``: the TpuGraphs pre-processing of paper 002, section 2.2. The ranking
metrics live in ``dagopt.objectives.ranking``.
"""

"""TGraph (paper 002, sections 2.3-2.5): learned cost models that rank compiler configurations.

``config.py`` (``TGraphConfig``), ``features.py`` (records as tensors), ``model.py``
(TGraph, eq. 2-7), ``baseline.py`` (the TpuGraphs GNN baselines), ``ranker.py`` (the
model files: a normalised model, ``TGraphRanker``, and a fold ensemble), ``loss.py``
(pairwise hinge loss, eq. 8). Pre-processing and inference live in ``dagopt.rank``.
"""

"""REGAL training (paper 003, section 2.3): ``config`` (``RegalTrainConfig``),
``episodes`` (training graphs, reference BRKGA runs, the ``BrkgaEnv`` reward),
``imitation`` (the warm start beyond the paper) and ``trainer`` (``train_regal``)."""

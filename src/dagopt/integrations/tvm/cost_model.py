"""TVM MetaSchedule's XGBoost cost model (``meta_schedule.cost_model.XGBModel``) over a
set of candidate TIR schedules whose features are given.

MetaSchedule's own ``PerStoreFeature`` extractor segfaults in apache-tvm 0.27.0.post1
(even on a plain TE matmul), so the features here are supplied by the caller (the tile
collection passes ``config_feat``) through a ``PyFeatureExtractor`` keyed by each
candidate's TIR; the model, its training (rank objective, adaptive retraining) and its
scores (higher = predicted faster) are MetaSchedule's.
"""

from collections.abc import Sequence

import numpy as np

from dagopt.integrations.tvm import cpu_target, require_tvm


class ScheduleCostModel:
    """``XGBModel`` over ``modules`` (one ``IRModule`` per candidate), each described by
    its row of ``features``: ``update`` with measured candidates, ``predict`` all."""

    def __init__(self, modules: Sequence[object], features: np.ndarray, seed: int = 0) -> None:
        require_tvm()
        import tvm
        from tvm.ir.utils import derived_object
        from tvm.s_tir import meta_schedule as ms

        rows = {
            m.script(): np.asarray(f, dtype=np.float32)[None]
            for m, f in zip(modules, features, strict=True)
        }

        @derived_object
        class Lookup(ms.feature_extractor.PyFeatureExtractor):
            def extract_from(self, context, candidates):
                return [tvm.runtime.tensor(rows[c.sch.mod.script()]) for c in candidates]

        self._ms = ms
        self._context = ms.TuneContext(mod=modules[0], target=cpu_target(), num_threads=1)
        self._candidates = [
            ms.MeasureCandidate(
                tvm.s_tir.Schedule(m), ms.arg_info.ArgInfo.from_prim_func(m["main"])
            )
            for m in modules
        ]
        config = ms.cost_model.xgb_model.XGBConfig(seed=seed, nthread=1)
        self._model = ms.cost_model.XGBModel(
            extractor=Lookup(),
            config=config,
            num_warmup_samples=0,
            verbose_eval=10**9,
            num_tuning_cores=1,
        )

    def update(self, index: np.ndarray, seconds: np.ndarray) -> None:
        """Train on the measured candidates ``index`` (runtimes in ``seconds``)."""
        results = [self._ms.runner.RunnerResult([float(s)], None) for s in seconds]
        self._model.update(self._context, [self._candidates[i] for i in index], results)

    def predict(self) -> np.ndarray:
        """Every candidate's score (higher = predicted faster)."""
        return np.asarray(self._model.predict(self._context, self._candidates), dtype=np.float64)

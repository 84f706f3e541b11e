"""Training TGraph and the TpuGraphs baseline (paper 002, section 2.4) on the shared loop.

``dagopt train tgraph``: the graphs of one collection (the ``splits`` merged, pruned,
de-duplicated, -1 padded: ``dagopt.rank.tgraph.prepare``) are split K-fold by graph
(2.4.3: ``folds`` folds, the first ``train_folds`` trained, the best ``keep_folds`` by
validation score kept). Each trained fold is a ``fit`` run in ``RUN/fold-K/`` (its
``state.pt``, ``metrics.csv``, ``learning_curve.png`` and best ``model.pt``); an epoch
visits every training graph once in a seeded order, one step per graph on
``configs_per_step`` of its configurations drawn without replacement (64 for
``default`` collections, 128 otherwise: 2.2.5), with the pairwise hinge loss (eq. 8),
AdamW (lr 1e-3, weight decay 1e-5 on non-bias weights), gradient-norm clipping at 1.0,
a linear warm-up over the first 5 % of the steps then one cosine cycle to 0 (2.4.2).
``max_steps`` caps each fold's steps (a budget that fits a CPU). After the folds,
``RUN/model.pt`` is the ensemble of the kept folds (``TGraphEnsemble``), which
``dagopt.rank.tgraph.predict`` averages with test-time augmentation (2.5.3).
Interrupted runs resume fold by fold, epoch by epoch; every randomness derives from
``(seed, fold, epoch)``.

``recipe="tpugraphs"`` trains instead as the official TpuGraphs baselines do
(``tpu_graphs/baselines/{layout,tiles}/train_args.py`` and ``train_lib.py``;
``TPUGRAPHS_RECIPE``): ListMLE (tile: with a small squared error), Adam at a constant
learning rate, each gradient tensor clipped to a norm of its own, a few configurations of
several graphs per step, and early stopping once validation has not improved for a set
number of epochs (the best epoch's model is kept either way). The K-fold split, the
ensemble and the inference are the same.
"""

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dagopt.configs import Config
from dagopt.errors import DagoptWarning, InputError
from dagopt.io.atomic import write_torch_atomic
from dagopt.io.tpugraphs import COLLECTIONS, SPLITS, collection_files, read_tpugraphs
from dagopt.nn.checkpoint import load_model, save_model
from dagopt.nn.tgraph.config import TGraphConfig
from dagopt.nn.tgraph.loss import check_pair_weights, pairwise_hinge_loss, tpugraphs_loss
from dagopt.nn.tgraph.ranker import TGraphEnsemble, TGraphRanker
from dagopt.rank.tgraph import (
    PreparedGraph,
    evaluate,
    fit_normalizers,
    normalize,
    prepare,
    record_kind,
)
from dagopt.train import rundir
from dagopt.train.loop import Progress, Trainer, batch_slices, fit

RECIPES = ("tgraph", "tpugraphs")


@dataclass(frozen=True)
class TpuGraphsRecipe:
    """How the official TpuGraphs baselines train one collection kind (their flag
    defaults): ``configs`` per graph and ``graphs`` per step, the per-tensor gradient
    ``clip_norm`` (Keras ``clipnorm``), ``early_stop`` epochs without a better validation
    score, ``epochs`` at most, and the loss: ListMLE at ``temperature`` plus
    ``mse_weight`` x the squared error, weights normalised."""

    configs: int
    graphs: int
    clip_norm: float
    early_stop: int
    epochs: int
    temperature: float
    mse_weight: float


TPUGRAPHS_RECIPE = {
    "layout": TpuGraphsRecipe(
        configs=16, graphs=8, clip_norm=1e-2, early_stop=40, epochs=500,
        temperature=1.0, mse_weight=0.0,
    ),
    "tile": TpuGraphsRecipe(
        configs=10, graphs=10, clip_norm=1e-3, early_stop=20, epochs=100,
        temperature=10.0, mse_weight=0.02,
    ),
}  # fmt: skip
"""``recipe="tpugraphs"``'s values: ``layout_train.py`` (Adam 1e-3, ``ListMLELoss()``) and
``tiles_train.py`` (Adam 1e-3, ``ListMLELoss(temperature=10):1,MSE:0.02``)."""
KERAS_ADAM_EPSILON = 1e-7


@dataclass(frozen=True)
class TGraphTrainConfig(Config):
    """Every knob of ``dagopt train tgraph``; JSON keys are the field names.

    Paper values (2.4): ``folds=20, train_folds=5, keep_folds=4``, hundreds of epochs;
    the defaults are smaller so a run fits a shared CPU. ``configs_per_step`` 0 means
    the paper's 64 (default collections) or 128 (random collections and tile).
    ``validation_permutations`` is the test-time augmentation used when validating a
    fold (1: one random order; inference uses 10). ``recipe`` is ``tgraph`` (2.4) or
    ``tpugraphs`` (the official baselines' training, ``TPUGRAPHS_RECIPE``: it sets the
    loss, optimizer, clipping, schedule and graphs per step, so ``warmup``,
    ``weight_decay``, ``grad_clip`` and ``pair_weights`` must keep their defaults;
    ``epochs`` is then a maximum, the recipe stopping early). ``pair_weights`` weighs
    eq. 8's pairs (``uniform``, the paper's; ``log-ratio``, beyond it: by their log
    runtime ratio, ``dagopt.nn.tgraph.loss.pairwise_hinge_loss``), a ``tgraph`` recipe
    option. ``companions`` (beyond the paper) names other collections of the same kind whose
    measurements of the primary collection's programs (same file name, same ``splits``)
    join every fold's training set, each in its namesake's fold (``companion_folds``);
    validation stays on the primary collection.
    """

    collection: str = "layout:xla:random"
    data: str = ""
    splits: tuple[str, ...] = ("train",)
    model: TGraphConfig = field(default_factory=TGraphConfig)
    epochs: int = 20
    max_steps: int = 0
    configs_per_step: int = 0
    lr: float = 1e-3
    warmup: float = 0.05
    weight_decay: float = 1e-5
    grad_clip: float = 1.0
    folds: int = 5
    train_folds: int = 2
    keep_folds: int = 2
    validation_permutations: int = 1
    seed: int = 0
    recipe: str = "tgraph"
    pair_weights: str = "uniform"
    companions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.collection not in COLLECTIONS:
            raise InputError(
                f"unknown collection {self.collection!r} (known: {', '.join(COLLECTIONS)})"
            )
        kind = self.collection.split(":")[0]
        if self.model.kind != kind:
            raise InputError(f"collection {self.collection} needs model kind {kind!r}")
        for other in self.companions:
            if other not in COLLECTIONS or other.split(":")[0] != kind or other == self.collection:
                raise InputError(
                    f"companion {other!r}: not another {kind} collection "
                    f"(known: {', '.join(COLLECTIONS)})"
                )
        if len(set(self.companions)) != len(self.companions):
            raise InputError("companions are named twice")
        if not self.splits:
            raise InputError(f"splits is empty: name one or more of {', '.join(SPLITS)}")
        for split in self.splits:
            if split not in SPLITS:
                raise InputError(f"unknown split {split!r} in splits (known: {', '.join(SPLITS)})")
        if len(set(self.splits)) != len(self.splits):
            raise InputError("splits names a split twice (its graphs would be trained twice)")
        if self.seed < 0:
            raise InputError("training option 'seed' must be >= 0")
        if not (self.folds >= 2 and 1 <= self.keep_folds <= self.train_folds <= self.folds):
            raise InputError("folds need 2 <= folds and 1 <= keep_folds <= train_folds <= folds")
        for name in ("epochs", "validation_permutations"):
            if int(getattr(self, name)) < 1:
                raise InputError(f"training option {name!r} must be >= 1")
        if self.max_steps < 0 or self.configs_per_step < 0 or self.configs_per_step == 1:
            raise InputError("max_steps must be >= 0 and configs_per_step 0 or >= 2")
        if not (
            self.lr > 0 and 0 <= self.warmup < 1 and self.weight_decay >= 0 and self.grad_clip > 0
        ):
            raise InputError(
                "training options need lr > 0, 0 <= warmup < 1, weight_decay >= 0, grad_clip > 0"
            )
        if self.recipe not in RECIPES:
            raise InputError(f"unknown recipe {self.recipe!r} ({', '.join(RECIPES)})")
        check_pair_weights(self.pair_weights)
        names = ("warmup", "weight_decay", "grad_clip", "pair_weights")
        changed = [n for n in names if _changed(self, n)]
        if self.recipe == "tpugraphs" and changed:
            raise InputError(
                f"recipe tpugraphs sets its own loss, optimizer, schedule and clipping: "
                f"leave {', '.join(changed)} at the default"
            )

    @property
    def official(self) -> TpuGraphsRecipe | None:
        """The official baselines' values with ``recipe="tpugraphs"``, else ``None``."""
        return TPUGRAPHS_RECIPE[self.model.kind] if self.recipe == "tpugraphs" else None

    @property
    def batch_configs(self) -> int:
        """Configurations per graph and step: ``configs_per_step``, else 64 / 128 (2.2.5;
        the ``tpugraphs`` recipe: 16 layout, 10 tile)."""
        if self.configs_per_step:
            return self.configs_per_step
        if self.official is not None:
            return self.official.configs
        return 64 if self.collection.endswith(":default") else 128

    @property
    def graphs_per_step(self) -> int:
        """Graphs per update: 1 (2.4), or the ``tpugraphs`` recipe's batch (8 / 10)."""
        return 1 if self.official is None else self.official.graphs


def _changed(config: TGraphTrainConfig, name: str) -> bool:
    return getattr(config, name) != TGraphTrainConfig.__dataclass_fields__[name].default


@dataclass(frozen=True)
class TGraphEpoch:
    fold: int
    epoch: int
    steps: int
    train_loss: float
    validation_score: float
    best_validation_score: float
    lr: float
    seconds: float


def load_graphs(
    data: str | Path, collection: str, splits: Sequence[str], *, deduplicate: bool = True
) -> list[PreparedGraph]:
    """Every file of ``collection`` in ``splits`` under ``data``, prepared, less those
    with nothing to rank (``rankable_graphs``); each must be of the collection's kind."""
    paths = [p for split in splits for p in collection_files(data, collection, split)]
    if not paths:
        raise InputError(f"{data}: no .npz files for {collection} in {', '.join(splits)}")
    kind = collection.split(":")[0]
    graphs = []
    for path in paths:
        record = read_tpugraphs(path)
        if record_kind(record) != kind:
            raise InputError(
                f"{path}: a {record_kind(record)} file in {kind} collection {collection}"
            )
        graphs.append(prepare(record, deduplicate=deduplicate))
    return rankable_graphs(graphs, [path.name for path in paths], collection)


def rankable_graphs(
    graphs: Sequence[PreparedGraph], names: Sequence[str], collection: str
) -> list[PreparedGraph]:
    """``graphs`` (of ``collection``, known to the user as ``names``) less those with
    nothing to rank: fewer than two configurations (duplicates removed) or one runtime
    for all, which give training no pair and Kendall's tau no value. The TpuGraphs
    baselines drop them too (``min_train_configs``); a ``DagoptWarning`` names them. A
    graph without runtimes, or none left, is an ``InputError``."""
    kept, left_out = [], []
    for graph, name in zip(graphs, names, strict=True):
        if graph.runtimes is None:
            raise InputError(f"{name}: training needs runtimes (is this a test split?)")
        if graph.num_configs >= 2 and np.ptp(graph.runtimes) > 0:
            kept.append(graph)
        else:
            left_out.append(name)
    why = "fewer than 2 configurations with different runtimes"
    if not kept:
        raise InputError(f"{collection}: nothing to rank: all {len(graphs)} graphs have {why}")
    if left_out:
        listed = ", ".join(left_out[:5]) + (", ..." if len(left_out) > 5 else "")
        warnings.warn(
            f"{collection}: left out {len(left_out)} of {len(graphs)} graphs with {why} "
            f"(nothing to rank): {listed}",
            DagoptWarning,
            stacklevel=2,
        )
    return kept


def fold_of(graphs: Sequence[PreparedGraph], folds: int, seed: int) -> np.ndarray:
    """Each graph's fold: graphs sorted by name, shuffled by ``seed``, dealt round-robin
    (2.4.3: configurations of one graph never straddle train and validation)."""
    order = np.argsort([g.name for g in graphs], kind="stable")
    shuffled = order[np.random.default_rng(seed).permutation(len(graphs))]
    fold = np.empty(len(graphs), dtype=np.int64)
    fold[shuffled] = np.arange(len(graphs)) % folds
    return fold


def companion_folds(
    graphs: Sequence[PreparedGraph], fold: np.ndarray, companions: Sequence[PreparedGraph]
) -> tuple[list[PreparedGraph], np.ndarray]:
    """The ``companions`` that measure one of ``graphs``' programs (same name) and the
    fold of each, its namesake's: a program validated in fold k is trained on in no
    collection in fold k. A companion graph without a namesake is left out."""
    fold_by_name = {g.name: int(f) for g, f in zip(graphs, fold, strict=True)}
    shared = [c for c in companions if c.name in fold_by_name]
    return shared, np.array([fold_by_name[c.name] for c in shared], dtype=np.int64)


def load_companions(
    config: TGraphTrainConfig, graphs: Sequence[PreparedGraph], fold: np.ndarray
) -> tuple[list[PreparedGraph], np.ndarray]:
    """``config.companions``' graphs of the primary programs in ``config.splits``, with
    their folds (``companion_folds``); an error if a companion shares no program."""
    shared, folds = [], []
    for other in config.companions:
        found, found_folds = companion_folds(
            graphs, fold, load_graphs(config.data, other, config.splits)
        )
        if not found:
            raise InputError(
                f"companion {other} measures none of the {config.collection} programs "
                f"in {', '.join(config.splits)}"
            )
        shared += found
        folds.append(found_folds)
    return shared, np.concatenate(folds) if folds else np.zeros(0, dtype=np.int64)


def training_graphs(
    config: TGraphTrainConfig, graphs: Sequence[PreparedGraph] | None = None
) -> tuple[Sequence[PreparedGraph], np.ndarray, list[PreparedGraph], np.ndarray]:
    """The primary collection's graphs (``graphs`` less those with nothing to rank, else
    read from ``config.data``) with their folds (``fold_of``), then the companions' with
    theirs (``load_companions``)."""
    if graphs is None:
        if not config.data:
            raise InputError("--data is required for a new run (the folder that holds npz/)")
        graphs = load_graphs(config.data, config.collection, config.splits)
    else:
        graphs = rankable_graphs(graphs, [g.name for g in graphs], config.collection)
    fold = fold_of(graphs, config.folds, config.seed)
    return graphs, fold, *load_companions(config, graphs, fold)


def fold_sets(
    config: TGraphTrainConfig,
    primary: Sequence[PreparedGraph],
    fold: np.ndarray,
    companions: Sequence[PreparedGraph],
    companion_fold: np.ndarray,
) -> list[tuple[list[PreparedGraph], list[PreparedGraph]]]:
    """The training and validation graphs of each trained fold k, of ``training_graphs``'
    graphs and folds: every graph outside fold k, companions included, and the primary
    collection's in it. An error names the first fold left without either."""
    everything = [*primary, *companions]
    every_fold = np.concatenate([fold, companion_fold])
    sets = []
    for k in range(config.train_folds):
        train = [g for g, f in zip(everything, every_fold, strict=True) if f != k]
        validation = [g for g, f in zip(primary, fold, strict=True) if f == k]
        if not validation:
            raise InputError(
                f"fold {k} would have no validation graph: {len(primary)} graphs of "
                f"{config.collection} fill fewer than {config.folds} folds (lower folds)"
            )
        if not train:
            raise InputError(f"fold {k} would have no training graph: it holds every graph")
        sets.append((train, validation))
    return sets


def warmup_cosine(total: int, warmup: float) -> Callable[[int], float]:
    """Learning-rate factor per step: linear warm-up over ``warmup * total`` steps, then
    one cosine cycle from 1 to 0 at ``total`` (2.4.2)."""
    ramp = max(1, round(warmup * total))

    def factor(step: int) -> float:
        if step < ramp:
            return (step + 1) / ramp
        return 0.5 * (1 + math.cos(math.pi * min(1.0, (step - ramp) / max(1, total - ramp))))

    return factor


def optimizer_for(model: torch.nn.Module, config: TGraphTrainConfig) -> torch.optim.Optimizer:
    """AdamW with weight decay on every parameter but the biases (2.4.2); the
    ``tpugraphs`` recipe: Keras' Adam (epsilon 1e-7, no weight decay)."""
    if config.official is not None:
        return torch.optim.Adam(model.parameters(), lr=config.lr, eps=KERAS_ADAM_EPSILON)
    decay = [p for n, p in model.named_parameters() if not n.endswith("bias")]
    plain = [p for n, p in model.named_parameters() if n.endswith("bias")]
    groups = [
        {"params": decay, "weight_decay": config.weight_decay},
        {"params": plain, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=config.lr)


def schedule_for(total: int, config: TGraphTrainConfig) -> Callable[[int], float]:
    """The learning-rate factor per step: ``warmup_cosine`` (2.4.2), or 1 throughout
    (the ``tpugraphs`` recipe)."""
    if config.official is not None:
        return _constant
    return warmup_cosine(total, config.warmup)


def _constant(step: int) -> float:
    return 1.0


def batch_loss(
    model: TGraphRanker,
    batch: Sequence[tuple[PreparedGraph, np.ndarray]],
    config: TGraphTrainConfig,
) -> torch.Tensor:
    """The mean over the batch's graphs of the recipe's loss on configurations ``index``
    of each: eq. 8 (with ``pair_weights``), or the ``tpugraphs`` recipe's
    ``tpugraphs_loss``."""
    official = config.official
    losses = []
    for graph, index in batch:
        scores = model(graph.tensors, graph.configs(index))
        runtimes = torch.as_tensor(graph.runtimes[index], dtype=scores.dtype)
        if official is None:
            losses.append(pairwise_hinge_loss(scores, runtimes, config.pair_weights))
        else:
            losses.append(
                tpugraphs_loss(scores, runtimes, official.temperature, official.mse_weight)
            )
    return torch.stack(losses).mean()


def train_step(
    model: TGraphRanker,
    optimizer: torch.optim.Optimizer,
    batch: Sequence[tuple[PreparedGraph, np.ndarray]],
    config: TGraphTrainConfig,
) -> float:
    """One update on ``batch`` (``(graph, configuration index)`` pairs), the gradient
    clipped to a norm of ``grad_clip`` (2.4.2) or, with the ``tpugraphs`` recipe, each
    tensor to its ``clip_norm``; returns the loss."""
    model.train()
    loss = batch_loss(model, batch, config)
    optimizer.zero_grad()
    loss.backward()
    if config.official is None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
    else:
        for parameter in model.parameters():
            torch.nn.utils.clip_grad_norm_(parameter, config.official.clip_norm)
    optimizer.step()
    return float(loss.detach())


class FoldTrainer(Trainer):
    """``fit``'s model-specific part for one fold."""

    row_type = TGraphEpoch
    ylabel = "loss / validation score"
    title = "TGraph fold training"

    def __init__(
        self,
        run_dir: Path,
        config: TGraphTrainConfig,
        model: TGraphRanker,
        train: Sequence[PreparedGraph],
        validation: Sequence[PreparedGraph],
        fold: int,
    ) -> None:
        self.run_dir, self.config, self.model, self.fold = run_dir, config, model, fold
        self.train, self.validation = list(train), list(validation)
        self.per_epoch = math.ceil(len(self.train) / config.graphs_per_step)
        planned = self.per_epoch * config.epochs
        self.total_steps = min(planned, config.max_steps) if config.max_steps else planned
        self.epochs = math.ceil(self.total_steps / self.per_epoch)
        self.optimizer = optimizer_for(model, config)
        self.schedule = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, schedule_for(self.total_steps, config)
        )
        self.steps = 0

    def start(self, progress: Progress | None) -> None:
        self.best = float("inf")

    def run_epoch(self, epoch: int, progress: Progress | None) -> TGraphEpoch:
        c = self.config
        rng = np.random.default_rng([c.seed, self.fold, epoch])
        torch.manual_seed(int(rng.integers(2**31)))
        losses = []
        order = rng.permutation(len(self.train))
        steps = list(batch_slices(order.size, c.graphs_per_step))[: self.total_steps - self.steps]
        for done, part in enumerate(steps, start=1):
            batch = []
            for g in order[part]:
                graph = self.train[g]
                count = min(c.batch_configs, graph.num_configs)
                batch.append((graph, rng.choice(graph.num_configs, count, replace=False)))
            losses.append(train_step(self.model, self.optimizer, batch, c))
            self.schedule.step()
            if progress is not None:
                progress(
                    f"fold {self.fold} epoch {epoch}: loss {np.mean(losses):.4f}", done, len(steps)
                )
        self.steps += len(steps)
        score = evaluate(
            self.model, self.validation, permutations=c.validation_permutations, seed=c.seed
        )
        value = -score if np.isfinite(score) else float("inf")
        if value < self.best or not (self.run_dir / rundir.MODEL_FILE).exists():
            self.best = min(self.best, value)
            meta = {
                "fold": self.fold,
                "epoch": epoch,
                "validation_score": score,
                "config": c.to_dict(),
            }
            save_model(self.run_dir / rundir.MODEL_FILE, self.model, meta)
        return TGraphEpoch(
            fold=self.fold,
            epoch=epoch,
            steps=self.steps,
            train_loss=float(np.mean(losses)) if losses else float("nan"),
            validation_score=score,
            best_validation_score=-self.best,
            lr=self.optimizer.param_groups[0]["lr"],
            seconds=0.0,
        )

    def stop_early(self, history: Sequence[TGraphEpoch]) -> bool:
        """The ``tpugraphs`` recipe's early stopping: ``early_stop`` epochs since the best
        validation score (``train_lib.py``: a later epoch only counts if it is better)."""
        if self.config.official is None or not history:
            return False
        scores = [
            m.validation_score if np.isfinite(m.validation_score) else -np.inf for m in history
        ]
        best = max(range(len(scores)), key=lambda i: (scores[i], -i))
        return len(history) - 1 - best >= self.config.official.early_stop

    def parts(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "optimizer": self.optimizer,
            "schedule": self.schedule,
            "counter": _Counter(self),
        }

    def curves(self, history: Sequence[TGraphEpoch]) -> dict[str, list[float]]:
        return {
            "train loss (eq. 8)": [m.train_loss for m in history],
            "validation score": [m.validation_score for m in history],
        }


class _Counter:
    """The fold's step count as a ``state.pt`` part."""

    def __init__(self, trainer: FoldTrainer) -> None:
        self.trainer = trainer

    def state_dict(self) -> dict[str, int]:
        return {"steps": self.trainer.steps}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.trainer.steps = int(state["steps"])


def read_metrics(run_dir: str | Path) -> list[TGraphEpoch]:
    """The epochs recorded in a fold's ``metrics.csv``."""
    return rundir.read_metrics(run_dir, TGraphEpoch)


def train_tgraph(
    run_dir: str | Path,
    config: TGraphTrainConfig | None = None,
    *,
    resume: bool = False,
    progress: Progress | None = None,
    on_epoch: Callable[[TGraphEpoch], None] | None = None,
    graphs: Sequence[PreparedGraph] | None = None,
) -> dict[int, float]:
    """Train the folds in ``run_dir`` (``resume`` continues); write ``RUN/model.pt``, the
    ensemble of the kept folds. ``graphs`` replaces reading the primary collection from
    ``config.data`` (tests). Returns each trained fold's best validation score."""
    run_dir = Path(run_dir)
    if not resume and config is not None:  # bad data or folds: no run left behind
        loaded = training_graphs(config, graphs)
        sets = fold_sets(config, *loaded)
    config = rundir.open_run(run_dir, config, resume=resume, config_type=TGraphTrainConfig)
    if resume:
        if rundir.load_state(run_dir).get("folds") != config.folds:  # the run's marker
            raise InputError(f"{run_dir / rundir.STATE_FILE}: not the marker of this run")
        loaded = training_graphs(config, graphs)
        sets = fold_sets(config, *loaded)
    else:  # marks the run: a new run here is refused, --resume accepted
        write_torch_atomic(run_dir / rundir.STATE_FILE, {"epoch": -1, "folds": config.folds})
    scores = {}
    for k, (train, validation) in enumerate(sets):
        torch.manual_seed(config.seed * 1000 + k)
        model = TGraphRanker(config.model)
        normalize(model, *fit_normalizers(train, config.model.numeric_features))
        fold_dir = run_dir / f"fold-{k}"
        fold_dir.mkdir(parents=True, exist_ok=True)
        trainer = FoldTrainer(fold_dir, config, model, train, validation, k)
        fit(
            fold_dir,
            trainer,
            trainer.epochs,
            resume=(fold_dir / rundir.STATE_FILE).exists(),
            progress=progress,
            on_epoch=on_epoch,
        )
        scores[k] = -trainer.best
    kept = sorted(scores, key=lambda k: -scores[k])[: config.keep_folds]
    models = [
        load_model(run_dir / f"fold-{k}" / rundir.MODEL_FILE, expected=TGraphRanker)[0]
        for k in kept
    ]
    meta = {
        "collection": config.collection,
        "data": str(config.data),
        "companion_graphs": len(loaded[2]),
        "kept_folds": kept,
        "fold_scores": {str(k): v for k, v in scores.items()},
        "config": config.to_dict(),
    }
    save_model(run_dir / rundir.MODEL_FILE, TGraphEnsemble.of(models), meta)
    return scores

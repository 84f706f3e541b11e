"""TGraph's data path and inference (paper 002, sections 2.2 and 2.5.3).

``prepare`` turns a TpuGraphs record into a ``PreparedGraph``: layout graphs pruned
(2.2.1), ``node_feat`` layout columns -1 padded (2.2.4), optionally de-duplicated
(2.2.2, training only: inference keeps the file's configuration indices), layouts kept
base-7 compressed and decompressed per sampled batch (2.2.3). ``fit_normalizers`` fits
2.2.5's standardisation on training graphs. ``predict`` is the inference mode of
2.5.3: configurations in batches of 128, ``permutations`` random orders (test-time
augmentation) scored and put back in file order, averaged over permutations and the
ensemble's folds. ``graph_scores`` and ``evaluate`` score graphs with
``dagopt.objectives.ranking``.
"""

import dataclasses
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from dagopt.errors import InputError
from dagopt.io.tpugraphs import (
    COLLECTIONS,
    LayoutRecord,
    TileRecord,
    read_tpugraphs,
)
from dagopt.models import model_path
from dagopt.nn.checkpoint import load_model
from dagopt.nn.tgraph.features import (
    GraphTensors,
    graph_tensors,
    layout_configs,
    numeric_features,
    scaled,
    tile_configs,
)
from dagopt.nn.tgraph.ranker import TGraphEnsemble, TGraphRanker
from dagopt.objectives.ranking import kendall_tau, tile_metric
from dagopt.progress import report
from dagopt.rank.preprocess import (
    FeatureNormalizer,
    compress_layout_configs,
    decompress_layout_configs,
    deduplicate_configs,
    pad_layout_with_minus_one,
    prune_layout,
)

INFERENCE_BATCH = 128  # section 2.5.3
TTA_PERMUTATIONS = 10  # section 2.5.3


def record_kind(record: TileRecord | LayoutRecord) -> str:
    """``"layout"`` or ``"tile"``."""
    return "layout" if isinstance(record, LayoutRecord) else "tile"


@dataclass(frozen=True, eq=False)
class PreparedGraph:
    """A pre-processed graph: shared ``tensors``, its configurations (``codes``: base-7
    layouts ``(c, nc, 3)``; ``tile``: ``config_feat``), ``runtimes`` (the target, or
    ``None``) and ``kept``, the file's index of each configuration."""

    name: str
    kind: str
    tensors: GraphTensors
    codes: np.ndarray | None
    tile: np.ndarray | None
    runtimes: np.ndarray | None
    kept: np.ndarray

    @property
    def num_configs(self) -> int:
        return int(self.kept.size)

    def configs(self, index: np.ndarray) -> torch.Tensor:
        """The model input of configurations ``index`` (decompressed on the fly)."""
        if self.codes is not None:
            return layout_configs(decompress_layout_configs(self.codes[index]))
        return tile_configs(self.tile[index])


def preprocessed(record: TileRecord | LayoutRecord) -> TileRecord | LayoutRecord:
    """Pruned (layout) and -1 padded: what the model sees of a record's graph."""
    if isinstance(record, LayoutRecord):
        record, _ = prune_layout(record)
    return dataclasses.replace(record, node_feat=pad_layout_with_minus_one(record.node_feat))


def prepare(record: TileRecord | LayoutRecord, *, deduplicate: bool = False) -> PreparedGraph:
    """The record as a ``PreparedGraph`` (module docstring)."""
    record = preprocessed(record)
    kept = np.arange(record.num_configs)
    if deduplicate:
        record, kept = deduplicate_configs(record)
    layout = isinstance(record, LayoutRecord)
    runtimes = record.config_runtime if layout else record.normalized_runtime
    return PreparedGraph(
        name=record.name,
        kind=record_kind(record),
        tensors=graph_tensors(record),
        codes=compress_layout_configs(record.node_config_feat) if layout else None,
        tile=None if layout else np.array(record.config_feat, dtype=np.float32),
        runtimes=None if runtimes is None else np.asarray(runtimes, dtype=np.float64),
        kept=kept,
    )


def fit_normalizers(
    graphs: Sequence[PreparedGraph], numeric: str = "raw"
) -> tuple[FeatureNormalizer, FeatureNormalizer | None]:
    """Section 2.2.5's standardisation fitted on ``graphs`` (training graphs only):
    ``node_feat[:134]`` (as ``numeric_features(.., numeric)`` gives it) and, for tile
    graphs, ``config_feat`` (as ``scaled(.., numeric)`` gives it)."""
    feat = FeatureNormalizer.fit(
        numeric_features(g.tensors.node_feat, numeric).numpy() for g in graphs
    )
    tiles = [scaled(torch.as_tensor(g.tile), numeric).numpy() for g in graphs if g.tile is not None]
    return feat, FeatureNormalizer.fit(tiles) if tiles else None


def normalize(model: TGraphRanker, feat: FeatureNormalizer, config: FeatureNormalizer | None):
    """Copy fitted normalisers into ``model``'s buffers."""
    model.set_normalizers(
        (feat.mean, feat.scale), None if config is None else (config.mean, config.scale)
    )


def _members(model: TGraphRanker | TGraphEnsemble) -> list[TGraphRanker]:
    return list(model.members) if isinstance(model, TGraphEnsemble) else [model]


def check_kind(model: TGraphRanker | TGraphEnsemble, graph: PreparedGraph) -> None:
    """A layout model ranks layout graphs, a tile model tile graphs."""
    kind = _members(model)[0].config.kind
    if kind != graph.kind:
        raise InputError(f"{graph.name}: a {graph.kind} graph, but the model ranks {kind} graphs")


@torch.no_grad()
def predict(
    model: TGraphRanker | TGraphEnsemble,
    graph: PreparedGraph,
    *,
    permutations: int = TTA_PERMUTATIONS,
    batch: int = INFERENCE_BATCH,
    seed: int = 0,
) -> np.ndarray:
    """Scores of every configuration of ``graph`` (lower = predicted faster), section
    2.5.3: for each of ``permutations`` seeded random orders, the configurations are
    split into near-equal batches of at most ``batch``, scored, put back in order; the
    scores are averaged over permutations and ensemble members. Where one batch holds
    every configuration (``num_configs <= batch``: a tile kernel's 64, say) the orders
    cannot change what the model sees: each layer but eq. 6 works per configuration and
    eq. 6's softmax over the configurations is equivariant to their order, so every
    permutation gives the same scores (up to float rounding) and one is scored."""
    if permutations < 1 or batch < 1:
        raise InputError("permutations and batch must be >= 1")
    check_kind(model, graph)
    c = graph.num_configs
    if c == 0:
        raise InputError(f"{graph.name}: no configurations to rank")
    rng = np.random.default_rng(seed)
    orders = [rng.permutation(c) for _ in range(permutations)]
    members = _members(model)
    chunks = -(-c // batch)
    if chunks == 1:
        orders = orders[:1]
    batches = [
        (member, chunk)
        for member in members
        for order in orders
        for chunk in np.array_split(order, chunks)
    ]
    total = np.zeros(c)
    for member in members:
        member.eval()
    for done, (member, chunk) in enumerate(batches):
        report(f"{graph.name}: scoring configurations", done, len(batches))
        total[chunk] += member(graph.tensors, graph.configs(chunk)).double().numpy()
    return total / (len(members) * len(orders))


def graph_scores(
    model: TGraphRanker | TGraphEnsemble,
    graphs: Sequence[PreparedGraph],
    *,
    permutations: int = TTA_PERMUTATIONS,
    seed: int = 0,
) -> np.ndarray:
    """Each labelled graph's metric: ``kendall_tau`` (layout, eq. 9) or ``tile_metric``
    (tile, eq. 10) of ``model``'s predicted scores."""
    if not graphs:
        raise InputError("no graphs to evaluate")
    if any(g.runtimes is None for g in graphs):
        raise InputError("evaluation needs labelled graphs (a test split has no runtimes)")
    metric = kendall_tau if graphs[0].kind == "layout" else tile_metric
    return np.array(
        [
            metric(predict(model, g, permutations=permutations, seed=seed), g.runtimes)
            for g in graphs
        ]
    )


def evaluate(
    model: TGraphRanker | TGraphEnsemble,
    graphs: Sequence[PreparedGraph],
    *,
    permutations: int = TTA_PERMUTATIONS,
    seed: int = 0,
) -> float:
    """The collection score (as ``layout_score`` / ``tile_score``: the mean over graphs
    of ``graph_scores``) of ``model`` on labelled ``graphs``."""
    return float(np.mean(graph_scores(model, graphs, permutations=permutations, seed=seed)))


def load_ranker(path: str | os.PathLike) -> TGraphRanker | TGraphEnsemble:
    """A ``tgraph-ensemble`` file (what ``dagopt train tgraph`` writes as ``model.pt``)
    or a single ``tgraph`` model file (a fold's ``model.pt``)."""
    return _load_ranker_and_meta(path)[0]


def _load_ranker_and_meta(path: str | os.PathLike) -> tuple[TGraphRanker | TGraphEnsemble, dict]:
    if Path(path).is_dir():
        raise InputError(f"{path}: is a directory, not a model file (a run's is RUN/model.pt)")
    try:
        return load_model(path, expected=TGraphEnsemble)
    except InputError as first:
        try:
            return load_model(path, expected=TGraphRanker)
        except InputError:
            raise first from None


def recorded_collections(meta: dict) -> set[str]:
    """The collections a model file's ``meta`` says its members were trained on: a run's
    ``collection``, a fold's ``config.collection``, a merged file's sources' (empty when
    the file records none)."""
    if isinstance(meta.get("merged_from"), list):
        return set().union(
            *(recorded_collections(s["meta"]) for s in meta["merged_from"] if _is_source(s))
        )
    config = meta.get("config")
    collection = meta.get(
        "collection", config.get("collection") if isinstance(config, dict) else None
    )
    return {collection} if isinstance(collection, str) else set()


def _is_source(source: object) -> bool:
    """A ``merged_from`` entry: ``{"path": ..., "meta": {...}}``."""
    return isinstance(source, dict) and isinstance(source.get("meta"), dict)


def _fingerprint(member: TGraphRanker) -> str:
    """A digest of the member's weights and buffers: equal for copies of one member."""
    digest = hashlib.sha256()
    for name, tensor in sorted(member.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def merge_rankers(paths: Sequence[str | os.PathLike]) -> tuple[TGraphEnsemble, dict]:
    """One ensemble of every member of the model files ``paths`` (runs of one recipe with
    other seeds, say: each seed draws its own K-fold split), and the meta that names
    them. ``predict`` averages over all members, as over one run's kept folds (section
    2.5.3). Members must share one configuration (``TGraphEnsemble.of`` checks) and one
    recorded collection; a file named twice, or a member in two files (a run and one of
    its folds), is refused: it would count twice."""
    if len(paths) < 2:
        raise InputError("merging needs at least two model files")
    _check_distinct_files(paths)
    loaded = [_load_ranker_and_meta(path) for path in paths]
    _check_one_collection(paths, [recorded_collections(meta) for _, meta in loaded])
    _check_distinct_members(paths, [_members(model) for model, _ in loaded])
    members = [member for model, _ in loaded for member in _members(model)]
    sources = [
        {"path": str(path), "meta": meta} for path, (_, meta) in zip(paths, loaded, strict=True)
    ]
    return TGraphEnsemble.of(members), {"merged_from": sources}


def _check_distinct_files(paths: Sequence[str | os.PathLike]) -> None:
    """No file is named twice (compared as resolved paths)."""
    seen: dict[Path, int] = {}
    for i, path in enumerate(paths):
        earlier = seen.setdefault(Path(path).resolve(), i)
        if earlier != i:
            also = "" if str(paths[earlier]) == str(path) else f" (also as {paths[earlier]})"
            raise InputError(f"{path}: named twice{also}; each model counts once")


def _check_one_collection(paths: Sequence[str | os.PathLike], collections: list[set[str]]) -> None:
    """The files' recorded ``collections`` (none recorded: any) are one collection."""
    if len(set().union(*collections)) > 1:
        named = [
            f"{path} ({', '.join(sorted(c))})"
            for path, c in zip(paths, collections, strict=True)
            if c
        ]
        raise InputError(f"models of different collections: {'; '.join(named)}")


def _check_distinct_members(
    paths: Sequence[str | os.PathLike], members: list[list[TGraphRanker]]
) -> None:
    """No member (compared by its weights) is in two of the files."""
    owner: dict[str, int] = {}
    for i, held in enumerate(members):
        for member in held:
            first = owner.setdefault(_fingerprint(member), i)
            if first != i:
                raise InputError(
                    f"{paths[first]} and {paths[i]} hold the same member (a run and one of "
                    "its folds?); each member counts once"
                )


def check_collection(collection: str) -> None:
    """``collection`` is one of ``COLLECTIONS``."""
    if collection not in COLLECTIONS:
        raise InputError(
            f"unknown collection {collection!r} (choose from {', '.join(COLLECTIONS)})"
        )


def shipped_model_name(collection: str) -> str:
    """The name (``dagopt.models.MODEL_FILES``) of the model shipped for a measured
    collection: ``tgraph-`` and the collection with dashes, e.g.
    ``tgraph-layout-xla-random`` (how they were trained: checkpoints/README.md)."""
    check_collection(collection)
    return "tgraph-" + collection.replace(":", "-")


@dataclass(frozen=True)
class RankInput:
    """What ``open_ranking`` checked: the file's ``record``, its ``graph`` as the model
    sees it, the ``model`` and the ``collection`` (``None``: a layout file ranked with
    a model alone)."""

    record: TileRecord | LayoutRecord
    graph: PreparedGraph
    model: TGraphRanker | TGraphEnsemble
    collection: str | None


def open_ranking(
    path: str | os.PathLike,
    *,
    model: str | os.PathLike | None = None,
    collection: str | None = None,
    loaded: dict[str, tuple[TGraphRanker | TGraphEnsemble, dict]] | None = None,
) -> RankInput:
    """Read a TpuGraphs file and its model and check that they go together, before any
    inference. ``model``: a model file; without one, the model shipped for
    ``collection`` (a tile file's is ``tile:xla``; a layout file needs the collection,
    since the file does not say which search made its configurations). A model that
    records its collection must be of ``collection``; without ``collection``, a model
    that records one collection of the file's kind gives it. ``loaded``: the model files
    read so far, by path, kept across calls so that ranking many files reads each
    model file once."""
    if collection is not None:
        check_collection(collection)
    record = read_tpugraphs(path)
    kind = record_kind(record)
    if collection is None and kind == "tile":
        collection = "tile:xla"
    if collection is not None and collection.split(":")[0] != kind:
        raise InputError(f"{path} is a {kind} graph, not one of collection {collection}")
    if model is None:
        if collection is None:
            raise InputError(
                f"{path} is a layout graph: pass --collection (layout:xla:random, ...) to "
                "use the model shipped for it, or --model"
            )
        model = model_path(shipped_model_name(collection))
    loaded = {} if loaded is None else loaded
    if str(model) not in loaded:
        loaded[str(model)] = _load_ranker_and_meta(model)
    ranker, meta = loaded[str(model)]
    graph = prepare(record)
    check_kind(ranker, graph)
    recorded = recorded_collections(meta)
    if collection is not None and recorded and recorded != {collection}:
        raise InputError(
            f"{model} is a model of {', '.join(sorted(recorded))}, not of collection {collection}"
        )
    if collection is None and len(recorded) == 1 and next(iter(recorded)).startswith(kind):
        (collection,) = recorded
    return RankInput(record, graph, ranker, collection)


def rank_file(
    path: str | os.PathLike,
    *,
    model: str | os.PathLike | None = None,
    collection: str | None = None,
    permutations: int = TTA_PERMUTATIONS,
    seed: int = 0,
) -> tuple[TileRecord | LayoutRecord, np.ndarray]:
    """Score every configuration of a TpuGraphs file (``open_ranking`` picks and checks
    the model); returns the record and the scores in the file's configuration order."""
    ranking = open_ranking(path, model=model, collection=collection)
    scores = predict(ranking.model, ranking.graph, permutations=permutations, seed=seed)
    return ranking.record, scores

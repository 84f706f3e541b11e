"""``dagopt generate configs``: measure a collection and write it as TpuGraphs files.

Collections and their folders (``dagopt.io.tpugraphs.collection_dir``): ``tile``
(``npz/tile/xla``), ``layout-xla`` and ``layout-nlp`` with variant ``random`` or
``default`` (``npz/layout/{xla,nlp}/{variant}``). Graphs are split by architecture
(``SPLITS``): every graph of a zoo model lands in that model's split, so the valid and
test splits hold architectures the training split never saw.

A graph whose ``.npz`` exists is skipped (resume); each new graph is measured (protocol:
``dagopt.integrations.tvm.measure``), its figures added to the collection's sidecar
``measurements.json`` (retest tau, spread, load, ...; the ``.npz`` files keep exactly
the published arrays) and then its ``.npz`` written, both atomically. Graphs are taken
round-robin over the architectures, so a partial run covers every split.

``--extra`` (issue 20) measures more training architectures (``EXTRA_MODELS``) in a
plan of their own, so the original plan, and with it every file it wrote, stays as it
was; their graphs land in ``train`` (``SPLITS`` does not name them).
"""

import json
import os
from dataclasses import dataclass
from pathlib import Path

from dagopt.errors import InputError
from dagopt.io.atomic import write_text_atomic
from dagopt.io.tpugraphs import collection_dir, write_tpugraphs
from dagopt.progress import report

KINDS = ("tile", "layout-xla", "layout-nlp")
VARIANTS = ("random", "default")
CNNS = ("resnet-50", "inception-v3", "mobilenet-v2", "convnext-tiny")
TRANSFORMERS = (
    "bert-base", "gpt2", "llama-small", "whisper-tiny-encoder", "t5-small", "vit-base", "swin-tiny"
)  # fmt: skip
SPLITS = {
    "tile": {"valid": ("mobilenet-v2", "t5-small"), "test": ("convnext-tiny", "swin-tiny")},
    "layout-xla": {"valid": ("mobilenet-v2",), "test": ("convnext-tiny",)},
    "layout-nlp": {"valid": ("t5-small",), "test": ("vit-base", "swin-tiny")},
}
"""Held-out architectures per collection kind; every other model is ``train``."""
MODELS = {"tile": CNNS + TRANSFORMERS, "layout-xla": CNNS, "layout-nlp": TRANSFORMERS}
"""The architectures each collection kind measures (``EXTRA_MODELS`` with ``--extra``)."""
EXTRA_CNNS = ("densenet-121", "googlenet", "squeezenet-1.1", "randwire-ws16-3")
EXTRA_MODELS = {
    "tile": (*EXTRA_CNNS, "mobilevit-small"),
    "layout-xla": EXTRA_CNNS,
    "layout-nlp": ("mobilevit-small",),
}
"""Training architectures added by ``--extra`` (issue 20): zoo CNNs with groups-1 convs
(EfficientNet-B0's convs pad by name, which ``zoo_shapes`` skips) and MobileViT-S,
whose attention has the equal in/out projections ``nlp`` graphs need."""
EXTRA_SEED = 1000
"""Offset of the ``--extra`` plan's seeds, so its configurations are drawn afresh."""
DEFAULT_GRAPHS = {"tile": 55, "layout-xla": 40, "layout-nlp": 40}
DEFAULT_CONFIGS = {"tile": 64, "layout-xla": 200, "layout-nlp": 200}
SIDECAR = "measurements.json"


@dataclass(frozen=True)
class BuildOptions:
    """What to measure: ``graphs`` and ``configs`` per graph (``None``: the defaults),
    interleaved ``rounds``, the MAC budget of one graph, the seed, the pinned core and
    whether to plan the ``EXTRA_MODELS`` instead of the original architectures."""

    graphs: int | None = None
    configs: int | None = None
    rounds: int = 10
    max_macs: int = 2_000_000
    seed: int = 0
    core: int | None = None
    extra: bool = False


def collection_name(kind: str, variant: str) -> str:
    """The TpuGraphs collection (``tile:xla``, ``layout:nlp:random``, ...)."""
    if kind not in KINDS:
        raise InputError(f"unknown collection {kind!r} ({', '.join(KINDS)})")
    if variant not in VARIANTS:
        raise InputError(f"unknown variant {variant!r} ({', '.join(VARIANTS)})")
    if kind == "tile":
        return "tile:xla"
    return f"layout:{kind.removeprefix('layout-')}:{variant}"


def split_of(kind: str, model: str) -> str:
    """The split of a zoo model's graphs in a collection kind."""
    for split, models in SPLITS[kind].items():
        if model in models:
            return split
    return "train"


def _round_robin(per_model: dict[str, list]) -> list:
    """The first item of every list, then every second item, ... (exhausted lists skipped)."""
    lists = list(per_model.values())
    depth = max((len(x) for x in lists), default=0)
    return [x[i] for i in range(depth) for x in lists if i < len(x)]


def plan_graphs(kind: str, root: Path, options: BuildOptions) -> list[tuple[str, object]]:
    """``(model, graph)`` pairs of a collection kind, round-robin over the models."""
    from dagopt.rank.configs.layout import nlp_graph, xla_graph
    from dagopt.rank.configs.tile import model_kernels
    from dagopt.rank.configs.zoo_shapes import zoo_layers

    models = (EXTRA_MODELS if options.extra else MODELS)[kind]
    layers = zoo_layers(list(models), root / "zoo_shapes.json")
    total = options.graphs or DEFAULT_GRAPHS[kind]
    per_model: dict[str, list] = {}
    for model in models:
        if kind == "tile":
            items = model_kernels(layers[model], -(-total // len(models)) + 1, options.max_macs)
        elif kind == "layout-xla":
            convs = [x for x in layers[model] if x.kind == "conv2d"]
            items = [
                xla_graph(x, convs[min(i + 1, len(convs) - 1)].cout, options.max_macs)
                for i, x in enumerate(convs)
            ]
        else:
            items = [
                nlp_graph(x, heads, x.side // shrink, options.max_macs)
                for x in layers[model]
                for heads in (1, 2)
                for shrink in (1, 2, 4)
            ]
        unique = {_graph_name(model, g): g for g in items if g is not None}
        per_model[model] = [(model, g) for g in unique.values()]
    return _round_robin(per_model)[:total]


def _graph_name(model: str, graph) -> str:
    return graph.name if hasattr(graph, "ops") else f"{model}.{graph.name()}"


def _read_sidecar(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: unreadable measurement sidecar ({exc})") from None


def build_collection(
    root: str | os.PathLike, kind: str, variant: str, options: BuildOptions
) -> list[Path]:
    """Measure and write the missing graphs of one collection; returns the new files."""
    from dagopt.integrations.tvm import require_tvm
    from dagopt.integrations.tvm.measure import pin_to_core

    collection = collection_name(kind, variant)
    require_tvm()
    allowed = os.sched_getaffinity(0)
    core = pin_to_core(options.core)
    try:
        return _build(Path(root), kind, collection, options, core)
    finally:
        os.sched_setaffinity(0, allowed)


def _build(root: Path, kind: str, collection: str, options: BuildOptions, core: int) -> list[Path]:
    variant = collection.rsplit(":", 1)[-1]
    graphs = plan_graphs(kind, root, options)
    sidecar = collection_dir(root, collection, "train").parent / SIDECAR
    figures = _read_sidecar(sidecar)
    written = []
    for done, (model, graph) in enumerate(graphs):
        report(f"measuring {collection}", done, len(graphs))
        name = _graph_name(model, graph)
        split = split_of(kind, model)
        path = collection_dir(root, collection, split) / f"{name}.npz"
        if path.exists():
            continue
        seed = options.seed + done + (EXTRA_SEED if options.extra else 0)
        count = options.configs or DEFAULT_CONFIGS[kind]
        record, measurement, extra = _measure(kind, variant, graph, name, count, options, seed)
        figures[name] = {
            "model": model,
            "split": split,
            "core": core,
            **measurement.summary(),
            **extra,
        }
        write_text_atomic(sidecar, json.dumps(figures, indent=1, sort_keys=True) + "\n")
        written.append(write_tpugraphs(record, path, compressed=True))
    report(f"measuring {collection}", len(graphs), len(graphs))
    return written


def _measure(kind, variant, graph, name, count, options, seed):
    if kind == "tile":
        from dagopt.rank.configs.tile import measure_tile_kernel, tile_record

        tilings, measurement, error = measure_tile_kernel(
            graph, count, rounds=options.rounds, seed=seed
        )
        runtime = measurement.runtime_ns
        record = tile_record(graph, tilings, runtime[:-1], int(runtime[-1]), name)
        tiled = runtime[:-1] / runtime[-1]
        extra = {
            "default_ns": int(runtime[-1]),
            "best_speedup": round(float(1 / tiled.min()), 3),
            "max_abs_error": error,
        }
        return record, measurement, extra
    from dagopt.rank.configs.layout import layout_record, measure_layout_graph

    configs, measurement = measure_layout_graph(
        graph, variant, count, rounds=options.rounds, seed=seed
    )
    record = layout_record(graph, configs, measurement.runtime_ns)
    return record, measurement, {"default_is_first": bool(configs[0] == graph.default_config())}

"""``dagopt generate configs``: measure a collection and write it as TpuGraphs files.

Collections and their folders (``dagopt.io.tpugraphs.collection_dir``): ``tile``
(``npz/tile/xla``), ``layout-xla`` and ``layout-nlp`` with variant ``random`` or
``default`` (``npz/layout/{xla,nlp}/{variant}``). Graphs are split by architecture
(``SPLITS``): every graph of a zoo model lands in that model's split, so the valid and
test splits hold architectures the training split never saw.

A graph whose ``.npz`` exists is skipped (resume); each new graph is measured (protocol:
``dagopt.integrations.tvm.measure``), its figures added to the collection's sidecar
``measurements.json`` (retest tau, spread, load, the machine, ...; the ``.npz`` files keep exactly
the published arrays) and then its ``.npz`` written, both atomically. Graphs are taken
round-robin over the architectures, so a partial run covers every split.

``--extra`` (issue 20) measures more training architectures (``EXTRA_MODELS``) in a
plan of their own, so the original plan, and with it every file it wrote, stays as it
was; their graphs land in ``train`` (``SPLITS`` does not name them). Later waves of
them (``--extra-wave N``, ``EXTRA_WAVES``) are plans of their own again.

``--lengths`` (issue 20) measures attention programs (``layout-nlp``; tile: dense
kernels of the linear layers) of the train and valid transformers at sequence lengths
drawn uniformly from ``LENGTH_RANGE``, and (``layout-xla``) convolution programs of the
train and valid CNNs at input sides drawn from the same range, in a plan of its own: the
zoo's inputs give powers of two, which the vectorised minor dimension always divides,
while real inputs have any length (a ViT's class token makes 197) or image size. The
test architectures get none, so the test split is unchanged; valid's architecture gets
its share.

``--check`` (issue 20) measures the check architectures (``CHECK_MODELS``), which no
shipped model trains on, into the test split of a dataset root of their own
(``datasets/configs-check``): a second held-out set on which the claims made on the
test split are measured again. With ``--lengths`` their programs are at drawn lengths.
"""

import json
import os
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from dagopt.errors import InputError
from dagopt.io.atomic import write_text_atomic
from dagopt.io.tpugraphs import collection_dir, write_tpugraphs
from dagopt.progress import report
from dagopt.zoo import models as zoo_models

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
PATCH_MODELS = tuple(model.name for model in zoo_models.PATCH_EMBEDDING_MODELS)
CONV_SHAPE_MODELS = tuple(model.name for model in zoo_models.CONV_SHAPE_MODELS)
SIZE_VARIANT_MODELS = tuple(model.name for model in zoo_models.SIZE_VARIANT_MODELS)
HGNET_V2_MODELS = tuple(model.name for model in zoo_models.HGNET_V2_MODELS)
EXTRA_WAVES = (
    EXTRA_MODELS,
    {"tile": PATCH_MODELS, "layout-xla": PATCH_MODELS, "layout-nlp": ()},
    {"tile": CONV_SHAPE_MODELS, "layout-xla": CONV_SHAPE_MODELS, "layout-nlp": ()},
    {"tile": SIZE_VARIANT_MODELS, "layout-xla": SIZE_VARIANT_MODELS, "layout-nlp": ()},
    {"tile": (), "layout-xla": HGNET_V2_MODELS, "layout-nlp": ()},
)
"""The training architectures of ``--extra-wave 1, 2, ...``: wave 2 (issue 20) holds
vision transformers whose convolutions have stride = window (``dagopt.zoo.models.
PATCH_EMBEDDING_MODELS``), a kind of layer no earlier training architecture had; wave 3
(issue 20, ``xla``; tile's kernels measured, not shipped) CNN and hybrid backbones whose
convolutions have channel counts and windows no earlier one had (``dagopt.zoo.models.
CONV_SHAPE_MODELS``); wave 4 (issue 20, likewise) other published sizes of wave 3's
families, again with new convolution shapes (``dagopt.zoo.models.SIZE_VARIANT_MODELS``); wave 5
(issue 20, ``xla`` only) a CNN family of new convolution shapes, PP-HGNetV2 B0-B6
(``dagopt.zoo.models.HGNET_V2_MODELS``)."""
EXTRA_SEEDS = (1000, 3000, 4000, 5000, 6000)
"""Offset of each extra wave's seeds, so its configurations are drawn afresh."""
LENGTHS_SEED = 2000
"""Offset of the ``--lengths`` plan's seeds (its configurations and drawn lengths)."""
CHECK_MODELS = {
    "tile": (),
    "layout-xla": HGNET_V2_MODELS,
    "layout-nlp": tuple(model.name for model in zoo_models.CHECK_TRANSFORMERS),
}
"""The architectures of ``--check``: transformers of attention shapes no ``nlp``
architecture has (``dagopt.zoo.models.CHECK_TRANSFORMERS``) and, for ``xla``, wave 5's
PP-HGNetV2, which was measured for ``xla`` random and not adopted, so no shipped model
trains on it."""
CHECK_SEED = 7000
"""Offset of the ``--check`` plan's seeds (its configurations and drawn lengths)."""
DRAWN_CONV_SEED = 8000
"""Offset of the ``--drawn-convs`` plan's seeds (its shapes and configurations)."""
DRAWN_CONV_MODEL = "drawn-conv"
"""The architecture name of ``--drawn-convs`` programs: no architecture, so ``train``."""
DRAWN_CONV_RANGES = {"kernel": (1, 7), "stride": (1, 4), "channels": (3, 256), "side": (1, 64)}
"""Inclusive ranges of ``--drawn-convs``: a square window, a stride of at most the window
and ``stride``'s bound, padding 0 .. window // 2, input and output channels and the next
``dot``'s channels log-uniform, an input side of at least the window."""
LENGTH_RANGE = (2, 64)
"""Sequence lengths (inclusive) the ``--lengths`` plan draws from: the zoo's own range."""
LENGTH_DRAWS = 64
"""Draws per architecture of the ``--lengths`` plan (duplicates dropped)."""
DEFAULT_GRAPHS = {"tile": 55, "layout-xla": 40, "layout-nlp": 40}
DEFAULT_CONFIGS = {"tile": 64, "layout-xla": 200, "layout-nlp": 200}
SIDECAR = "measurements.json"


@dataclass(frozen=True)
class BuildOptions:
    """What to measure: ``graphs`` and ``configs`` per graph (``None``: the defaults),
    interleaved ``rounds``, the MAC budget of one graph, the seed, the pinned core and
    whether to plan an extra wave of architectures (``extra``: 1 for ``EXTRA_MODELS``,
    ``N`` for ``EXTRA_WAVES[N - 1]``, 0 for none) or drawn sequence lengths
    (``lengths``) instead of the original architectures' zoo shapes, or the check
    architectures (``check``; with ``lengths``: at drawn lengths) into the test split, or
    convolutions of drawn shapes (``drawn_convs``, ``layout-xla``)."""

    graphs: int | None = None
    configs: int | None = None
    rounds: int = 10
    max_macs: int = 2_000_000
    seed: int = 0
    core: int | None = None
    extra: int = 0
    lengths: bool = False
    check: bool = False
    drawn_convs: bool = False

    def __post_init__(self) -> None:
        if bool(self.extra) + (self.lengths or self.check) + self.drawn_convs > 1:
            raise InputError(
                "--extra, --lengths (or --check) and --drawn-convs are separate plans: choose one"
            )
        if not 0 <= self.extra <= len(EXTRA_WAVES):
            raise InputError(f"--extra-wave {self.extra}: the waves are 1..{len(EXTRA_WAVES)}")

    @property
    def seed_offset(self) -> int:
        """Added to every graph's seed, so each plan draws its configurations afresh."""
        if self.extra:
            return EXTRA_SEEDS[self.extra - 1]
        if self.check:
            return CHECK_SEED
        if self.drawn_convs:
            return DRAWN_CONV_SEED
        return LENGTHS_SEED if self.lengths else 0


def collection_name(kind: str, variant: str) -> str:
    """The TpuGraphs collection (``tile:xla``, ``layout:nlp:random``, ...)."""
    if kind not in KINDS:
        raise InputError(f"unknown collection {kind!r} ({', '.join(KINDS)})")
    if variant not in VARIANTS:
        raise InputError(f"unknown variant {variant!r} ({', '.join(VARIANTS)})")
    if kind == "tile":
        return "tile:xla"
    return f"layout:{kind.removeprefix('layout-')}:{variant}"


def split_of(kind: str, model: str, options: BuildOptions | None = None) -> str:
    """The split of a zoo model's graphs in a collection kind (``test`` in the check plan)."""
    if options is not None and options.check:
        return "test"
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

    if options.lengths:
        return _round_robin(_drawn_length_graphs(kind, root, options))[: options.graphs]
    if options.drawn_convs:
        return _drawn_conv_graphs(kind, options)
    models = _plan_models(kind, options)
    layers = zoo_layers(list(models), root / "zoo_shapes.json")
    total = options.graphs or DEFAULT_GRAPHS[kind]
    per_model: dict[str, list] = {}
    for model in models:
        if kind == "tile":
            items = model_kernels(layers[model], -(-total // len(models)) + 1, options.max_macs)
        elif kind == "layout-xla":
            convs = [x for x in layers[model] if x.kind == "conv2d"]
            items = [xla_graph(x, n, options.max_macs) for x, n in _with_next_channels(convs)]
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


def _plan_models(kind: str, options: BuildOptions) -> tuple[str, ...]:
    """The architectures of a zoo-shape plan: the original ones, an extra wave's or the
    check architectures."""
    if options.check:
        models = CHECK_MODELS[kind]
        plan = "--check"
    else:
        models = (EXTRA_WAVES[options.extra - 1] if options.extra else MODELS)[kind]
        plan = f"--extra-wave {options.extra}"
    if not models:
        raise InputError(f"{plan} has no {kind} architectures")
    return models


def _drawn_length_graphs(kind: str, root: Path, options: BuildOptions) -> dict[str, list]:
    """Per train or valid architecture (original and extra; with ``check``: per check
    architecture) with attention (``layout-xla``: with convolutions), ``LENGTH_DRAWS``
    graphs of its layers in turn at a sequence length (an input side) drawn uniformly
    from ``LENGTH_RANGE`` (one generator per architecture, seeded by the plan's seed
    offset and its position; ``_at_drawn_length``); graphs of the same name are measured
    once."""
    from dagopt.rank.configs.zoo_shapes import zoo_layers

    if not options.graphs:
        raise InputError("--lengths needs --graphs (how many programs to measure)")
    if options.check:
        models = list(_plan_models(kind, options))
    else:
        models = [m for m in MODELS[kind] + EXTRA_MODELS[kind] if split_of(kind, m) != "test"]
    layers = zoo_layers(models, root / "zoo_shapes.json")
    per_model = {}
    for index, model in enumerate(models):
        rng = np.random.default_rng([options.seed_offset, index])
        drawable = _drawable_layers(kind, layers[model])
        if not drawable:  # a CNN (tile): no sequence to draw a length of
            continue
        drawn = {}
        for draw in range(LENGTH_DRAWS):
            graph = _at_drawn_length(kind, drawable[draw % len(drawable)], rng, options.max_macs)
            if graph is not None:
                drawn.setdefault(_graph_name(model, graph), (model, graph))
        per_model[model] = list(drawn.values())
    return per_model


def _drawn_conv_graphs(kind: str, options: BuildOptions) -> list[tuple[str, object]]:
    """``options.graphs`` ``layout-xla`` programs of convolutions whose shapes are drawn
    from ``DRAWN_CONV_RANGES`` (one generator seeded by ``DRAWN_CONV_SEED``, so the plan
    is the same on every call and its first programs stay when ``--graphs`` grows), not
    read from an architecture: groups-1 convolutions of any window, stride and channel
    counts, cropped to ``max_macs`` as the zoo's are (``xla_graph``); a drawn name that
    already exists is drawn again."""
    from dagopt.rank.configs.layout import xla_graph
    from dagopt.rank.configs.zoo_shapes import LayerShape

    if kind != "layout-xla":
        raise InputError(f"--drawn-convs measures layout-xla programs, not {kind}")
    if not options.graphs:
        raise InputError("--drawn-convs needs --graphs (how many programs to measure)")
    rng = np.random.default_rng(DRAWN_CONV_SEED)
    r = DRAWN_CONV_RANGES
    low, high = np.log(r["channels"])

    def channels() -> int:
        return int(np.rint(np.exp(rng.uniform(low, high))))

    drawn: dict[str, tuple[str, object]] = {}
    for _ in range(100 * options.graphs):
        if len(drawn) == options.graphs:
            break
        kernel = int(rng.integers(r["kernel"][0], r["kernel"][1] + 1))
        stride = int(rng.integers(r["stride"][0], min(kernel, r["stride"][1]) + 1))
        pad = int(rng.integers(0, kernel // 2 + 1))
        cin, cout, next_channels = channels(), channels(), channels()
        side = int(rng.integers(max(kernel, r["side"][0]), r["side"][1] + 1))
        layer = LayerShape(DRAWN_CONV_MODEL, "conv2d", cin, cout, side, kernel, stride, pad)
        graph = xla_graph(layer, next_channels, options.max_macs)
        if graph is not None:
            drawn.setdefault(graph.name, (DRAWN_CONV_MODEL, graph))
    if len(drawn) < options.graphs:
        raise InputError(
            f"--drawn-convs found {len(drawn)} distinct programs within --max-macs "
            f"{options.max_macs}, not {options.graphs}"
        )
    return list(drawn.values())


def _with_next_channels(convs: list) -> list:
    """Each convolution with the output channels of the one after it (the last with its
    own): the ``dot`` that consumes its output in an ``xla`` program."""
    return [(x, convs[min(i + 1, len(convs) - 1)].cout) for i, x in enumerate(convs)]


def _drawable_layers(kind: str, layers: list) -> list:
    """The layers ``--lengths`` draws a length for: a transformer's linear layers (tile),
    its query projections, one per width and heads (``layout-nlp``), or a CNN's groups-1
    convolutions, each with the channels of the next groups-1 one, one per distinct pair
    (``layout-xla``; the zoo plan of ``plan_graphs`` pairs with the next convolution of
    any groups)."""
    if kind == "layout-xla":
        convs = [x for x in layers if x.kind == "conv2d" and x.groups == 1]
        return list(dict.fromkeys(_with_next_channels(convs)))
    linear = [x for x in layers if x.kind == "linear" and x.heads]
    if kind == "layout-nlp":
        return list({(x.cin, x.heads): x for x in linear if x.cin == x.cout}.values())
    return linear


def _at_drawn_length(kind: str, layer, rng: np.random.Generator, max_macs: int):
    """``layer`` at a length drawn from ``LENGTH_RANGE``: a ``layout-nlp`` attention
    program of 1 or 2 heads (drawn first), a ``layout-xla`` convolution program whose
    input side is the length (``layer``: the conv and the next conv's channels), or a tile
    dense kernel."""
    from dagopt.rank.configs.layout import nlp_graph, xla_graph
    from dagopt.rank.configs.tile import tile_kernel

    low, high = LENGTH_RANGE
    if kind == "layout-nlp":
        heads = int(rng.integers(1, 3))
        return nlp_graph(layer, heads, int(rng.integers(low, high + 1)), max_macs)
    if kind == "layout-xla":
        conv, next_channels = layer
        return xla_graph(
            replace(conv, side=int(rng.integers(low, high + 1))), next_channels, max_macs
        )
    return tile_kernel(replace(layer, side=int(rng.integers(low, high + 1))), max_macs)


def _graph_name(model: str, graph) -> str:
    return graph.name if hasattr(graph, "ops") else f"{model}.{graph.name()}"


def _read_sidecar(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: unreadable measurement sidecar ({exc})") from None


def sidecar_path(root: str | os.PathLike, collection: str) -> Path:
    """Where a collection's ``measurements.json`` lies under dataset ``root``."""
    return collection_dir(Path(root), collection, "train").parent / SIDECAR


def read_sidecar(root: str | os.PathLike, collection: str) -> dict:
    """A collection's ``measurements.json`` under dataset ``root``: per graph name its
    figures (retest tau, load, machine, ...); empty where there is none (TpuGraphs)."""
    return _read_sidecar(sidecar_path(root, collection))


def timed_on(figures: dict, names: list[str]) -> str:
    """How many of the graphs ``names`` each machine timed, as ``figures`` (a sidecar)
    records: ``"42 on <machine>; 3 not recorded"``."""
    counts = Counter(figures.get(name, {}).get("machine") for name in names)
    return "; ".join(
        f"{n} on {machine}" if machine else f"{n} not recorded" for machine, n in counts.items()
    )


def build_collection(
    root: str | os.PathLike, kind: str, variant: str, options: BuildOptions
) -> list[Path]:
    """Measure and write the missing graphs of one collection; returns the new files."""
    from dagopt.integrations.tvm import require_tvm
    from dagopt.integrations.tvm.measure import machine, pin_to_core

    collection = collection_name(kind, variant)
    require_tvm()
    allowed = os.sched_getaffinity(0)
    core = pin_to_core(options.core)
    try:
        return _build(Path(root), kind, collection, options, core, machine())
    finally:
        os.sched_setaffinity(0, allowed)


def _build(
    root: Path, kind: str, collection: str, options: BuildOptions, core: int, host: str
) -> list[Path]:
    variant = collection.rsplit(":", 1)[-1]
    train = collection_dir(root, collection, "train")
    if options.check and train.is_dir() and any(train.glob("*.npz")):
        raise InputError(
            f"--check writes a root of its own (datasets/configs-check): {root} has "
            f"{collection} training graphs"
        )
    graphs = plan_graphs(kind, root, options)
    sidecar = sidecar_path(root, collection)
    figures = _read_sidecar(sidecar)
    _check_machine(sidecar, figures, host)
    written = []
    for done, (model, graph) in enumerate(graphs):
        report(f"measuring {collection}", done, len(graphs))
        name = _graph_name(model, graph)
        split = split_of(kind, model, options)
        path = collection_dir(root, collection, split) / f"{name}.npz"
        count = options.configs or DEFAULT_CONFIGS[kind]
        if path.exists():
            _check_protocol(path, figures.get(name), options.rounds, count)
            continue
        seed = options.seed + done + options.seed_offset
        record, measurement, extra = _measure(kind, variant, graph, name, count, options, seed)
        figures[name] = {
            "model": model,
            "split": split,
            "core": core,
            "machine": host,
            "requested_configs": count,
            **measurement.summary(),
            **extra,
        }
        write_text_atomic(sidecar, json.dumps(figures, indent=1, sort_keys=True) + "\n")
        written.append(write_tpugraphs(record, path, compressed=True))
    report(f"measuring {collection}", len(graphs), len(graphs))
    return written


def _check_machine(sidecar: Path, figures: dict, host: str) -> None:
    """A collection's runtimes come from one machine: a retest tau is a ceiling on one
    CPU only, and programs timed on another rank differently (docs/configs_dataset.md,
    "One machine per collection"). Entries from before the machine was recorded pass."""
    others = {f.get("machine") for f in figures.values()} - {None, host}
    if others:
        raise InputError(
            f"{sidecar} holds graphs measured on {sorted(others)[0]}, and this machine is "
            f"{host}: a collection's runtimes come from one machine (measure into another --out)"
        )


def _check_protocol(path: Path, recorded: dict | None, rounds: int, configs: int) -> None:
    """An existing graph, skipped on a rerun, must have been measured with this run's
    ``rounds`` and configurations per graph (its sidecar entry says; entries written
    before ``requested_configs`` was recorded are checked on ``rounds`` only): one
    collection keeps one protocol."""
    recorded = recorded or {}
    for option, key, value in (
        ("--rounds", "rounds", rounds),
        ("--configs", "requested_configs", configs),
    ):
        if recorded.get(key, value) != value:
            raise InputError(
                f"{path} was measured with {option} {recorded[key]}, not {value}: a "
                f"collection keeps one protocol (give its {option}, or another --out)"
            )


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

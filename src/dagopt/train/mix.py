"""The graph mix of an ordering run (issue 21, item 3): layered graphs and real ones.

Paper 000 (4.3, C.1) trains on fresh layered graphs only, and its policy does not
transfer to real models' training graphs. ``OrderingTrainConfig.mix`` gives the fraction
of each epoch's graphs drawn from each source of ``MIX_SOURCES``:

- ``layered``: fresh layered graphs from training seeds (paper 000, appendix C.4);
- ``zoo``: training graphs of zoo models (``dagopt.zoo.MODELS``, size ``small``);
- ``cnn``: training graphs of the multi-branch CNNs built for training
  (``dagopt.zoo.models.TRAINING_CNNS``: RandWire-WS with graph seeds of their own).

The real graphs are split by model name into ``TRAINING_GRAPHS`` and
``VALIDATION_GRAPHS``; no model of ``dagopt.zoo.HELD_OUT_MODELS`` is in either (checked
by ``tests/test_train_mix.py``). They are exported once and cached on disk by
``dagopt.zoo.export_zoo`` (tracing takes seconds to minutes), and loaded once per run.
Real peaks are in bytes and layered ones in units of about 100, so a mixed run scores
every order by its peak over Inductor's best peak on the same graph
(``reference_peak``): rewards, the greedy-rollout baseline and the validation cost are
then all on the scale of 1.
"""

from collections.abc import Mapping, Sequence

import numpy as np

from dagopt.errors import InputError
from dagopt.graph import Graph
from dagopt.schedule import solve
from dagopt.zoo import HELD_OUT_MODELS, export_zoo_graph

#: The sources a mix draws from (module docstring).
MIX_SOURCES = ("layered", "zoo", "cnn")

#: Real training graphs per source, ``model/size`` (training mode).
TRAINING_GRAPHS: dict[str, tuple[str, ...]] = {
    "zoo": (
        "gpt2/small",
        "llama-small/small",
        "bert-base/small",
        "resnet-50/small",
        "mobilenet-v2/small",
        "vit-base/small",
        "inception-v3/small",
    ),
    "cnn": ("randwire-ws16-3/small", "randwire-ws16-4/small", "randwire-ws16-5/small"),
}
#: Real validation graphs: other models than the training ones (split by name).
VALIDATION_GRAPHS: tuple[str, ...] = (
    "t5-small/small",
    "swin-tiny/small",
    "convnext-tiny/small",
    "whisper-tiny-encoder/small",
    "randwire-ws16-6/small",
)


def check_mix(mix: Mapping[str, float]) -> None:
    """``mix`` is empty (layered graphs only) or fractions of ``MIX_SOURCES`` summing to 1."""
    unknown = sorted(set(mix) - set(MIX_SOURCES))
    if unknown:
        raise InputError(f"unknown mix source {unknown[0]!r} (sources: {', '.join(MIX_SOURCES)})")
    values = [float(v) for v in mix.values()]
    if any(not v >= 0 for v in values) or (mix and abs(sum(values) - 1) > 1e-6):
        raise InputError("mix fractions must be >= 0 and sum to 1")


def source_counts(mix: Mapping[str, float], total: int) -> dict[str, int]:
    """``total`` graphs split by the fractions of ``mix`` (largest remainders get the
    rounding), in ``MIX_SOURCES`` order."""
    shares = np.array([float(mix.get(source, 0.0)) * total for source in MIX_SOURCES])
    counts = np.floor(shares).astype(int)
    for i in np.argsort(counts - shares)[: total - int(counts.sum())]:
        counts[i] += 1
    return {source: int(c) for source, c in zip(MIX_SOURCES, counts, strict=True) if c}


def load_graphs(specs: Sequence[str]) -> list[Graph]:
    """The training-mode graphs of ``model/size`` specs, one node per operator (the shipped
    guides' training data), from the zoo cache (exported once)."""
    graphs = []
    for spec in specs:
        name, _, size = spec.partition("/")
        if name in {model.name for model in HELD_OUT_MODELS}:
            raise InputError(f"{name} is held out: it is never trained or validated on")
        graphs.append(export_zoo_graph(name, size=size, mode="training", split_outputs=False))
    return graphs


def reference_peak(graph: Graph) -> float:
    """Inductor's best peak on ``graph``: the scale a mixed run divides peaks by."""
    return max(solve(graph, "inductor").peak_memory, 1e-12)

"""Paper 004's models in a latency environment, from a name: what the CLI and the
benchmarks place (``dagopt place MODEL --env ... --devices cpu,cuda:0``).

``latency_env(model, env, devices)`` reads MODEL (a zoo name, an OpenVINO ``.xml``, a
saved PyTorch program ``.pt2``, or a graph file where the environment allows it) and
builds the environment
(``dagopt.objectives.latency``):

- ``simulated``: the graph read through OpenVINO (a zoo name or ``.xml``) or a graph
  file (share nodes joined to their operators: ``dagopt.graph.shares``), each op's
  seconds from the roofline of its device's kind (``cpu``; ``cuda:N`` or ``gpu`` is a
  GPU), transfers over a PCIe-like link: SIMULATED numbers;
- ``profiled``: the PyTorch graph of the zoo model or ``.pt2`` with a ``Profile``'s op
  times and fitted transfer cost (``--profile``, by default the profile shipped for the
  model and devices: ``cpu,cpu`` for the three benchmark models, measured on this project's
  CPU-only machine, and ``cpu,cuda:0``, measured on an H100 machine): PREDICTED numbers;
- ``torch``: the PyTorch graph of the zoo model or ``.pt2`` (on its saved example
  inputs) run on the PyTorch devices: MEASURED;
- ``openvino``: the zoo model (converted) or ``.xml`` on OpenVINO HETERO, devices
  ``cpu`` -> ``CPU`` and ``cuda:N`` / ``gpu`` -> ``GPU``; a second ``cpu`` is the CPU
  plugin registered again (``register_cpu_twice``): MEASURED.

Paper 004's inputs: Inception-V3 at 299 px, ResNet-50 at 224 px, BERT-base on 8 tokens
(``PAPER_MODELS``); another zoo model takes its ``small`` inputs.
"""

import re
import statistics
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dagopt.errors import InputError
from dagopt.graph import Graph
from dagopt.objectives.latency import LatencyModel

if TYPE_CHECKING:  # torch is imported only when a PyTorch environment is built
    from dagopt.io.torch import TorchGraph

ENVS = ("simulated", "profiled", "torch", "openvino")
#: What each environment's numbers are (the label every table prints).
KINDS = {"simulated": "SIMULATED", "profiled": "PREDICTED from a profile",
         "torch": "MEASURED", "openvino": "MEASURED"}  # fmt: skip
#: Zoo size and tokens kept of paper 004's benchmark models (section 3.1).
PAPER_MODELS = {"inception-v3": ("large", None), "resnet-50": ("large", None),
                "bert-base": ("small", 8)}  # fmt: skip


@dataclass(frozen=True)
class LatencyTarget:
    """A model's graph in a latency environment: ``env.graph is graph``."""

    model: str
    env_name: str
    graph: Graph
    env: LatencyModel

    @property
    def kind(self) -> str:
        return KINDS[self.env_name]


#: Paper 004's per-graph learned placers: HSDAG and its two learned baselines.
LEARNED_PLACERS = ("hsdag", "placeto", "rnn-placer")


def add_env_arguments(parser: Any) -> None:
    """The options every HSDAG table takes: ``--env``, ``--devices``, ``--models``,
    ``--seeds``, ``--episodes`` (an ``argparse`` parser)."""
    parser.add_argument("--env", default="simulated", choices=ENVS)
    parser.add_argument("--devices", default=None, help="default: cpu,gpu (profiled: cpu,cpu)")
    parser.add_argument("--models", nargs="+", default=list(PAPER_MODELS), choices=PAPER_MODELS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--episodes", type=int, default=100)


def train_placers(
    graph: Graph, env: LatencyModel, methods: Iterable[str], *, episodes: int, seed: int
) -> Iterator[tuple[str, Any, float]]:
    """Each of ``methods`` placed on ``graph`` through ``env``, in order: a learned placer
    (``LEARNED_PLACERS``) with Table 4's budget of ``episodes`` x 20 measured placements,
    a search placer with as many evaluations as the first method used. Yields the method,
    its ``Placement`` and its seconds."""
    from dagopt.place import place

    evaluations = 0
    for method in methods:
        options = (
            {"episodes": episodes, "steps": 20}
            if method in LEARNED_PLACERS
            else {"evaluations": evaluations}
        )
        began = time.perf_counter()
        result = place(graph, method, cost_model=env, seed=seed, **options)
        seconds = time.perf_counter() - began
        evaluations = evaluations or result.evaluations
        yield method, result, seconds


def interval(values: list[float]) -> tuple[float, float, float]:
    """The median of repeated latency measurements and their 2.5 / 97.5 percentiles
    (how the HSDAG tables report a re-measured placement)."""
    low, high = np.percentile(values, [2.5, 97.5])
    return statistics.median(values), float(low), float(high)


def env_devices(env: str, devices: str | None) -> list[str]:
    """``--devices`` as a list; by default ``cpu,gpu`` (``cpu,cpu`` for the shipped
    CPU-only profiles of ``--env profiled``)."""
    return (devices or ("cpu,cpu" if env == "profiled" else "cpu,gpu")).split(",")


def zoo_inputs(model: str) -> tuple[Any, tuple]:
    """The eval-mode zoo module ``model`` and its inputs at paper 004's sizes."""
    from dagopt.zoo import get_model

    size, tokens = PAPER_MODELS.get(model, ("small", None))
    module, inputs = get_model(model).build(size)
    if tokens is not None:
        inputs = tuple(x[:, :tokens].clone() for x in inputs)  # own storage: static sizes
    return module, tuple(inputs)


def is_zoo_model(model: str) -> bool:
    """Whether ``model`` names a zoo model (``dagopt zoo list``)."""
    from dagopt.zoo import model_names

    return model in model_names()


def profile_name(model: str, devices: list[str]) -> str:
    """The file name of the profile of ``model`` on ``devices`` in ``dagopt/data``."""
    return f"hsdag-profile-{model}-{'-'.join(d.replace(':', '') for d in devices)}.json"


def default_profile(model: str, devices: list[str]) -> Path:
    """The shipped profile of ``model`` on ``devices`` (``cpu,cpu`` and ``cpu,cuda:0``)."""
    path = Path(str(resources.files("dagopt.data") / profile_name(model, devices)))
    if not path.exists():
        raise InputError(
            f"no shipped profile for {model} on {','.join(devices)}: measure one with "
            f"benchmarks/hsdag_profile.py --model {model} --devices {','.join(devices)} "
            "and pass --profile"
        )
    return path


def _openvino_model(model: str) -> Any:
    from dagopt.io.openvino import convert_openvino, read_openvino_model

    if model.endswith(".xml"):
        return read_openvino_model(model)
    if not is_zoo_model(model):
        raise InputError(f"{model!r} is neither a zoo model nor an OpenVINO .xml")
    import torch

    module, inputs = zoo_inputs(model)
    with torch.no_grad():
        return convert_openvino(module, example_input=inputs)


def torch_graph_of(model: str, env: str) -> tuple["TorchGraph", tuple]:
    """The PyTorch graph of a zoo model at paper 004's sizes, or of a saved program
    (``.pt2``, as saved, on its saved example inputs), one node per operator (placement's
    form), and the inputs it runs on."""
    from dagopt.io.torch import graph_from_module

    if model.lower().endswith(".pt2"):
        from dagopt.io.torch_program import read_exported_program

        saved = read_exported_program(model, split_outputs=False)
        if saved.inputs is None:
            raise InputError(f"{model}: the {env} environment runs the program on its saved "
                             "example inputs, and it has none")  # fmt: skip
        return saved.torch_graph, saved.inputs
    if not is_zoo_model(model):
        raise InputError(
            f"the {env} environment needs a zoo model or a saved PyTorch program (.pt2), "
            f"not {model!r}"
        )
    module, inputs = zoo_inputs(model)
    return graph_from_module(module, inputs, name=model, split_outputs=False), inputs


def _openvino_devices(devices: list[str], core: Any) -> list[str]:
    from dagopt.integrations.openvino import register_cpu_twice

    names = []
    for device in devices:
        kind = device.lower()
        if kind == "cpu":
            names.append("CPU" if "CPU" not in names else register_cpu_twice(core))
        elif _is_gpu(kind):
            if "GPU" not in core.available_devices:
                raise InputError(f"device {device!r} requested but OpenVINO sees no GPU")
            names.append("GPU")
        else:
            raise InputError(f"no OpenVINO device for {device!r} (use cpu, gpu or cuda:0)")
    return names


def _is_gpu(kind: str) -> bool:
    """Whether the lower-case device name ``kind`` is a GPU: ``gpu``, ``cuda``, ``cuda:N``."""
    return re.fullmatch(r"gpu|cuda(:\d+)?", kind) is not None


def _simulated_kind(device: str) -> str:
    kind = device.lower()
    if kind == "cpu":
        return "cpu"
    if _is_gpu(kind):
        return "gpu"
    raise InputError(f"no simulated device kind for {device!r} (use cpu, gpu or cuda:0)")


def latency_env(
    model: str,
    env: str,
    devices: list[str],
    *,
    profile: str | Path | None = None,
    noise: float = 0.0,
    seed: int = 0,
) -> LatencyTarget:
    """``model`` in environment ``env`` on ``devices`` (module docstring)."""
    from dagopt.objectives.latency import Profile, ProfiledLatency, roofline_latency

    if env not in ENVS:
        raise InputError(f"unknown environment {env!r}; choose one of {', '.join(ENVS)}")
    if not devices:
        raise InputError("--devices needs at least one device, e.g. cpu,cuda:0")
    if not Path(model).exists() and not is_zoo_model(model):
        raise InputError(f"no such file or zoo model: {model} (see `dagopt zoo list`)")
    if profile is not None and env != "profiled":
        raise InputError("--profile is for the profiled environment")
    if env == "simulated":
        kinds = [_simulated_kind(d) for d in devices]
        if model.endswith(".xml") or is_zoo_model(model):
            from dagopt.io.openvino import graph_from_openvino

            graph = graph_from_openvino(_openvino_model(model), name=Path(model).stem)
        else:
            from dagopt.io import load_operators

            graph = load_operators(model)
        latency: LatencyModel = roofline_latency(graph, kinds, noise=noise, seed=seed)
    elif env == "profiled":
        torch_graph, _ = torch_graph_of(model, env)
        read = Profile.read(profile if profile is not None else default_profile(model, devices))
        if list(read.devices) != list(devices):
            raise InputError(
                f"the profile was measured on {','.join(read.devices)}, not {','.join(devices)}"
            )
        if read.model and Path(model).stem != read.model:
            raise InputError(f"the profile is of model {read.model!r}, not {model!r}")
        latency = ProfiledLatency(torch_graph.graph, read, noise=noise, seed=seed)
    elif env == "torch":
        from dagopt.integrations.torch_latency import TorchLatency, check_torch_devices

        check_torch_devices(devices)  # before the (slow) export
        torch_graph, inputs = torch_graph_of(model, env)
        latency = TorchLatency(torch_graph, devices, inputs)
    else:
        import openvino

        from dagopt.integrations.openvino import OpenVinoLatency

        core = openvino.Core()
        names = _openvino_devices(devices, core)
        latency = OpenVinoLatency(_openvino_model(model), names, core=core, seed=seed)
    return LatencyTarget(model=model, env_name=env, graph=latency.graph, env=latency)

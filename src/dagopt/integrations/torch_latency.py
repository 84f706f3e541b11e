"""Placements run for real in PyTorch, and latency profiles (paper 004, section 3).

``TorchLatency`` is the PyTorch latency environment
(``dagopt.objectives.latency.LatencyModel``): a placement of a ``TorchGraph``'s nodes
becomes an fx module (``placed_module``) in which every node runs on its device
(``"cpu"``, ``"cuda:0"``...), every parameter is read from a copy on the reader's
device, and a cross-device edge holds one ``.to(device, non_blocking=True)`` per tensor
and destination. A ``getitem`` of a multi-output op runs where the op ran, and a
tensor-creating op gets its own device as its ``device`` argument. The module is timed
with the devices synchronised before and after each run, ``runs`` times (10); the
latency is the mean of the runs after the first ``runs - keep`` (the paper's protocol:
the last 5 of 10). While those kept runs vary by more than ``tolerance`` (their standard
deviation over their mean) more runs are made, up to ``max_runs``: the noise decides
the repetitions. A placement that raises (out of memory, an op a device lacks) is a
failure, counted and penalised by the base class, never a crash.

``profile_torch`` measures what ``ProfiledLatency`` predicts from: every op's median
seconds on each device, run alone with its inputs on that device, the whole graph's
latency on each device alone (``ProfiledLatency`` can calibrate to it), and a transfer cost
fitted from copy benchmarks (``.to`` of tensors from 1 KiB to 64 MiB between every two
devices): ``latency + bytes / bandwidth``. On a CPU-only machine with devices
``cpu,cpu`` a ``.to("cpu")`` of a CPU tensor is the tensor itself, so the fitted
transfer is (nearly) free, which is what ``TorchLatency`` does there too.
"""

import contextlib
import io
import operator
import platform
import statistics
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch.utils import _pytree as pytree

from dagopt.errors import InputError
from dagopt.io.torch import TorchGraph
from dagopt.objectives.devices import Devices, DeviceSpec
from dagopt.objectives.latency import LatencyModel, Profile, fit_transfer

#: Sizes of the copy benchmark, bytes (1 KiB to 64 MiB).
COPY_SIZES = tuple(2**k for k in range(10, 27, 2))


def check_torch_devices(device_names: Sequence[str]) -> tuple[torch.device, ...]:
    """The ``torch.device`` of every name; an unknown or absent device (``cuda:0``
    without a GPU) is a one-line ``InputError``."""
    devices = []
    for name in device_names:
        try:
            device = torch.device(name)
        except RuntimeError:
            raise InputError(f"{name!r} is not a PyTorch device (e.g. cpu, cuda:0)") from None
        if device.type == "cuda" and (
            not torch.cuda.is_available() or (device.index or 0) >= torch.cuda.device_count()
        ):
            raise InputError(f"device {name!r} requested but this machine has no such GPU")
        devices.append(device)
    if not devices:
        raise InputError("at least one device is needed")
    return tuple(devices)


def _synchronize(devices: Sequence[torch.device]) -> None:
    for device in dict.fromkeys(devices):
        if device.type == "cuda":
            torch.cuda.synchronize(device)


def _tensor_valued(node: torch.fx.Node) -> bool:
    return isinstance(node.meta.get("val"), torch.Tensor)


def placed_module(
    torch_graph: TorchGraph,
    devices: Sequence[torch.device],
    device_of: np.ndarray,
    state: Sequence[dict[str, torch.Tensor]],
) -> torch.fx.GraphModule:
    """The fx module of ``torch_graph`` with node ``graph.names[i]`` on
    ``devices[device_of[i]]`` (module docstring). ``state[k]`` maps every ``get_attr``
    target to its copy on ``devices[k]``."""
    graph = torch_graph.graph
    where = {name: int(d) for name, d in zip(graph.names, device_of, strict=True)}
    source = torch_graph.graph_module
    new, root = torch.fx.Graph(), torch.nn.Module()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    on: dict[torch.fx.Node, int] = {}
    copies: dict[tuple[torch.fx.Node, int], torch.fx.Node] = {}
    for node in source.graph.nodes:
        if node.op == "get_attr":
            continue
        k = where[node.name]
        if node.target is operator.getitem and not _tensor_valued(node.args[0]):
            k = on[node.args[0]]  # a multi-output op's part stays where the op ran

        def read(u: torch.fx.Node, k: int = k) -> torch.fx.Node:
            if u.op == "get_attr":
                key = (u, k)
                if key not in copies:
                    name = f"{u.target}_on{k}"
                    setattr(root, name, state[k][u.target])
                    copies[key] = new.get_attr(name)
                return copies[key]
            if on[u] == k or not _tensor_valued(u):
                return env[u]
            key = (u, k)
            if key not in copies:
                copies[key] = new.call_method("to", (env[u], devices[k]), {"non_blocking": True})
            return copies[key]

        copied = new.node_copy(node, read)
        if node.op == "call_function" and "device" in node.kwargs:
            copied.kwargs = {**copied.kwargs, "device": devices[k]}
        env[node], on[node] = copied, k
    return torch.fx.GraphModule(root, new)


class TorchLatency(LatencyModel):
    """Latency of placements of ``torch_graph`` on the PyTorch ``device_names``, run on
    ``inputs`` (module docstring). ``graph`` is the graph placers place."""

    def __init__(
        self,
        torch_graph: TorchGraph,
        device_names: Sequence[str],
        inputs: Sequence[torch.Tensor],
        *,
        runs: int = 10,
        keep: int = 5,
        max_runs: int = 30,
        tolerance: float = 0.05,
    ) -> None:
        self.torch_devices = check_torch_devices(device_names)
        devices = Devices(tuple(DeviceSpec(memory=float("inf")) for _ in device_names))
        super().__init__(torch_graph.graph, devices, runs=runs, keep=keep)
        if torch_graph.mode != "inference":
            raise InputError("the PyTorch latency environment runs inference graphs")
        self.torch_graph, self.device_names = torch_graph, tuple(device_names)
        self.max_runs, self.tolerance = max(max_runs, runs), tolerance
        self.inputs = tuple(inputs)
        attrs = {
            n.target: getattr(torch_graph.graph_module, n.target)
            for n in torch_graph.graph_module.graph.nodes
            if n.op == "get_attr"
        }
        cache: dict[torch.device, dict[str, torch.Tensor]] = {}
        for device in self.torch_devices:
            if device not in cache:
                cache[device] = {name: t.to(device) for name, t in attrs.items()}
        self.state = [cache[device] for device in self.torch_devices]
        self._placeholders = [
            n.name for n in torch_graph.graph_module.graph.nodes if n.op == "placeholder"
        ]

    def module(self, device_of: np.ndarray) -> torch.fx.GraphModule:
        """The placed fx module of ``device_of`` (``placed_module``)."""
        device_of = self.check_placement(device_of)
        return placed_module(self.torch_graph, self.torch_devices, device_of, self.state)

    def _inputs(self, device_of: np.ndarray) -> list[torch.Tensor]:
        index = {name: i for i, name in enumerate(self.graph.names)}
        return [
            x.to(self.torch_devices[device_of[index[name]]])
            for name, x in zip(self._placeholders, self.inputs, strict=True)
        ]

    def outputs(self, device_of: np.ndarray) -> list[torch.Tensor]:
        """The outputs of one run of the placement, on the CPU."""
        device_of = self.check_placement(device_of)
        with torch.no_grad():
            out = self.module(device_of)(*self._inputs(device_of))
        return [t.cpu() for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]

    def measure(self, device_of: np.ndarray) -> np.ndarray | None:
        device_of = self.check_placement(device_of)
        try:
            module, inputs = self.module(device_of), self._inputs(device_of)
            samples: list[float] = []
            # fx prints the generated code of a failing line to stderr before raising
            with torch.no_grad(), contextlib.redirect_stderr(io.StringIO()):
                while len(samples) < self.runs or (
                    len(samples) < self.max_runs and self._noisy(samples)
                ):
                    _synchronize(self.torch_devices)
                    began = time.perf_counter()
                    module(*inputs)
                    _synchronize(self.torch_devices)
                    samples.append(time.perf_counter() - began)
        except (RuntimeError, NotImplementedError, torch.OutOfMemoryError):
            self.failures += 1
            return None
        return np.array(samples)

    def _noisy(self, samples: list[float]) -> bool:
        kept = samples[self.runs - self.keep :]
        return statistics.pstdev(kept) > self.tolerance * statistics.fmean(kept)


def _op_seconds(
    torch_graph: TorchGraph,
    device: torch.device,
    state: dict[str, torch.Tensor],
    inputs: Sequence[torch.Tensor],
) -> dict[str, float]:
    """Seconds of every ``call_function`` node run alone on ``device``, in one pass."""
    values: dict[torch.fx.Node, Any] = {}
    times: dict[str, float] = {}
    placeholders = iter(inputs)
    to_device = lambda v: v.to(device) if isinstance(v, torch.Tensor) else v  # noqa: E731
    for node in torch_graph.graph_module.graph.nodes:
        if node.op == "placeholder":
            values[node] = next(placeholders).to(device)
        elif node.op == "get_attr":
            values[node] = state[node.target]
        elif node.op == "call_function":
            args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), values.__getitem__)
            if "device" in kwargs:
                kwargs = {**kwargs, "device": device}
            args, kwargs = pytree.tree_map(to_device, (args, kwargs))
            _synchronize([device])
            began = time.perf_counter()
            values[node] = node.target(*args, **kwargs)
            _synchronize([device])
            times[node.name] = time.perf_counter() - began
    return times


def copy_benchmark(
    source: torch.device, target: torch.device, repeats: int = 5
) -> list[tuple[float, float]]:
    """``(bytes, median seconds)`` of ``.to(target, non_blocking=True)`` plus
    synchronisation for float32 tensors of ``COPY_SIZES`` bytes on ``source``."""
    rows = []
    for size in COPY_SIZES:
        x = torch.ones(size // 4, device=source)
        seconds = []
        for _ in range(repeats + 1):
            _synchronize([source, target])
            began = time.perf_counter()
            x.to(target, non_blocking=True)
            _synchronize([source, target])
            seconds.append(time.perf_counter() - began)
        rows.append((float(size), statistics.median(seconds[1:])))
    return rows


def profile_torch(
    torch_graph: TorchGraph,
    device_names: Sequence[str],
    inputs: Sequence[torch.Tensor],
    *,
    model: str,
    label: str,
    repeats: int = 5,
) -> Profile:
    """A ``Profile`` of ``torch_graph`` on ``device_names`` (module docstring).

    Inputs, outputs and nodes that run nothing get 0 seconds. After a warm-up run on
    every device, ``repeats`` rounds run the graph op by op once on each device in turn
    (so that a machine's drifting load spreads over the devices alike), then measure
    the whole graph on each device alone (``TorchLatency``); an op's time is its median
    over the rounds, and so is each device's whole-graph latency (``Profile.whole``)."""
    devices = check_torch_devices(device_names)
    latency = TorchLatency(torch_graph, device_names, inputs)
    runs: list[dict[str, list[float]]] = [{} for _ in devices]
    wholes: list[list[float]] = [[] for _ in devices]
    alone = [np.full(torch_graph.graph.num_nodes, k) for k in range(len(devices))]
    with torch.no_grad():
        for round_ in range(repeats + 1):
            for k, device in enumerate(devices):
                times = _op_seconds(torch_graph, device, latency.state[k], inputs)
                for name, seconds in times.items():
                    if round_:  # round 0 warms up
                        runs[k].setdefault(name, []).append(seconds)
            for k, device_of in enumerate(alone if round_ else ()):  # TorchLatency warms up
                run = latency.evaluate(device_of, None, "runtime")
                if not run.feasible:
                    raise InputError(f"the graph failed to run on {device_names[k]} alone")
                wholes[k].append(run.makespan)
    names = torch_graph.graph.names
    seconds = tuple(
        tuple(statistics.median(run[name]) if name in run else 0.0 for run in runs)
        for name in names
    )
    copies = [
        row
        for a in dict.fromkeys(devices)
        for b in dict.fromkeys(devices)
        if a != b or len(set(devices)) == 1
        for row in copy_benchmark(a, b)
    ]
    fitted_latency, bandwidth = fit_transfer(np.array(copies))
    meta = {
        "torch": torch.__version__,
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "threads": torch.get_num_threads(),
        "cuda": [torch.cuda.get_device_name(d) for d in devices if d.type == "cuda"],
        "repeats": repeats,
        "measured": time.strftime("%Y-%m-%d"),
    }
    return Profile(
        label=label,
        model=model,
        devices=tuple(device_names),
        names=tuple(names),
        seconds=seconds,
        latency=fitted_latency,
        bandwidth=bandwidth,
        copies=tuple(copies),
        meta=meta,
        whole=tuple(statistics.median(w) for w in wholes),
    )

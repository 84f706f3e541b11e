"""Do profiled predictions rank placements as measured latency does? Spearman's rho of
``ProfiledLatency`` against ``TorchLatency`` over 50 placements (issue: >= 0.8 on a GPU).

    python benchmarks/hsdag_profile_spearman.py --model resnet-50 --devices cpu,cuda:0
    python benchmarks/hsdag_profile_spearman.py --model resnet-50 --devices cpu,cpu  # here

The profile is measured first on the same devices (``profile_torch``), unless
``--profile`` gives one. The placements span the range: the two single devices, splits
of the topological order at evenly spaced points (a prefix on one device, the rest on
the other), and random placements with a growing share on the second device. Each is
measured in PyTorch (the paper's protocol, more runs where noisy) in random order.
On ``cpu,cpu`` both "devices" are the same CPU: the latencies barely differ and the
rank correlation says little; the number that matters needs ``cpu,cuda:0``. ``--save``
keeps the placements with their measured latencies (FILE) and the graph
(FILE.graph.json); ``--measured FILE`` scores a profile (``--profile``, or the shipped
one) against those measurements again, without the hardware or a PyTorch export.
``--calibrate`` scales each device's op times so that a single-device placement
predicts the whole-graph latency the profile measured (``ProfiledLatency``).
"""

import argparse
import json
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from scipy.stats import spearmanr

from dagopt.bench.latency_envs import PAPER_MODELS, default_profile, zoo_inputs
from dagopt.bench.script import positive_int, run_script, script_parser
from dagopt.errors import InputError
from dagopt.graph import Graph
from dagopt.integrations.torch_latency import TorchLatency, profile_torch
from dagopt.io import load
from dagopt.io.atomic import write_text_atomic
from dagopt.io.json import write_graph_json
from dagopt.io.torch import graph_from_module
from dagopt.objectives.latency import Profile, ProfiledLatency


def placements(n: int, order: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` placements of ``n`` ops on two devices (module docstring)."""
    rows = [np.zeros(n, np.int64), np.ones(n, np.int64)]
    splits = (count - 2) // 2
    for cut in np.linspace(0, n, splits + 2)[1:-1].astype(int):
        row = np.zeros(n, np.int64)
        row[order[cut:]] = 1
        rows.append(row)
    for share in np.linspace(0.05, 0.95, count - len(rows)):
        rows.append((rng.random(n) < share).astype(np.int64))
    return np.stack(rows)


def graph_file(saved: Path) -> Path:
    """The graph saved beside a ``--save`` record."""
    return saved.with_name(saved.name.removesuffix(".json") + ".graph.json")


class Scored(NamedTuple):
    """Placements with measured latencies, and the profile that predicts them."""

    model: str
    devices: str
    profile: Profile
    graph: Graph
    rows: np.ndarray
    measured: np.ndarray
    failures: int


def measure(args: argparse.Namespace) -> Scored:
    """Placements of the exported zoo model measured in PyTorch, with the profile given
    or measured first."""
    devices = args.devices.split(",")
    module, inputs = zoo_inputs(args.model)
    torch_graph = graph_from_module(module, inputs, name=args.model, split_outputs=False)
    if args.profile is None:
        profile = profile_torch(torch_graph, devices, inputs, model=args.model,
                                label=f"measured on {args.devices}")  # fmt: skip
    else:
        profile = Profile.read(args.profile)
    measured_env = TorchLatency(torch_graph, devices, inputs)
    rng = np.random.default_rng(args.seed)
    graph = torch_graph.graph
    rows = placements(graph.num_nodes, graph.topological_order, args.placements, rng)
    measured = np.empty(len(rows))
    for i in rng.permutation(len(rows)):
        measured[i] = measured_env.evaluate(rows[i], None, "runtime").makespan
    if args.save is not None:
        write_graph_json(graph, graph_file(args.save))
        record = {"model": args.model, "devices": devices, "torch": torch.__version__,
                  "names": list(graph.names), "placements": rows.tolist(),
                  "measured": measured.tolist()}  # fmt: skip
        write_text_atomic(args.save, json.dumps(record))
    return Scored(args.model, args.devices, profile, graph, rows, measured,
                  measured_env.failures)  # fmt: skip


def reread(args: argparse.Namespace) -> Scored:
    """A ``--save`` record in place of measuring: its graph, placements and latencies."""
    record = json.loads(args.measured.read_text())
    recorded_run = ((args.model, record["model"]), (args.devices, ",".join(record["devices"])))
    for given, recorded in recorded_run:
        if given is not None and given != recorded:
            raise InputError(f"{args.measured} was measured on {recorded!r}, not {given!r}")
    graph = load(graph_file(args.measured))
    if list(graph.names) != record["names"]:
        raise SystemExit(f"{graph_file(args.measured)} is not the graph of {args.measured}")
    profile = Profile.read(args.profile or default_profile(record["model"], record["devices"]))
    rows, measured = np.array(record["placements"]), np.array(record["measured"])
    return Scored(record["model"], ",".join(record["devices"]), profile, graph, rows,
                  measured, 0)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--model", choices=list(PAPER_MODELS), help="default: resnet-50")
    parser.add_argument("--devices", help="default: cpu,cuda:0")
    parser.add_argument("--profile", default=None, help="a profile JSON (default: measure)")
    parser.add_argument("--placements", type=positive_int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", type=Path, help="write the placements and latencies here")
    parser.add_argument("--measured", type=Path, help="a --save record: predict, not measure")
    parser.add_argument("--calibrate", action="store_true",
                        help="scale op times to the profile's whole-graph latencies")  # fmt: skip
    args = parser.parse_args(argv)
    if args.measured is None:
        args.model, args.devices = args.model or "resnet-50", args.devices or "cpu,cuda:0"
    scored = reread(args) if args.measured is not None else measure(args)
    rows, measured = scored.rows, scored.measured
    predicted_env = ProfiledLatency(scored.graph, scored.profile, calibrate=args.calibrate)
    predicted = np.array([predicted_env.evaluate(r, None, "runtime").makespan for r in rows])
    rho = spearmanr(predicted, measured).statistic
    print(f"{scored.model} on {scored.devices}: {len(rows)} placements, measured "
          f"{1e3 * measured.min():.2f}-{1e3 * measured.max():.2f} ms, predicted "
          f"{1e3 * predicted.min():.2f}-{1e3 * predicted.max():.2f} ms, "
          f"{scored.failures} failed; Spearman rho = {rho:.3f} "
          f"({'meets' if rho >= 0.8 else 'below'} the issue's 0.8)")  # fmt: skip
    return 0


if __name__ == "__main__":
    run_script(main)

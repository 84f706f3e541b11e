"""Measure a latency profile of paper 004's models on real devices (``ProfiledLatency``).

    python benchmarks/hsdag_profile.py --model resnet-50 --devices cpu,cuda:0 --out p.json
    python benchmarks/hsdag_profile.py --shipped      # the CPU-only profiles in dagopt/data
    python benchmarks/hsdag_profile.py --refit p.json # the transfer fit again, from its copies

Every op of the PyTorch graph of the zoo model (paper 004's inputs for its three models)
or of a saved program (``.pt2``, on its saved example inputs) is timed alone on each
device (median of 5 runs after a warm-up), so is the whole graph on each device alone
(to which ``ProfiledLatency(calibrate=True)`` scales each device's op times), and the
transfer cost ``latency + bytes / bandwidth`` is fitted to ``.to`` copies of 1 KiB to 64
MiB between the devices (``dagopt.integrations.torch_latency.profile_torch``).
``--shipped`` re-measures the profiles shipped with dagopt: devices ``cpu,cpu`` (two CPU
"devices" on the project's CPU-only machine; a copy between them is free), labelled as
CPU-only profiles. On a GPU machine, ``--devices cpu,cuda:0`` measures the profile the
paper's setting needs. ``--refit`` rewrites a profile's transfer latency and bandwidth
from the copies it recorded, with the current ``fit_transfer`` (no device needed).
"""

import time
from dataclasses import replace
from importlib import resources
from pathlib import Path

from dagopt.bench.latency_envs import PAPER_MODELS, profile_name, torch_graph_of
from dagopt.bench.script import run_script, script_parser
from dagopt.integrations.torch_latency import profile_torch
from dagopt.objectives.latency import Profile, fit_transfer


def measure(model: str, devices: list[str], out: Path, label: str) -> None:
    torch_graph, inputs = torch_graph_of(model, "profiled")
    began = time.perf_counter()
    name = Path(model).stem
    profile = profile_torch(torch_graph, devices, inputs, model=name, label=label)
    seconds = [sum(row[k] for row in profile.seconds) for k in range(len(devices))]
    totals = ", ".join(
        f"{d} {1e3 * s:.2f} ms (whole graph {1e3 * w:.2f} ms)"
        for d, s, w in zip(devices, seconds, profile.whole, strict=True)
    )
    print(f"{model}: {torch_graph.graph.num_nodes} ops, sum of op times {totals}; transfer "
          f"{1e6 * profile.latency:.1f} us + bytes / {profile.bandwidth / 1e9:.3g} GB/s; "
          f"{time.perf_counter() - began:.0f} s; wrote {profile.write(out)}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--model", help="a zoo model or a saved PyTorch program (.pt2)")
    parser.add_argument("--devices", default="cpu,cpu")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--label", default=None)
    parser.add_argument("--shipped", action="store_true", help="re-measure the shipped profiles")
    parser.add_argument("--refit", type=Path, nargs="+", help="profiles to refit (transfers)")
    args = parser.parse_args(argv)
    if args.refit:
        for path in args.refit:
            profile = Profile.read(path)
            latency, bandwidth = fit_transfer(profile.copies)
            replace(profile, latency=latency, bandwidth=bandwidth).write(path)
            print(f"{path}: transfer {1e6 * profile.latency:.1f} us + bytes / "
                  f"{profile.bandwidth / 1e9:.3g} GB/s -> {1e6 * latency:.1f} us + bytes / "
                  f"{bandwidth / 1e9:.3g} GB/s")  # fmt: skip
        return 0
    if args.shipped:
        folder = Path(str(resources.files("dagopt.data")))
        for model in PAPER_MODELS:
            label = ("CPU-only profile: two CPU 'devices' of one machine, not a CPU + GPU "
                     "(benchmarks/hsdag_profile.py --shipped)")  # fmt: skip
            measure(model, ["cpu", "cpu"], folder / profile_name(model, ["cpu", "cpu"]), label)
        return 0
    if args.model is None or args.out is None:
        parser.error("give --model and --out, or --shipped")
    devices = [d.strip() for d in args.devices.split(",")]
    measure(args.model, devices, args.out, args.label or f"measured on {args.devices}")
    return 0


if __name__ == "__main__":
    run_script(main)

"""Start-up time of the ``dagopt`` command, side by side with ``python -c "import numpy"``.

    python benchmarks/startup.py              # 5 warm runs per command
    python benchmarks/startup.py --runs 10

Each command runs as a fresh process (wall time of the whole process, median of the
runs, interleaved so that machine load hits every row alike). *cold* is the first run
with an empty numba cache (``NUMBA_CACHE_DIR`` in a new temporary folder): the kernels
compile; *warm* runs reuse that cache, as every run after the first does. The graphs
are a 100-node layered graph and a 130-op placement graph written by ``dagopt
generate`` into the temporary folder.
"""

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dagopt.bench.script import positive_int, run_script, script_parser


def _time(command: list[str], env: dict[str, str], cwd: Path) -> float:
    began = time.perf_counter()
    subprocess.run(command, env=env, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--runs", type=positive_int, default=5, help="warm runs per command")
    args = parser.parse_args(argv)
    import os

    dagopt = [sys.executable, "-m", "dagopt"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = {**os.environ, "NUMBA_CACHE_DIR": str(root / "numba-cache")}
        subprocess.run([*dagopt, "generate", "layered", "--nodes", "100", "--count", "1",
                        "--seed", "0", "--out", "g"], env=env, cwd=root, check=True,
                       capture_output=True)  # fmt: skip
        subprocess.run([*dagopt, "generate", "placement", "--count", "1", "--seed", "0",
                        "--out", "g"], env=env, cwd=root, check=True,
                       capture_output=True)  # fmt: skip
        commands = {
            'python -c "import numpy"': [sys.executable, "-c", "import numpy"],
            "dagopt --help": [*dagopt, "--help"],
            "dagopt schedule G -m lpmf": [*dagopt, "schedule", "g/layered-100-s0.json", "-m",
                                          "lpmf"],
            "dagopt schedule G -m approx-dp": [*dagopt, "schedule", "g/layered-100-s0.json",
                                               "-m", "approx-dp", "--beam-width", "100"],
            "dagopt place P -m brkga": [*dagopt, "place", "g/placement-130-s0.json", "-m",
                                        "brkga", "--evaluations", "500"],
        }  # fmt: skip
        cold = {name: _time(command, env, root) for name, command in commands.items()}
        warm: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, command in commands.items():
                warm[name].append(_time(command, env, root))
    baseline = statistics.median(warm['python -c "import numpy"'])
    print(f"{'command':34} {'cold s':>8} {'warm s':>8} {'warm / import numpy':>20}")
    for name in commands:
        median = statistics.median(warm[name])
        print(f"{name:34} {cold[name]:8.2f} {median:8.2f} {median / baseline:20.1f}")
    return 0


if __name__ == "__main__":
    run_script(main)

"""What every benchmark script shares (dagopt.bench.script): one-line errors, count types."""

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from dagopt.bench.script import (
    claim_results,
    non_negative_int,
    pattern,
    positive_float,
    positive_int,
    run_script,
    zoo_graph_key,
)
from dagopt.errors import GraphError, InputError

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize(
    ("error", "line", "status"),
    [
        (GraphError("graph has a cycle"), "error: graph has a cycle\n", 2),
        (IsADirectoryError(21, "Is a directory", "out"), "error: out: Is a directory\n", 2),
        (KeyboardInterrupt(), "error: interrupted\n", 130),
    ],
)
def test_a_user_error_is_one_line_and_its_status(error, line, status, capsys):
    def main():
        raise error

    with pytest.raises(SystemExit) as stop:
        run_script(main)
    assert stop.value.code == status and capsys.readouterr().err == line


def test_main_s_status_is_the_exit_status_and_bugs_keep_their_traceback():
    with pytest.raises(SystemExit) as stop:
        run_script(lambda: 3)
    assert stop.value.code == 3
    with pytest.raises(ZeroDivisionError):
        run_script(lambda: 1 / 0)


def test_argument_types():
    assert positive_int("4") == 4 and non_negative_int("0") == 0
    assert pattern("a.c").search("xabcx")
    for parse, text in ((positive_int, "0"), (non_negative_int, "-1"), (positive_int, "x")):
        with pytest.raises(argparse.ArgumentTypeError):
            parse(text)
    assert positive_float("0.5") == 0.5
    for text in ("0", "-1", "inf", "nan", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            positive_float(text)
    with pytest.raises(argparse.ArgumentTypeError, match="not a regular expression"):
        pattern("(")
    assert zoo_graph_key("gpt2/small/training") == "gpt2/small/training"
    with pytest.raises(argparse.ArgumentTypeError, match="unknown size 'huge'"):
        zoo_graph_key("gpt2/huge/training")


def test_results_of_other_options_are_refused(tmp_path):
    out = tmp_path / "runs.csv"
    assert not claim_results(out, {"limit": 1.0})  # new: options recorded
    out.write_text("rows\n")
    assert claim_results(out, {"limit": 1.0})  # the same options: resume
    with pytest.raises(InputError, match=r"runs.csv holds results of other options \(limit"):
        claim_results(out, {"limit": 2.0})
    assert not claim_results(out, {"limit": 2.0}, fresh=True)
    (tmp_path / "runs.csv.options.json").unlink()
    with pytest.raises(InputError, match="options were not recorded"):
        claim_results(out, {"limit": 2.0})


def test_a_benchmark_refuses_an_empty_count_and_an_output_folder(tmp_path):
    script = str(BENCHMARKS / "table1.py")
    empty = subprocess.run(
        [sys.executable, script, "--graphs", "0"], capture_output=True, text=True, check=False
    )
    assert empty.returncode == 2 and "--graphs: must be an integer >= 1" in empty.stderr
    nothing = subprocess.run(
        [sys.executable, str(BENCHMARKS / "anytime.py"), "--graphs", "0"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert nothing.returncode == 2 and "--graphs 0 without --zoo" in nothing.stderr
    folder = subprocess.run(
        [sys.executable, script, "--sizes", "12", "--beam-widths", "10", "--graphs", "1",
         "--methods", "approx-dp", "lpmf", "--out", str(tmp_path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert folder.returncode == 2
    assert folder.stderr.strip() == f"error: {tmp_path}: is a directory, not a file"

"""Every script in ``benchmarks/`` imports and parses ``--help``.

The benchmarks are long runs outside the test suite, so nothing else would notice a
script broken by a refactoring of the library (a moved or renamed import) until
someone reruns it.
"""

import importlib.util
import inspect
import subprocess
from pathlib import Path

import numpy as np
import pytest

from dagopt.bench.ordering import read_runs_csv
from dagopt.errors import InputError

SCRIPTS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"benchmark_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_there_are_benchmarks():
    assert len(SCRIPTS) >= 10


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.stem)
def test_benchmark_imports_and_parses_help(path, capsys):
    module = load(path)
    assert module.__doc__, f"{path.name} has no docstring"
    if not inspect.signature(module.main).parameters:
        return  # no options to parse
    with pytest.raises(SystemExit) as exit_info:
        module.main(["--help"])
    assert exit_info.value.code == 0
    assert "usage" in capsys.readouterr().out


def test_learning_curve_runs_resumes_and_refuses_bad_sizes(tmp_path, capsys):
    """``tgraph_learning_curve.py`` on a SYNTHETIC collection (mechanics only): a row per
    size, a rerun resumes the finished runs, and a size the pool cannot give is exit 2."""
    from dagopt.generate.tpugraphs import write_synthetic_collection

    write_synthetic_collection(
        tmp_path, "layout:xla:random", graphs={"train": 15, "valid": 3}, num_configs=16
    )
    script = load(SCRIPTS[0].parent / "tgraph_learning_curve.py")
    common = ["--data", str(tmp_path), "--work", str(tmp_path / "work"), "--epochs", "1"]
    argv = [*common, "--sizes", "5", "10", "--seeds", "0", "--tta", "1"]
    assert script.main(argv) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert [row.split(" | ")[0] for row in rows[1:]] == ["| 5", "| 10"]
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["n10_s0", "n5_s0"]
    assert script.main(argv) == 0  # resumed: the same table from the finished runs
    assert [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")] == rows
    with pytest.raises(InputError, match=r"--sizes must lie in 5\.\.12"):  # fold 0 holds 3 of 15
        script.main([*common, "--sizes", "13"])


def test_heldout_programs_rebuild_each_runs_k_fold_split(tmp_path, capsys):
    """``tgraph_heldout_programs.py`` on a SYNTHETIC collection: each fold model's mean
    over the programs the script says it held out is the validation score its training
    logged (the split is rebuilt, not guessed); a run against itself gains 0;
    ``--exclude`` leaves named programs out, and an unknown name, like unpaired runs, is
    exit 2."""
    from dagopt.generate.tpugraphs import write_synthetic_collection
    from dagopt.nn.tgraph.config import TGraphConfig
    from dagopt.train.tgraph import (
        TGraphTrainConfig,
        fold_of,
        load_graphs,
        read_metrics,
        train_tgraph,
    )

    write_synthetic_collection(tmp_path, "layout:xla:random", graphs={"train": 8}, num_configs=16)
    config = TGraphTrainConfig(
        collection="layout:xla:random", data=str(tmp_path), splits=["train"], epochs=1,
        folds=4, train_folds=2, keep_folds=2, validation_permutations=1, seed=3,
        model=TGraphConfig(kind="layout", hidden=16),
    )  # fmt: skip
    run = tmp_path / "run"
    train_tgraph(run, config)
    script = load(SCRIPTS[0].parent / "tgraph_heldout_programs.py")
    scores = script.held_out_scores(run, None, tta=1)
    graphs = load_graphs(tmp_path, "layout:xla:random", ["train"])
    fold = fold_of(graphs, 4, 3)
    assert set(scores) == {g.name for g, f in zip(graphs, fold, strict=True) if f < 2}
    for k in (0, 1):
        held = [scores[g.name] for g, f in zip(graphs, fold, strict=True) if f == k]
        logged = max(row.best_validation_score for row in read_metrics(run / f"fold-{k}"))
        assert np.mean(held) == pytest.approx(logged, abs=1e-9)
    assert script.main(["--before", str(run), "--after", str(run), "--tta", "1"]) == 0
    row = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 4 ")]
    assert row and "+0.0000" in row[0].split(" | ")[-1]
    left_out = sorted(scores)[0]
    both = ["--before", str(run), "--after", str(run), "--tta", "1", "--per-graph"]
    assert script.main([*both, "--exclude", left_out]) == 0
    out = capsys.readouterr().out
    assert any(line.startswith("| 3 ") for line in out.splitlines()) and left_out not in out
    assert script.main([*both, "--exclude", "no-such-program"]) == 2
    with pytest.raises(SystemExit) as exit_info:
        script.main(["--before", str(run), str(run), "--after", str(run)])
    assert exit_info.value.code == 2


def test_table2_tgraph_columns_take_width_and_blocks():
    """``tgraph_table2.py``'s TGraph columns are ``--hidden`` wide and ``--blocks`` deep;
    the baseline columns keep the official sizes."""
    import argparse

    script = load(SCRIPTS[0].parent / "tgraph_table2.py")
    args = argparse.Namespace(
        hidden=64, blocks=4, numeric_features="log", physical_layout=True,
        readout="mean", tile_extents=False,
    )  # fmt: skip
    config = script.model_config("tgraph", "layout", args)
    assert (config.hidden, config.blocks, config.physical_layout) == (64, 4, True)
    assert script.model_config("tgraph-no-cross", "tile", args).blocks == 4
    baseline = script.model_config("baseline", "layout", args)
    assert (baseline.hidden, baseline.blocks) == (32, 2)


def test_configs_dataset_refuses_a_folder_git_does_not_track(tmp_path, capsys):
    module = load(next(p for p in SCRIPTS if p.stem == "configs_dataset"))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    (tmp_path / "kept.npz").write_bytes(b"")
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "kept.npz"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "data"], cwd=tmp_path, check=True)
    assert module.files_at(tmp_path, "HEAD") == {Path("kept.npz")}
    (tmp_path / "copy").mkdir()
    with pytest.raises(SystemExit) as exit_info:
        module.files_at(tmp_path / "copy", "HEAD")
    assert exit_info.value.code == 2
    assert "has no files under" in capsys.readouterr().err


def test_table2_adds_anytime_and_resumes(tmp_path, capsys):
    """``table2.py --anytime`` runs dagopt's anytime on a real zoo graph beside the
    paper's methods, counts it among dagopt's methods, and a rerun reuses every run;
    a rerun under another time limit is a one-line error that leaves the CSV as it was."""
    script = load(SCRIPTS[0].parent / "table2.py")
    out = tmp_path / "table2.csv"
    argv = [
        "--models", "squeezenet-1.1", "--sizes", "small", "--modes", "training",
        "--anytime", "0.5", "--cache-dir", str(tmp_path / "zoo"), "--out", str(out),
    ]  # fmt: skip
    assert script.main(argv) == 0
    printed = capsys.readouterr().out
    assert "| anytime |" in printed and "anytime % / s" in printed
    assert "best dagopt method (approx-dp, anchored-dp, anytime) <= inductor on 1/1" in printed
    runs = out.read_text()
    peaks = {run.method: run.peak_memory for run in read_runs_csv(runs)}
    assert peaks["anytime"] <= peaks["inductor"]
    assert script.main(argv) == 0  # resumed: nothing new to run
    assert out.read_text() == runs
    other = [*argv[:7], "1.0", *argv[8:]]  # another --anytime limit: not mixed in
    assert script.main(other) == 2
    assert "anytime differs" in capsys.readouterr().err.replace("\n", " ")
    assert out.read_text() == runs


def test_table2_takes_autograd_operator_graphs_apart(tmp_path, capsys):
    """``--split-outputs --no-core-aten`` benchmarks the zoo graphs exported that way
    (fewer nodes than core ATen); their runs are not mixed with the default graphs'."""
    script = load(SCRIPTS[0].parent / "table2.py")
    out = tmp_path / "table2.csv"
    argv = [
        "--models", "squeezenet-1.1", "--sizes", "small", "--modes", "training",
        "--cache-dir", str(tmp_path / "zoo"), "--out", str(out),
    ]  # fmt: skip
    assert script.main([*argv, "--split-outputs", "--no-core-aten"]) == 0
    capsys.readouterr()
    (ops,) = {run.size for run in read_runs_csv(out.read_text())}
    assert script.main(argv) == 2
    assert "core_aten, split_outputs differ" in capsys.readouterr().err.replace("\n", " ")
    assert script.main([*argv, "--out", str(tmp_path / "core.csv")]) == 0
    (core,) = {run.size for run in read_runs_csv((tmp_path / "core.csv").read_text())}
    assert ops < core


def test_time_limits_times_each_method_once_per_limit(tmp_path, capsys):
    """``time_limits.py`` on a graph file: a row per method and limit, in order, then a
    row per placer, objective and limit (how long each ran is the benchmark's to report,
    not a test's to assert)."""
    from dagopt.generate import generate_layered
    from dagopt.io import write_graph_json

    path = write_graph_json(generate_layered(200, seed=3), tmp_path / "g.json")
    script = load(SCRIPTS[0].parent / "time_limits.py")
    argv = ["--graph", str(path), "--limits", "0.1", "0.2", "--methods", "anytime", "dfs-dp",
            "--placers", "brkga", "--objectives", "runtime", "peak-memory"]  # fmt: skip
    assert script.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split(" | ") for line in lines if line.startswith("| ") and "---" not in line]
    assert [tuple(row[:2]) for row in rows[1:5]] == [
        ("| anytime", "0.1"), ("| anytime", "0.2"), ("| dfs-dp", "0.1"), ("| dfs-dp", "0.2"),
    ]  # fmt: skip
    assert [tuple(row[:3]) for row in rows[6:]] == [
        ("| brkga", "runtime", "0.1"), ("| brkga", "runtime", "0.2"),
        ("| brkga", "peak-memory", "0.1"), ("| brkga", "peak-memory", "0.2"),
    ]  # fmt: skip
    assert rows[0][0] == "| method" and rows[5][0] == "| placer" and rows[5][-1] == "groups |"
    assert all(row[-1].strip() == "|" for row in rows[6:])  # BRKGA places ops, not groups


def test_reference_models_learn_layout_rankings_from_real_programs(tmp_path, capsys):
    """``tgraph_reference_models.py`` on eight measured ``xla`` random programs: one row
    per configuration holding its layouts, a booster that ranks two held-out programs
    well above chance (shuffled runtimes would give about 0), and one row layout per
    collection: programs with another number of configurable nodes are an error."""
    from shutil import copy

    from dagopt.train.tgraph import load_graphs

    source = Path(__file__).resolve().parents[1] / "datasets" / "configs" / "npz" / "layout"
    for split, count in (("train", 8), ("valid", 2)):
        target = tmp_path / "npz" / "layout" / "xla" / "random" / split
        target.mkdir(parents=True)
        for path in sorted((source / "xla" / "random" / split).glob("*.npz"))[:count]:
            copy(path, target)
    script = load(SCRIPTS[0].parent / "tgraph_reference_models.py")
    graphs = load_graphs(tmp_path, "layout:xla:random", ["train"])
    rows = script.configuration_rows(graphs[0])
    layouts = graphs[0].configs(np.arange(graphs[0].num_configs)).flatten(1).numpy()
    assert rows.shape[0] == graphs[0].num_configs
    assert any(np.array_equal(rows[:, j], layouts[:, 0]) for j in range(rows.shape[1]))
    booster, _ = script.fit(graphs, rounds=50, threads=1)
    valid = load_graphs(tmp_path, "layout:xla:random", ["valid"])
    assert script.booster_scores(booster, valid).mean() > 0.3
    args = ["--data", str(tmp_path), "--collections", "layout:xla:random", "--rounds", "5"]
    assert script.main([*args, "--threads", "1"]) == 0
    assert "| layout:xla:random | 2 | 8 |" in capsys.readouterr().out
    nlp = sorted((source / "nlp" / "random" / "train").glob("*.npz"))[0]
    (tmp_path / "npz" / "layout" / "xla" / "random" / "train" / nlp.name).write_bytes(
        nlp.read_bytes()
    )
    with pytest.raises(InputError, match="different numbers of configurable nodes"):
        script.design(load_graphs(tmp_path, "layout:xla:random", ["train"]))
    with pytest.raises(InputError, match="other numbers of configurable nodes"):
        script.booster_scores(
            booster,
            [
                g
                for g in load_graphs(tmp_path, "layout:xla:random", ["train"])
                if g.name == nlp.stem
            ],
        )


def test_remeasure_compares_two_timings_of_the_same_programs(tmp_path, capsys):
    """``configs_remeasure.py``: programs in both roots are paired by name; the same
    configurations timed twice give the runtime ratio and Kendall's tau between the two
    timings (a ranking reversed is -1), and roots with no program in common are an
    error."""
    from dataclasses import replace

    from dagopt.io.tpugraphs import read_tpugraphs, write_tpugraphs

    source = Path(__file__).resolve().parents[1] / "datasets" / "configs" / "npz" / "layout"
    paths = sorted((source / "xla" / "random" / "valid").glob("*.npz"))[:2]
    for root in ("a", "b"):
        (tmp_path / root / "npz" / "layout" / "xla" / "random" / "valid").mkdir(parents=True)
    for path in paths:
        record = read_tpugraphs(path)
        write_tpugraphs(
            record, tmp_path / "a" / "npz" / "layout" / "xla" / "random" / "valid" / path.name
        )
        runtime = record.config_runtime
        slower = 2 * runtime.max() - runtime + runtime.min()  # the order reversed, ratio > 1
        write_tpugraphs(
            replace(record, config_runtime=slower),
            tmp_path / "b" / "npz" / "layout" / "xla" / "random" / "valid" / path.name,
        )
    script = load(SCRIPTS[0].parent / "configs_remeasure.py")
    args = ["--recorded", str(tmp_path / "a"), "--remeasured", str(tmp_path / "b")]
    args += ["--collections", "layout:xla:random", "--split", "valid", "--per-graph"]
    script.main(args)
    out = capsys.readouterr().out
    assert "| layout:xla:random | 2 |" in out and "-1.000 [-1.000, -1.000]" in out
    rows, _ = script.compare(tmp_path / "a", tmp_path / "b", "layout:xla:random", "valid", False)
    assert all(r["ratio"] > 1 and r["cross_tau"] == -1 for r in rows)
    with pytest.raises(InputError, match="no program is in both roots"):
        script.compare(tmp_path / "a", tmp_path / "b", "layout:xla:random", "train", False)


def test_export_sweep_predicts_split_training_graphs_exactly(tmp_path, capsys):
    """``export_sweep.py`` on SqueezeBERT (grouped 1-D convolutions): the inference graph,
    the split training graph and the saved program written back and run from its file
    predict the measured peak of their traced order exactly, the joint training graph
    above it (its convolution backward and batch norm tuples hold their activations
    with outputs kept to the end); the table is also written to ``--out``, and an
    unknown architecture is one ``error:`` line and exit 2."""
    script = load(SCRIPTS[0].parent / "export_sweep.py")
    out = tmp_path / "sweep.md"
    assert script.main(["--models", "SqueezeBert", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    rows = [line.split(" | ") for line in printed.splitlines() if line.startswith("| Squeeze")]
    gaps = {row[1]: float(row[5].rstrip(" |")) for row in rows}
    assert gaps["inference"] == 0.0 and gaps["training, split"] == 0.0
    assert gaps["inference, saved .pt2"] == 0.0
    assert gaps["training, joint"] > 1.0
    assert out.read_text().splitlines()[2].startswith("| SqueezeBert | inference |")
    assert "training, split: predicted = measured (within 0.01 %) on 1 of 1" in printed
    with pytest.raises(SystemExit) as exit_info:
        script.run_script(lambda: script.main(["--models", "Bert"]))
    assert exit_info.value.code == 2
    assert "unknown architectures ['Bert']" in capsys.readouterr().err


def test_saved_programs_run_their_orders_as_predicted(capsys):
    """``saved_programs.py`` on SqueezeNet 1.1: the eval-mode file and the file written
    back in ``anytime``'s order, and the training graph of the train-mode file in both
    orders, each measure exactly their predicted peak; an unknown model is one
    ``error:`` line and exit 2."""
    script = load(SCRIPTS[0].parent / "saved_programs.py")
    assert script.main(["--models", "squeezenet-1.1", "--time-limit", "0.5"]) == 0
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines()]
    rows = [row for row in rows if row[0] == "| squeezenet-1.1"]
    assert [row[1] for row in rows] == [
        "inference (.pt2 files run)",
        "training, split (joint graph run)",
    ]
    for row in rows:
        assert row[5] == row[6] and row[7] == row[8], row  # predicted = measured
        assert float(row[9].rstrip(" |")) <= 0.0
    with pytest.raises(SystemExit) as exit_info:
        script.run_script(lambda: script.main(["--models", "alexnet"]))
    assert exit_info.value.code == 2
    assert "alexnet" in capsys.readouterr().err

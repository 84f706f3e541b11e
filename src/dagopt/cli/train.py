"""``dagopt train``: resumable training runs with progress and a metrics log."""

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from dagopt.cli.batch import JobsOpt, RayOpt
from dagopt.cli.output import check_output, console, progress_bar
from dagopt.cli.settings import merge_option, parse_settings
from dagopt.errors import InputError

train_app = typer.Typer(help="Train the learned models (resumable).", no_args_is_help=True)

RunDirOpt = Annotated[Path, typer.Option("--run-dir", help="Directory of the run.")]
ResumeOpt = Annotated[bool, typer.Option("--resume", help="Continue the run in RUN_DIR.")]
ThreadsOpt = Annotated[
    int | None, typer.Option(min=1, help="torch CPU threads.", show_default=False)
]
SettingsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="KEY=VALUE",
        help="Top-level training option, overriding --config's (a new run; repeatable).",
    ),
]


def _run(
    train: Callable[..., Any],
    run_dir: Path,
    config: Any,
    resume: bool,
    describe: Callable[[Any], str],
    saved: str = "model.pt, metrics.csv, learning_curve.png",
    **options: Any,
) -> None:
    """Run ``train`` (a ``dagopt.train`` entry point) with a progress bar and one line
    per epoch (``describe``) on stdout; the last line names the ``saved`` files."""
    with progress_bar() as bar:
        task = bar.add_task("preparing", total=None)

        def progress(stage: str, done: int, total: int) -> None:
            bar.update(task, total=total, completed=done, description=stage)

        def on_epoch(metrics: Any) -> None:
            console.print(describe(metrics), markup=False)

        train(run_dir, config, resume=resume, progress=progress, on_epoch=on_epoch, **options)
    console.print(f"run saved in {run_dir} ({saved})", markup=False)


def _training_config(
    cls: type,
    config: Path | None,
    overrides: dict[str, Any],
    resume: bool,
    run_dir: Path,
    adjust: Callable[[dict[str, Any]], dict[str, Any]] = lambda merged: merged,
) -> Any:
    """The run's config: ``--config`` (else, resuming, the run's own ``config.json``;
    else the defaults) with ``overrides`` on top, ``adjust``-ed; None when resuming with
    neither (the run's own config is used). A resumed run refuses a config that differs
    from its own (``rundir.open_run``), so ``--resume --set K=V`` passes only where V is
    the run's value."""
    from dagopt.configs import read_config
    from dagopt.train.rundir import CONFIG_FILE

    cfg = read_config(config, cls) if config is not None else None
    if cfg is None and resume and overrides and (run_dir / CONFIG_FILE).is_file():
        cfg = read_config(run_dir / CONFIG_FILE, cls)
    if overrides or (cfg is None and not resume):
        cfg = cls.from_dict(adjust({**(cfg or cls()).to_dict(), **overrides}))
    return cfg


def _set_threads(threads: int | None) -> None:
    if threads is not None:
        import torch

        torch.set_num_threads(threads)


@train_app.command()
def ordering(
    run_dir: RunDirOpt,
    config: Annotated[
        Path | None, typer.Option("--config", help="JSON training config (see docs/neural.md).")
    ] = None,
    resume: ResumeOpt = False,
    threads: ThreadsOpt = None,
) -> None:
    """Topoformer ordering policy, REINFORCE with a greedy-rollout baseline (paper 000, 4.3)."""
    _set_threads(threads)
    from dagopt.train.ordering import EpochMetrics, OrderingTrainConfig, train_ordering

    cfg = _training_config(OrderingTrainConfig, config, {}, resume, run_dir)

    def describe(m: EpochMetrics) -> str:
        mark = " (baseline updated)" if m.baseline_updated else ""
        return (
            f"epoch {m.epoch}: train {m.train_cost:.4g} "
            f"(baseline {m.train_baseline_cost:.4g}), "
            f"validation greedy {m.validation_cost:.4g}, best {m.baseline_validation_cost:.4g}"
            f"{mark}, {m.seconds:.0f} s"
        )

    _run(train_ordering, run_dir, cfg, resume, describe)


@train_app.command()
def placement(
    run_dir: RunDirOpt,
    objective: Annotated[
        str | None,
        typer.Option(
            help="runtime or peak-memory (a new run; overrides --config's).", show_default=False
        ),
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="JSON training config (see docs/placement.md).")
    ] = None,
    settings: SettingsOpt = None,
    resume: ResumeOpt = False,
    threads: ThreadsOpt = None,
    jobs: JobsOpt = 1,
    ray: RayOpt = None,
) -> None:
    """REGAL policy for BRKGA's mutant distributions, REINFORCE (paper 003, section 2.3).

    --jobs / --ray run the BRKGA runs (references, rewards) on local processes or Ray
    workers; the learner stays here (docs/scaling.md)."""
    _set_threads(threads)
    from dagopt.executor import Executor
    from dagopt.train.regal.config import RegalTrainConfig
    from dagopt.train.regal.trainer import RegalEpoch, train_regal

    overrides = parse_settings(settings or [])
    merge_option(overrides, "objective", "--objective", objective)
    cfg = _training_config(RegalTrainConfig, config, overrides, resume, run_dir)

    def describe(m: RegalEpoch) -> str:
        mark = " (saved model.pt)" if m.improved else ""
        return (
            f"epoch {m.epoch}: train H(G,D)/H(G,U) {m.train_ratio:.4f}, "
            f"validation {m.validation_ratio:.4f}, best {m.best_validation_ratio:.4f}, "
            f"entropy {m.entropy:.3f}{mark}, {m.seconds:.0f} s"
        )

    executor = Executor(jobs=jobs, ray=ray)
    _run(train_regal, run_dir, cfg, resume, describe, executor=executor)


@train_app.command()
def brkga(
    objective: Annotated[str, typer.Option(help="runtime or peak-memory.")],
    graphs: Annotated[int, typer.Option(min=1, help="Training graphs (seeds 0..N-1).")] = 10,
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="JSON file of tuned parameters (an existing one keeps its other objective).",
        ),
    ] = Path("brkga-tuned.json"),
) -> None:
    """Tune BRKGA's hyper-parameters by grid search on training graphs (003 section 3.2).

    `dagopt place --method brkga-tuned --set params=OUT` uses the result. Each setting's
    result is kept in OUT.partial.json until the search ends: an interrupted search
    run again with the same options resumes there."""
    import time

    from dagopt.generate.placement import generate_placement
    from dagopt.place.tuning import GRID, grid_search, read_tuned_file, write_tuned

    check_output(out)  # a file that cannot be updated fails now, not after the search
    read_tuned_file(out)
    began = time.perf_counter()
    training = [generate_placement(seed=s) for s in range(graphs)]
    with progress_bar() as bar:
        task = bar.add_task(f"grid search ({objective})", total=None)
        partial = out.with_name(out.name + ".partial.json")
        best, table = grid_search(
            training,
            objective,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
            checkpoint=partial,
        )
    ranked = sorted(table, key=lambda row: row[1])
    meta = {
        "graphs": f"generate_placement seeds 0..{graphs - 1}",
        "grid": {k: list(v) for k, v in GRID.items()},
        "mean_ratio_to_default": ranked[0][1],
        "seconds": round(time.perf_counter() - began, 1),
    }
    path = write_tuned(out, objective, best, meta)
    partial.unlink(missing_ok=True)
    for params, ratio in ranked[:5]:
        console.print(f"{ratio:.4f}  {params}", markup=False)
    console.print(f"best for {objective}: {best}; wrote {path}", markup=False)


@train_app.command()
def tgraph(
    run_dir: RunDirOpt,
    collection: Annotated[
        str | None,
        typer.Option(help="TpuGraphs collection, e.g. layout:xla:random or tile:xla (a new run)."),
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option("--data", help="Folder that holds the dataset's npz/ (a new run)."),
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="JSON training config (see docs/tgraph.md).")
    ] = None,
    settings: SettingsOpt = None,
    resume: ResumeOpt = False,
    threads: ThreadsOpt = None,
) -> None:
    """TGraph configuration ranker, K-fold with a fold ensemble (paper 002, section 2.4)."""
    _set_threads(threads)
    from dagopt.train.tgraph import TGraphEpoch, TGraphTrainConfig, train_tgraph

    overrides = parse_settings(settings or [])
    merge_option(overrides, "collection", "--collection", collection)
    merge_option(overrides, "data", "--data", None if data is None else str(data))
    if not resume and config is None and "collection" not in overrides:
        raise InputError("--collection is required for a new run (e.g. layout:xla:random)")

    def model_follows_collection(merged: dict[str, Any]) -> dict[str, Any]:
        """The model's kind follows --collection unless --set model=... names one."""
        model, given = merged["model"], overrides.get("model")
        named = isinstance(given, dict) and "kind" in given
        if collection is not None and isinstance(model, dict) and not named:
            return {**merged, "model": {**model, "kind": collection.split(":")[0]}}
        return merged

    cfg = _training_config(
        TGraphTrainConfig, config, overrides, resume, run_dir, model_follows_collection
    )

    def describe(m: TGraphEpoch) -> str:
        return (
            f"fold {m.fold} epoch {m.epoch}: {m.steps} steps, train loss {m.train_loss:.4f}, "
            f"validation {m.validation_score:.4f}, best {m.best_validation_score:.4f}, "
            f"{m.seconds:.0f} s"
        )

    per_fold = "model.pt; per fold in fold-K/: model.pt, metrics.csv, learning_curve.png"
    _run(train_tgraph, run_dir, cfg, resume, describe, saved=per_fold)


@train_app.command("tgraph-ensemble")
def tgraph_ensemble(
    models: Annotated[
        list[Path],
        typer.Argument(
            metavar="MODEL...", help="TGraph model files: runs' model.pt (two or more)."
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="The merged model file.")],
) -> None:
    """Merge trained TGraph models into one ensemble that averages all their members.

    Say, one recipe's runs with other seeds: the fold ensemble of paper 002, section
    2.5.3, over more folds than one run keeps."""
    from dagopt.nn.checkpoint import save_model
    from dagopt.rank.tgraph import merge_rankers

    check_output(out, *models)
    ensemble, meta = merge_rankers(models)
    save_model(out, ensemble, meta)
    console.print(f"wrote {out}: {len(ensemble.members)} members of {len(models)} models")

"""``dagopt train``: resumable training runs with progress and a metrics log."""

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from dagopt.cli.output import console, err_console

train_app = typer.Typer(help="Train the learned models (resumable).", no_args_is_help=True)


@train_app.command()
def ordering(
    run_dir: Annotated[Path, typer.Option("--run-dir", help="Directory of the run.")],
    config: Annotated[
        Path | None, typer.Option("--config", help="JSON training config (see docs/neural.md).")
    ] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the run in RUN_DIR.")] = False,
    threads: Annotated[
        int | None, typer.Option(min=1, help="torch CPU threads.", show_default=False)
    ] = None,
) -> None:
    """Topoformer ordering policy, REINFORCE with a greedy-rollout baseline (paper 000, 4.3)."""
    import torch

    if threads is not None:
        torch.set_num_threads(threads)
    from dagopt.train.config import OrderingTrainConfig, load_config
    from dagopt.train.ordering import EpochMetrics, train_ordering

    cfg = load_config(config) if config is not None else None
    if cfg is None and not resume:
        cfg = OrderingTrainConfig()
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err_console) as progress:
        task = progress.add_task("epoch", total=None)

        def on_batch(epoch: int, batch: int, batches: int, mean_cost: float) -> None:
            progress.update(
                task,
                total=batches,
                completed=batch,
                description=f"epoch {epoch}: mean sampled peak {mean_cost:.4g}",
            )

        def on_epoch(m: EpochMetrics) -> None:
            mark = " (baseline updated)" if m.baseline_updated else ""
            console.print(
                f"epoch {m.epoch}: train {m.train_cost:.4g} "
                f"(baseline {m.train_baseline_cost:.4g}), "
                f"validation greedy {m.validation_cost:.4g}, best {m.baseline_validation_cost:.4g}"
                f"{mark}, {m.seconds:.0f} s",
                markup=False,
            )

        train_ordering(run_dir, cfg, resume=resume, on_batch=on_batch, on_epoch=on_epoch)
    console.print(f"run saved in {run_dir} (model.pt, metrics.csv, learning_curve.png)")

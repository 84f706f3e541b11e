"""What every script under ``benchmarks/`` shares: argument types and the way it ends.

``run_script(main)`` runs a script's ``main`` as the ``dagopt`` command runs a command:
a user error (``DagoptError``: a bad graph, an impossible request; ``OSError``: a
missing or unwritable file) is one line ``error: <message>`` on stderr and exit status
2, Ctrl-C is ``error: interrupted`` and 130, and ``main``'s return value is the status
otherwise. ``script_parser`` describes a script by its docstring. ``positive_int`` and
``non_negative_int`` are ``argparse`` types for counts, so that ``--graphs 0`` is
refused up front instead of printing an empty table; ``positive_float`` one for time
limits, ``pattern`` one for regular expressions, ``zoo_graph_key`` one for zoo graph
keys; ``add_zoo_search_options`` and ``check_zoo_models`` are the ``--models`` and
``--time-limit`` of the scripts that order zoo models with ``anytime``.
``claim_results`` keeps a script that resumes from its ``--out`` from mixing results of
other options into a new table.
"""

import argparse
import json
import math
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from dagopt.configs import changed_options
from dagopt.errors import DagoptError, InputError, is_interrupt
from dagopt.io.atomic import write_text_atomic
from dagopt.io.json import read_json_file

#: Exit statuses, as the ``dagopt`` command's (``dagopt.cli.main``).
USER_ERROR_EXIT, INTERRUPTED_EXIT = 2, 130


def script_parser(doc: str) -> argparse.ArgumentParser:
    """The argument parser of a script whose module docstring is ``doc``: its ``--help``
    describes the script with the docstring's whole first paragraph."""
    return argparse.ArgumentParser(description=doc.split("\n\n")[0])


def _number(
    text: str,
    convert: Callable[[str], Any],
    noun: str,
    accept: Callable[[Any], bool],
    requirement: str,
) -> Any:
    """``text`` as ``convert`` reads it, if ``accept`` takes it; else an
    ``ArgumentTypeError`` saying it is not ``noun`` or must be ``requirement``."""
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {noun}") from None
    if not accept(value):
        raise argparse.ArgumentTypeError(f"must be {requirement}, got {text}")
    return value


def _integer(text: str, least: int) -> int:
    return _number(text, int, "an integer", lambda v: v >= least, f"an integer >= {least}")


def positive_int(text: str) -> int:
    """An ``argparse`` type: an integer >= 1 (a count of graphs, runs, threads...)."""
    return _integer(text, 1)


def non_negative_int(text: str) -> int:
    """An ``argparse`` type: an integer >= 0."""
    return _integer(text, 0)


def positive_float(text: str) -> float:
    """An ``argparse`` type: a finite number > 0 (a time limit in seconds...)."""
    return _number(
        text, float, "a number", lambda v: math.isfinite(v) and v > 0, "a finite number > 0"
    )


def non_negative_float(text: str) -> float:
    """An ``argparse`` type: a finite number >= 0 (a time limit that 0 turns off...)."""
    return _number(
        text, float, "a number", lambda v: math.isfinite(v) and v >= 0, "a finite number >= 0"
    )


def zoo_graph_key(text: str) -> str:
    """An ``argparse`` type: a zoo graph key ``model/size/mode`` of a known model, size
    and mode (``dagopt.zoo.parse_zoo_key``)."""
    from dagopt.zoo import parse_zoo_key

    try:
        parse_zoo_key(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def pattern(text: str) -> re.Pattern:
    """An ``argparse`` type: a regular expression (a bad one is a usage error)."""
    try:
        return re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError(f"not a regular expression: {exc}") from None


def add_ordering_graph_arguments(parser: argparse.ArgumentParser) -> None:
    """The graph sources of the ordering benchmarks (``anytime.py``,
    ``ordering_headroom.py``): zoo graphs, their cache, and which layered seeds."""
    parser.add_argument(
        "--zoo", type=zoo_graph_key, nargs="*", default=[], help="zoo graphs, model/size/mode"
    )
    parser.add_argument("--zoo-cache", help="zoo cache folder (default: dagopt's)")
    parser.add_argument(
        "--split",
        choices=["test", "validation"],
        default="test",
        help="layered graphs: held-out test seeds (tables) or validation seeds (tuning)",
    )


def add_reduced_training_arguments(
    parser: argparse.ArgumentParser, *, epochs: int, epoch_graphs: int
) -> None:
    """The arguments of the paper 000 ablations that train Topoformers at a reduced
    budget (``table3.py``, ``table4.py``): the base config, the budget, and the held-out
    test sizes with their reference beam widths."""
    parser.add_argument("--base-config", default="checkpoints/topoformer-ordering/config.json")
    parser.add_argument("--epochs", type=positive_int, default=epochs)
    parser.add_argument("--graph-nodes", type=positive_int, default=100)
    parser.add_argument("--epoch-graphs", type=positive_int, default=epoch_graphs)
    parser.add_argument("--test-nodes", type=positive_int, nargs="+", default=[500, 1000])
    parser.add_argument("--graphs", type=positive_int, default=5)
    parser.add_argument("--beam-widths", type=positive_int, nargs="+", default=[100_000, 10_000])


def claim_results(out: Path, options: dict[str, Any], *, fresh: bool = False) -> bool:
    """Whether the results already in ``out`` (a CSV a script resumes from) may be
    reused: they were made with the same ``options`` (the arguments that change a
    result), recorded beside them in ``OUT.options.json``. A new or ``fresh`` ``out``
    records ``options`` and returns False; results of other or unrecorded options are
    an ``InputError`` naming what differs (a rerun would print them under the new
    options' header)."""
    if out.is_dir():
        raise InputError(f"{out}: is a directory, not a file")
    record = out.with_name(out.name + ".options.json")
    given = json.loads(json.dumps(options, default=str))  # as the file holds them
    if out.exists() and not fresh:
        if not record.exists():
            raise InputError(
                f"{out}: its results' options were not recorded ({record.name} is missing); "
                "pass --fresh or give another --out"
            )
        changed = changed_options(given, read_json_file(record))
        if changed:
            raise InputError(
                f"{out} holds results of other options ({changed} from {record.name}); "
                "pass --fresh or give another --out"
            )
        return True
    write_text_atomic(record, json.dumps(given, indent=1) + "\n")
    return False


def add_zoo_search_options(parser: argparse.ArgumentParser, models: Sequence[str]) -> None:
    """``--models`` (zoo model names, ``models`` by default) and ``--time-limit`` (seconds
    of ``anytime``, 10 by default)."""
    parser.add_argument("--models", nargs="+", default=list(models), help="zoo models")
    parser.add_argument("--time-limit", type=positive_float, default=10.0, help="anytime, s")


def check_zoo_models(names: Sequence[str]) -> None:
    """An unknown zoo model name is an ``InputError`` here, before any export."""
    from dagopt.zoo import get_model

    for name in names:
        get_model(name)


def run_script(main: Callable[[], int | None]) -> NoReturn:
    """Exit with ``main()``'s status, or with one ``error:`` line (module docstring)."""
    try:
        status = main()
    except (DagoptError, OSError) as exc:
        where = f"{exc.filename}: " if isinstance(exc, OSError) and exc.filename else ""
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        sys.stderr.write(f"error: {where}{' '.join(str(reason).split())}\n")
        sys.exit(USER_ERROR_EXIT)
    except (KeyboardInterrupt, SystemError) as exc:
        if not is_interrupt(exc):
            raise
        sys.stderr.write("error: interrupted\n")
        sys.exit(INTERRUPTED_EXIT)
    sys.exit(status or 0)

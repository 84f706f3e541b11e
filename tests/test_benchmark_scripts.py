"""Every script in ``benchmarks/`` imports and parses ``--help``.

The benchmarks are long runs outside the test suite, so nothing else would notice a
script broken by a refactoring of the library (a moved or renamed import) until
someone reruns it.
"""

import importlib.util
import inspect
from pathlib import Path

import pytest

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

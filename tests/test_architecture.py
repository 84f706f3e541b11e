"""The layer contracts of docs/architecture.md, enforced by import-linter (pyproject.toml)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN_LINT_IMPORTS = (
    "import sys; from importlinter.cli import lint_imports; "
    "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True))"
)


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` on the package under ``root/src`` with ``root/pyproject.toml``."""
    return subprocess.run(
        [sys.executable, "-c", RUN_LINT_IMPORTS],
        cwd=root,
        env={"PYTHONPATH": str(root / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_package_keeps_its_layers():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "wrong_import", "message"),
    [
        ("nn/regal/config.py", "import dagopt.place.prior", "dagopt.nn is not allowed"),
        ("io/json.py", "import dagopt.schedule", "dagopt.io is not allowed"),
        ("graph/core.py", "import dagopt.objectives", "dagopt.graph is not allowed"),
    ],
)
def test_a_wrong_import_breaks_the_contract(tmp_path, module, wrong_import, message):
    shutil.copytree(ROOT / "src" / "dagopt", tmp_path / "src" / "dagopt")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "src" / "dagopt" / module
    target.write_text(target.read_text() + f"\n{wrong_import}  # deliberately wrong\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert message in result.stdout and "0 kept, 1 broken" in result.stdout


def test_every_module_of_the_package_has_a_layer():
    """A new subpackage must be placed in the contract, or nothing checks its imports."""
    import pkgutil
    import tomllib

    import dagopt

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (contract,) = config["tool"]["importlinter"]["contracts"]
    layered = {name.strip() for layer in contract["layers"] for name in layer.split("|")}
    modules = {f"dagopt.{m.name}" for m in pkgutil.iter_modules(dagopt.__path__)}
    assert modules - {"dagopt.__main__"} == layered

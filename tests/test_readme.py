"""The README's commands run as written, in order, from an empty folder."""

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_commands() -> list[list[str]]:
    """Every ``dagopt ...`` command of the README's shell code blocks, in order (a
    ``&&`` chain counts its ``dagopt`` parts; comments are dropped)."""
    commands, fence = [], None
    for line in README.read_text().splitlines():
        if line.startswith("```"):
            fence = None if fence is not None else line[3:].strip()
        elif fence == "":  # a plain block: shell commands
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                if words[:1] == ["dagopt"]:
                    commands.append(words[1:])
    return commands


def test_the_readme_has_commands_to_run():
    commands = readme_commands()
    assert commands[0] == ["demo"] and ["examples", "--out", "."] in commands
    assert len(commands) >= 20


@pytest.mark.slow
def test_every_readme_command_runs_in_order_in_an_empty_folder(tmp_path):
    env = {**os.environ, "DAGOPT_ZOO_CACHE": str(tmp_path / "zoo-cache")}
    for command in readme_commands():
        result = subprocess.run(
            [sys.executable, "-m", "dagopt", *command],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        shown = "dagopt " + " ".join(command)
        assert result.returncode == 0, f"{shown}\n{result.stdout}\n{result.stderr}"

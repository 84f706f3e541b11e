"""The ``dagopt`` console entry point.

Ctrl-C while the package still imports (before a command runs) exits 130 with one
line, as Ctrl-C inside a command does (``dagopt.cli.main``).
"""

import sys


def main() -> None:
    """Run the ``dagopt`` application."""
    try:
        from dagopt.cli.main import app

        app(prog_name="dagopt")
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        sys.exit(130)

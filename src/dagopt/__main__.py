"""``python -m dagopt``: the same as the ``dagopt`` command."""

from dagopt.cli.main import app

app(prog_name="dagopt")

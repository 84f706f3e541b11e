"""``python -m dagopt``: the same as the ``dagopt`` command."""

from dagopt.cli.entry import main

main()

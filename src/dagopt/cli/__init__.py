"""The ``dagopt`` command line: a thin typer layer that parses, calls the library, prints."""

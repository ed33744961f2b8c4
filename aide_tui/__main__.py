"""`python -m aide_tui` entry point."""

from aide_tui.cli import run

run()

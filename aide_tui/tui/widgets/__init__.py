"""Widgets of the search screen, one module per feature."""

from aide_tui.tui.widgets.help import HelpScreen
from aide_tui.tui.widgets.indexbar import IndexBar, StatusLine
from aide_tui.tui.widgets.preview import Preview, PreviewBody
from aide_tui.tui.widgets.results import ResultsList

__all__ = ["HelpScreen", "IndexBar", "Preview", "PreviewBody", "ResultsList", "StatusLine"]

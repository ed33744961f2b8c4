"""Widgets of the search screen, one module per feature."""

from aide_tui.tui.widgets.help import HelpScreen
from aide_tui.tui.widgets.indexbar import IndexBar
from aide_tui.tui.widgets.preview import Preview, PreviewBody
from aide_tui.tui.widgets.query import QueryInput
from aide_tui.tui.widgets.results import ResultsList
from aide_tui.tui.widgets.status import StatusLine

__all__ = ["HelpScreen", "IndexBar", "Preview", "PreviewBody", "QueryInput", "ResultsList", "StatusLine"]

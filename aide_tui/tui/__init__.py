"""The Textual front end of aide-tui (``aide-tui [PATH]``)."""

"""Screens: the main search screen and the small modal ones (history, confirmation)."""

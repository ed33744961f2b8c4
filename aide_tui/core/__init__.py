"""Headless core: scan, chunk, index, search. Imports no Textual."""

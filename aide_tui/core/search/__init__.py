"""Searching: query analysis, retrievers, one ranking pipeline, result lines."""

"""Indexing: scan, diff, read and chunk, write through a store writer, embed; the service and its process."""

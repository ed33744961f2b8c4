"""The local index store: segments on disk, their atomic commits, and read-only views."""

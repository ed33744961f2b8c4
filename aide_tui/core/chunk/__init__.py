"""Structure-aware chunking: files into chunks and dense pieces."""

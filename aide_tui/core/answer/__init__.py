"""Ask the code: cited answers from a local model server over the search pipeline's hits (no Textual)."""

from aide_tui.core.chunk.chunker import chunk_file, chunk_file_multi
from aide_tui.core.chunk.pieces import dense_pieces


def _source(n: int) -> str:
    funcs = []
    for i in range(n):
        body = "\n".join(f"    value_{i}_{j} = compute_{j}(argument_{i})" for j in range(6))
        funcs.append(f'def function_{i}(argument_{i}):\n    """Doc {i}."""\n{body}\n    return value_{i}_0\n')
    return "import os\n\n\n" + "\n\n".join(funcs)


def test_pieces_lie_inside_their_chunk_and_cover_every_chunk() -> None:
    text = _source(12)
    chunks, small = chunk_file_multi("pkg/mod.py", text, (1500, 300))
    assert chunks == chunk_file("pkg/mod.py", text, 1500) and small == chunk_file("pkg/mod.py", text, 300)
    pieces = dense_pieces(chunks, small)
    assert {owner for owner, _ in pieces} == set(range(len(chunks)))
    lines = text.split("\n")
    for owner, p in pieces:
        c = chunks[owner]
        assert c.start_line <= p.start_line <= p.end_line <= c.end_line
        assert p.text == "\n".join(lines[p.start_line - 1 : p.end_line])
        assert p.header.startswith("file: pkg/mod.py")
    # a packed chunk holding several functions gets one piece per function, each starting at its def
    # (the first one shares its piece with the module-level import above it)
    starts = {p.start_line for _, p in pieces}
    for i in range(1, 12):
        def_line = lines.index(f"def function_{i}(argument_{i}):") + 1
        assert def_line in starts


def test_no_chunks_no_pieces() -> None:
    assert dense_pieces([], []) == []


def test_piece_bodies_sum_to_their_chunk() -> None:
    """The indexer tokenizes pieces only and sums them per chunk: that must equal tokenizing the chunk."""
    from collections import Counter

    from aide_tui.core.tokens import tokenize

    text = _source(9) + "\n\nCONSTANT = 'x'  # trailing module code\n"
    chunks, small = chunk_file_multi("pkg/mod.py", text, (1500, 300))
    sums = [Counter() for _ in chunks]
    for owner, piece in dense_pieces(chunks, small):
        sums[owner].update(tokenize(piece.text))
    assert sums == [Counter(tokenize(c.text)) for c in chunks]


def test_embed_text_spells_symbol_names_as_words() -> None:
    from aide_tui.core.model import Chunk, symbol_words

    assert symbol_words("class HTTPClient > def send_request") == "http client send request"
    assert symbol_words("# Install > ## From source") == "install from source"
    c = Chunk("a.py", 1, 2, "python", "class QueryParams > def remove", "file: a.py", "def remove(self):")
    assert c.embed_text.split("\n") == ["query params remove", "file: a.py", "def remove(self):"]
    assert Chunk("a.py", 1, 1, "python", None, "", "x = 1").embed_text == "x = 1"

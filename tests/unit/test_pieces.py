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
    assert chunks == chunk_file("pkg/mod.py", text, 1500)
    assert small == chunk_file("pkg/mod.py", text, 300, pack_functions=False)
    pieces = dense_pieces(chunks, small)
    assert {owner for owner, _ in pieces} == set(range(len(chunks)))
    lines = text.split("\n")
    for owner, p in pieces:
        c = chunks[owner]
        assert c.start_line <= p.start_line <= p.end_line <= c.end_line
        assert p.text == "\n".join(lines[p.start_line - 1 : p.end_line])
        assert p.header.startswith("file: pkg/mod.py")
    # a packed chunk holding several functions gets one piece per function, each starting at its def
    starts = {p.start_line for _, p in pieces}
    for i in range(12):
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


def test_every_function_is_a_piece_of_its_own() -> None:
    """Small functions pack into one chunk, but each is its own dense piece (its vector and its BM25
    row speak for that function alone); so are the methods of a class too big for one piece."""
    funcs = "\n\n".join(f"def f{i}(x):\n    return x + {i}" for i in range(8))
    methods = [
        f"    def m{i}(self):\n        return self.value_number_{i} + self.other_value_{i}" for i in range(16)
    ]
    text = f"import os\n\n{funcs}\n\n\nclass K:\n    v0 = 1\n\n" + "\n\n".join(methods) + "\n"
    chunks, small = chunk_file_multi("pkg/mod.py", text, (1500, 600))
    assert len(chunks) == 1
    pieces = [p for _, p in dense_pieces(chunks, small)]
    bodies = [p.text for p in pieces]
    for i in range(8):
        assert f"def f{i}(x):\n    return x + {i}" in bodies
    for i, m in enumerate(methods):
        assert m in bodies
        assert next(p.symbol for p in pieces if p.text == m) == f"class K > def m{i}"
    # a small class stays one piece, as small non-function code does
    small_class = chunk_file(
        "pkg/k.py", "class P:\n    def a(self):\n        return 1\n", 600, pack_functions=False
    )
    assert len(small_class) == 1

"""Minimal read-only safetensors parser (no ``safetensors`` dependency).

Format: 8-byte little-endian header length N, N bytes of JSON header
(``{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}``),
then the raw little-endian tensor bytes; offsets are relative to the end of the header.
"""

from __future__ import annotations

import json
import mmap
import struct
from pathlib import Path
from typing import Any

import numpy as np

_DTYPES: dict[str, np.dtype] = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
_MAX_HEADER = 100 * 1024 * 1024


class SafetensorsError(ValueError):
    """The file is not a readable safetensors file."""


def parse_header(buf: bytes | mmap.mmap | memoryview) -> tuple[dict[str, dict[str, Any]], int]:
    """Return (tensor entries without ``__metadata__``, byte offset where the data starts)."""
    if len(buf) < 8:
        raise SafetensorsError("file too short for a safetensors header")
    (n,) = struct.unpack("<Q", bytes(buf[:8]))
    if n > _MAX_HEADER or 8 + n > len(buf):
        raise SafetensorsError(f"invalid header length {n}")
    try:
        header = json.loads(bytes(buf[8 : 8 + n]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SafetensorsError(f"invalid JSON header: {exc}") from None
    if not isinstance(header, dict):
        raise SafetensorsError("header is not a JSON object")
    header.pop("__metadata__", None)
    return header, 8 + n


def _to_array(buf: bytes | mmap.mmap, start: int, name: str, entry: dict[str, Any]) -> np.ndarray:
    try:
        dtype_name = entry["dtype"]
        shape = tuple(int(d) for d in entry["shape"])
        begin, end = (int(o) for o in entry["data_offsets"])
    except (KeyError, TypeError, ValueError):
        raise SafetensorsError(f"malformed header entry for {name!r}") from None
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if dtype_name == "BF16":
        itemsize = 2
    elif dtype_name in _DTYPES:
        itemsize = _DTYPES[dtype_name].itemsize
    else:
        raise SafetensorsError(f"unsupported dtype {dtype_name} for {name!r}")
    if end - begin != count * itemsize or begin < 0 or start + end > len(buf):
        raise SafetensorsError(f"data offsets out of range for {name!r}")
    if dtype_name == "BF16":
        raw = np.frombuffer(buf, dtype="<u2", count=count, offset=start + begin)
        arr = (raw.astype(np.uint32) << 16).view(np.float32)
    else:
        arr = np.frombuffer(buf, dtype=_DTYPES[dtype_name], count=count, offset=start + begin)
    return arr.reshape(shape)


def load_safetensors(source: str | Path | bytes | mmap.mmap) -> dict[str, np.ndarray]:
    """Read every tensor of a safetensors file (or its bytes / memory map) as numpy arrays.

    Arrays from a path or memory map are read-only views into the mapping (F32/F64/ints) or
    converted copies (BF16); F16 arrays are returned as stored (callers cast as needed).
    """
    if isinstance(source, (str, Path)):
        with open(source, "rb") as fh:
            try:
                buf: bytes | mmap.mmap = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            except ValueError:  # empty file
                buf = b""
    else:
        buf = source
    header, start = parse_header(buf)
    return {name: _to_array(buf, start, name, entry) for name, entry in header.items()}

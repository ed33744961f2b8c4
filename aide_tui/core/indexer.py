"""Indexing orchestration: scan → chunk → BM25 rows → vectors, incrementally, with progress events.

State machine: ``idle → scanning → embedding → ready | error``. ``IndexService`` wraps it for
long-running front ends: a reindex requested while one runs schedules exactly one more run.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from aide_tui.core import bm25 as bm25_mod
from aide_tui.core.bm25 import DocTerms, chunk_terms, concat, encode_docs
from aide_tui.core.chunk import CHUNKER_VERSION, chunk_file_multi
from aide_tui.core.config import Settings
from aide_tui.core.embed.base import Embedder, EmbedderError
from aide_tui.core.events import Committed, Done, Event, Progress
from aide_tui.core.model import EMBED_TEXT_VERSION, Chunk
from aide_tui.core.paths import state_dir
from aide_tui.core.pieces import PIECE_BUDGET, dense_pieces
from aide_tui.core.scan import Scanner, read_text
from aide_tui.core.secrets import mask_secrets
from aide_tui.core.store import (
    EmbeddingCache,
    FileRecord,
    IndexCorrupt,
    IndexData,
    IndexMissing,
    embedded_chunks,
    read_index,
    read_pieces,
    write_index,
    writer_lock,
)
from aide_tui.core.tokens import TOKENIZER_VERSION, tokenize

EMBED_BATCH = 64  # split across workers by the pooled builtin embedder
COMMIT_EVERY_S = 20.0


@dataclass
class IndexReport:
    """Outcome of one indexing run."""

    files: int = 0
    chunks: int = 0
    seconds: float = 0.0
    embedder: str = "none"
    degraded: bool = False
    degraded_reason: str | None = None
    changed: int = 0
    removed: int = 0
    embedded: int = 0
    newly_embedded: int = 0
    cancelled: bool = False
    wrote: bool = False
    vectors_missing: int = 0
    messages: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    def to_event(self) -> Done:
        """The run's ``done`` event (skip reasons counted by kind)."""
        reasons: dict[str, int] = {}
        for why in self.skipped.values():
            kind = why.split(" (", 1)[0].split(":", 1)[0]
            reasons[kind] = reasons.get(kind, 0) + 1
        return Done(
            files=self.files, chunks=self.chunks, seconds=round(self.seconds, 3), embedder=self.embedder,
            degraded=self.degraded, degraded_reason=self.degraded_reason, changed=self.changed,
            removed=self.removed, embedded=self.embedded, vectors_missing=self.vectors_missing,
            newly_embedded=self.newly_embedded, skipped=len(self.skipped), skipped_reasons=reasons,
            messages=list(self.messages), warnings=list(self.warnings), cancelled=self.cancelled,
            wrote=self.wrote,
        )  # fmt: skip


class Cancelled(Exception):
    """Raised inside a run when its cancel event is set."""


def index_settings_key(settings: Settings) -> dict[str, object]:
    """Settings that change what chunks and BM25 rows look like; a change forces a rebuild."""
    return {
        "chunker": CHUNKER_VERSION,
        "tokenizer": TOKENIZER_VERSION,
        "budget": settings.index.chunk_budget,
        "piece_budget": PIECE_BUDGET,
        "embed_text": EMBED_TEXT_VERSION,
        "bm25_fields": [bm25_mod.PATH_WEIGHT, bm25_mod.SYMBOL_WEIGHT],
        "max_file_kb": settings.index.max_file_kb,
        "exclude": list(settings.index.exclude),
        "include_sensitive": settings.index.include_sensitive,
    }


class Indexer:
    """Builds or incrementally updates one workspace's index."""

    def __init__(
        self,
        root: Path,
        settings: Settings,
        embedder: Embedder | None = None,
        embedder_error: str | None = None,
    ) -> None:
        self.root = Path(root)
        self.settings = settings
        self.embedder = embedder
        self.embedder_error = embedder_error

    def run(
        self,
        on_progress: Callable[[Event], None] | None = None,
        cancel: threading.Event | None = None,
        rebuild: bool = False,
        priority: Iterable[str] = (),
    ) -> IndexReport:
        """Update the index on disk; returns what happened. Raises LockTimeout if another writer holds it."""
        emit = on_progress or (lambda p: None)
        started = time.monotonic()
        state = state_dir(self.root)
        idx_dir = state / "index"
        report = IndexReport()
        with writer_lock(idx_dir, timeout=self.settings.index.lock_timeout):
            try:
                self._run_locked(state, idx_dir, report, emit, cancel, rebuild, set(priority))
            except Cancelled:
                report.cancelled = True
        report.seconds = time.monotonic() - started
        return report

    # -- phases ------------------------------------------------------------------------------------

    def _load_previous(self, idx_dir: Path, report: IndexReport, rebuild: bool) -> IndexData | None:
        if rebuild:
            return None
        try:
            prev = read_index(idx_dir, pieces=False)  # piece texts are decoded only if something changed
        except IndexMissing:
            return None
        except IndexCorrupt as exc:
            report.messages.append(str(exc))
            return None
        if prev.meta.get("settings") != index_settings_key(self.settings):
            report.messages.append("index settings or format changed; rebuilding")
            return None
        return prev

    def _run_locked(
        self,
        state: Path,
        idx_dir: Path,
        report: IndexReport,
        emit: Callable[[Event], None],
        cancel: threading.Event | None,
        rebuild: bool,
        priority: set[str],
    ) -> None:
        def check_cancel() -> None:
            if cancel is not None and cancel.is_set():
                raise Cancelled

        prev = self._load_previous(idx_dir, report, rebuild)
        emit(Progress("scanning", message="workspace"))
        s = self.settings.index
        scanner = Scanner(self.root, s.max_file_kb * 1024, s.exclude, s.include_sensitive)
        scan = scanner.scan()
        report.skipped = dict(scan.skipped)
        report.skipped.update(scan.errors)
        total = len(scan.files)
        prev_rows: dict[str, list[int]] = {}
        if prev is not None:
            for i, c in enumerate(prev.chunks):
                prev_rows.setdefault(c.path, []).append(i)

        keep_rows: list[int] = []
        new_chunks: list[Chunk] = []
        new_pieces: list[tuple[int, Chunk]] = []  # (index into new_chunks, piece)
        files: dict[str, FileRecord] = {}
        sizes: dict[str, int] = {}
        changed = 0
        for n, entry in enumerate(scan.files, 1):
            if n % 200 == 0:
                check_cancel()
                emit(Progress("scanning", n, total, message=f"indexing {entry.rel}"))
            rec = prev.files.get(entry.rel) if prev is not None else None
            if rec is not None and rec.size == entry.size and rec.mtime_ns == entry.mtime_ns:
                files[entry.rel] = rec
                keep_rows.extend(prev_rows.get(entry.rel, ()))
                sizes[entry.rel] = entry.size
                continue
            text, raw, why = read_text(entry.abs, s.max_file_kb * 1024)
            if text is None or raw is None:
                report.skipped[entry.rel] = why or "unreadable"
                continue
            digest = hashlib.sha1(raw).hexdigest()
            files[entry.rel] = FileRecord(len(raw), entry.mtime_ns, digest)
            sizes[entry.rel] = len(raw)
            if rec is not None and rec.sha1 == digest:
                keep_rows.extend(prev_rows.get(entry.rel, ()))
                continue
            changed += 1
            try:
                masked = mask_secrets(text)
                file_chunks, small = chunk_file_multi(entry.rel, masked, (s.chunk_budget, PIECE_BUDGET))
                base = len(new_chunks)
                new_pieces.extend((base + i, p) for i, p in dense_pieces(file_chunks, small))
                new_chunks.extend(file_chunks)
            except Exception as exc:  # a chunker bug must not cost the rest of the index
                report.skipped[entry.rel] = f"chunker failed: {exc.__class__.__name__}: {exc}"
                del files[entry.rel]
        removed = len(set(prev.files) - set(files)) if prev is not None else 0
        report.changed, report.removed = changed, removed
        emit(Progress("scanning", total, total, message=f"{changed} changed, {removed} removed"))
        if prev is not None and changed == 0 and removed == 0 and files == prev.files:
            embedder, emb_id, _ = self._embedder_identity(report, prev)
            if (
                prev.meta.get("embedder") == emb_id
                and prev.meta.get("degraded_reason") == report.degraded_reason
                and (embedder is None or bool(prev.present.all()))
            ):  # nothing to do: no write, no tokenizing, no piece decoding
                report.files, report.chunks, report.embedder = len(files), len(prev.chunks), emb_id
                report.embedded = embedded_chunks(prev)
                return
        if prev is not None and len(prev.owners) and not prev.pieces:
            prev.pieces = read_pieces(idx_dir, prev)

        # BM25 rows: reuse unchanged ones, tokenize only new text. Pieces partition their chunk's lines,
        # so each piece is tokenized once and a chunk's body counts are the sum of its pieces'.
        vocab = dict(prev.vocab) if prev is not None else {}
        piece_bodies = [Counter(tokenize(p.text)) for _, p in new_pieces]
        chunk_bodies: list[Counter[str]] = [Counter() for _ in new_chunks]
        for (owner, _), body in zip(new_pieces, piece_bodies, strict=True):
            chunk_bodies[owner].update(body)
        kept_docs = prev.docs.take(keep_rows) if prev is not None else DocTerms.empty()
        new_docs = encode_docs(map(chunk_terms, new_chunks, chunk_bodies), vocab)
        chunks = ([prev.chunks[i] for i in keep_rows] if prev is not None else []) + new_chunks
        docs = concat([kept_docs, new_docs])
        new_pdocs = encode_docs(
            (chunk_terms(p, b) for (_, p), b in zip(new_pieces, piece_bodies, strict=True)), vocab
        )
        # Dense pieces: those of kept chunks (owners renumbered), then the new ones.
        kept_piece_rows: list[int] = []
        owners_list: list[int] = []
        if prev is not None and keep_rows:
            new_row = np.full(len(prev.chunks), -1, np.int64)
            new_row[keep_rows] = np.arange(len(keep_rows))
            mapped = new_row[prev.owners]
            kept_piece_rows = [int(i) for i in np.flatnonzero(mapped >= 0)]
            owners_list = [int(x) for x in mapped[kept_piece_rows]]
        pieces = [prev.pieces[i] for i in kept_piece_rows] if prev is not None else []
        pieces += [p for _, p in new_pieces]
        owners_list += [len(keep_rows) + i for i, _ in new_pieces]
        owners = np.asarray(owners_list, np.int64)
        kept_pdocs = prev.pdocs.take(kept_piece_rows) if prev is not None else DocTerms.empty()
        pdocs = concat([kept_pdocs, new_pdocs])
        check_cancel()

        # Vectors: reuse the previous index's rows and the cache; embed the rest.
        embedder, emb_id, dim = self._embedder_identity(report, prev)
        n = len(chunks)
        vectors = np.zeros((len(pieces), dim), np.float32)
        present = np.zeros(len(pieces), bool)
        cache: EmbeddingCache | None = None
        if embedder is not None:
            same = prev is not None and prev.meta.get("embedder") == emb_id and prev.meta.get("dim") == dim
            if prev is not None and not same and prev.meta.get("embedder") not in (None, "none"):
                report.messages.append(
                    f"embedder changed ({prev.meta.get('embedder')} → {emb_id}); re-embedding"
                )
            if same and kept_piece_rows:
                k = len(kept_piece_rows)
                vectors[:k] = prev.vectors[kept_piece_rows]
                present[:k] = prev.present[kept_piece_rows]
            cache = EmbeddingCache(state, emb_id, dim)
            for i in np.flatnonzero(~present):
                vec = cache.lookup(pieces[i].embed_key)
                if vec is not None:
                    vectors[i] = vec
                    present[i] = True

        meta = {
            "settings": index_settings_key(self.settings),
            "embedder": emb_id,
            "dim": dim,
            "skipped": len(report.skipped),
            "degraded_reason": report.degraded_reason,
        }
        data = IndexData(chunks, files, vocab, docs, pieces, owners, pdocs, vectors, present, meta)
        _commit(idx_dir, data, emit)  # an unchanged index returned early, above
        report.wrote = True
        report.files, report.chunks = len(files), n

        if embedder is not None and cache is not None and not present.all():
            self._embed_missing(embedder, data, cache, idx_dir, report, emit, check_cancel, sizes, priority)
        report.embedded = embedded_chunks(data)
        report.vectors_missing = int((~data.present).sum()) if embedder is not None else 0
        report.embedder = emb_id

    def _embedder_identity(
        self, report: IndexReport, prev: IndexData | None
    ) -> tuple[Embedder | None, str, int]:
        """(usable embedder or None, id recorded in the index, dim); sets degraded on failure.

        The previous index's dim is trusted for the same embedder id, so a no-op reindex never
        contacts an embedding server.
        """
        if self.embedder is None:
            if self.embedder_error:
                report.degraded, report.degraded_reason = True, self.embedder_error
            return None, "none", 0
        try:
            emb_id = self.embedder.id
            if prev is not None and prev.meta.get("embedder") == emb_id and prev.meta.get("dim"):
                return self.embedder, emb_id, int(prev.meta["dim"])
            return self.embedder, emb_id, int(self.embedder.dim)
        except EmbedderError as exc:
            report.degraded, report.degraded_reason = True, str(exc)
            return None, "none", 0

    def _embed_missing(
        self,
        embedder: Embedder,
        data: IndexData,
        cache: EmbeddingCache,
        idx_dir: Path,
        report: IndexReport,
        emit: Callable[[Event], None],
        check_cancel: Callable[[], None],
        sizes: dict[str, int],
        priority: set[str],
    ) -> None:
        """Embed pieces without vectors, small and prioritised files first, committing as it goes."""
        todo = [int(i) for i in np.flatnonzero(~data.present)]
        todo.sort(key=lambda i: (data.pieces[i].path not in priority, sizes.get(data.pieces[i].path, 0), i))
        total = len(todo)
        done = 0
        last_commit = time.monotonic()
        live = {c.embed_key for c in data.pieces}
        emit(Progress("embedding", vectors_done=0, vectors_total=total))
        try:
            for start in range(0, total, EMBED_BATCH):
                check_cancel()
                rows = todo[start : start + EMBED_BATCH]
                vecs = embedder.embed([data.pieces[i].embed_text for i in rows], kind="document")
                if vecs.shape != (len(rows), data.vectors.shape[1]):
                    raise EmbedderError(
                        f"embedder returned vectors of shape {vecs.shape}, expected "
                        f"({len(rows)}, {data.vectors.shape[1]}); run `aide-tui index --rebuild`"
                    )
                data.vectors[rows] = vecs
                data.present[rows] = True
                cache.add([data.pieces[i].embed_key for i in rows], vecs)
                done += len(rows)
                report.newly_embedded = done
                emit(Progress("embedding", vectors_done=done, vectors_total=total))
                if time.monotonic() - last_commit > COMMIT_EVERY_S:
                    _commit(idx_dir, data, emit)
                    cache.save(live)
                    last_commit = time.monotonic()
        except EmbedderError as exc:
            report.degraded, report.degraded_reason = True, str(exc)
            data.meta["degraded_reason"] = str(exc)
        finally:
            if done or report.degraded:
                _commit(idx_dir, data, emit)
                cache.save(live)
                report.wrote = True


def _commit(idx_dir: Path, data: IndexData, emit: Callable[[Event], None]) -> None:
    """Write ``data`` as the new index version and announce it."""
    gen = write_index(idx_dir, data)
    emit(
        Committed(
            files=len(data.files), chunks=len(data.chunks), embedded=embedded_chunks(data),
            vectors_missing=int((~data.present).sum()) if data.meta.get("embedder") != "none" else 0,
            version=gen,
        )
    )  # fmt: skip

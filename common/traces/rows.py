"""Rows of the public traces' files, streamed: gzipped or plain CSV parts read in order, each row with
its file and line (for a one-line error), bad rows stopped at or counted, and bytes read for a progress
bar. The conversion's errors are :class:`~aviary.common.trace.TraceError` (``file:LINE: field 'NAME':
what``)."""

from __future__ import annotations

import csv
import gzip
import heapq
import io
import os
import tempfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, cast

from ..trace import TraceError

__all__ = ["BadRows", "Bytes", "ExternalSort", "csv_rows", "json_rows", "open_text", "parts"]


@dataclass
class BadRows:
    """What to do with a bad row: stop (raise its one-line error) unless ``skip``; skipped rows are
    counted by field, with the first message kept."""

    skip: bool = False
    counts: Counter[str] = field(default_factory=Counter)
    first: str = ""

    def bad(self, message: str, field_name: str) -> None:
        if not self.skip:
            raise TraceError(message)
        self.counts[field_name] += 1
        self.first = self.first or message

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass
class Bytes:
    """Compressed bytes read so far over every input (what a progress bar shows against their size)."""

    total: int = 0
    done: int = 0
    on_progress: Callable[[int], None] | None = None


def parts(inputs: Sequence[Path], folder: str, suffixes: tuple[str, ...] = (".csv.gz", ".csv")) -> list[Path]:
    """The part files of ``folder`` (e.g. ``task_events``) among ``inputs`` (folders holding it, or
    files named ``folder/...``), sorted by name (the published parts are numbered in time order)."""
    found: list[Path] = []
    for path in inputs:
        where = path / folder if (path / folder).is_dir() else path
        if where.is_dir():
            found += [p for p in where.iterdir() if p.name.endswith(suffixes)]
        elif path.parent.name == folder or path.name.startswith(folder):
            found.append(path)
    return sorted(found, key=lambda p: (str(p.parent), p.name))


def open_text(path: Path) -> tuple[IO[str], IO[bytes]]:
    """A text stream of ``path`` (gunzipped if it ends in ``.gz``) and the raw file under it (whose
    position is the compressed bytes read)."""
    try:
        raw = open(path, "rb")  # noqa: SIM115 (closed by the caller with the text stream)
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    stream = cast(IO[bytes], gzip.GzipFile(fileobj=raw) if path.name.endswith(".gz") else raw)
    return io.TextIOWrapper(stream, encoding="utf-8", errors="replace", newline=""), raw


def csv_rows(paths: Iterable[Path], progress: Bytes) -> Iterator[tuple[str, int, list[str]]]:
    """Every row of the CSV files in order, as ``(file, line, fields)``; headerless (the 2011 parts)."""
    for path in paths:
        text, raw = open_text(path)
        base = progress.done
        try:
            for lineno, row in enumerate(csv.reader(text), 1):
                if lineno % 4096 == 0 and progress.on_progress is not None:
                    progress.done = base + raw.tell()
                    progress.on_progress(progress.done)
                yield str(path), lineno, row
        except (OSError, EOFError, gzip.BadGzipFile, csv.Error) as exc:
            raise TraceError(f"{path}: cannot read: {exc}") from None
        finally:
            progress.done = base + os.path.getsize(path)
            text.close()
            raw.close()


def json_rows(paths: Iterable[Path], progress: Bytes) -> Iterator[tuple[str, int, bytes]]:
    """Every non-blank line of the JSON-lines files in order, as ``(file, line, raw bytes)`` (the caller
    decodes it, so a bad line is its one-line error); gzipped if the name ends in ``.gz``."""
    for path in paths:
        try:
            raw = open(path, "rb")  # noqa: SIM115 (closed below)
        except OSError as exc:
            raise TraceError(f"{path}: cannot read: {exc.strerror or exc}") from None
        stream = cast(IO[bytes], gzip.GzipFile(fileobj=raw) if path.name.endswith(".gz") else raw)
        base = progress.done
        try:
            for lineno, line in enumerate(stream, 1):
                if lineno % 4096 == 0 and progress.on_progress is not None:
                    progress.done = base + raw.tell()
                    progress.on_progress(progress.done)
                if line.strip():
                    yield str(path), lineno, line
        except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise TraceError(f"{path}: cannot read: {exc}") from None
        finally:
            progress.done = base + os.path.getsize(path)
            stream.close()
            raw.close()


class ExternalSort:
    """Lines sorted by a number key (then by the order they came in), in bounded memory: at most
    ``buffer`` lines are held; fuller runs go sorted to temporary files, merged at the end. Runs merge
    by levels, :data:`FAN_IN` of one level into one of the next (a log-structured merge: each line is
    rewritten once a level), so the temporary files open at once stay few whatever the input's size.
    ``parse`` reads a key back from a run (``int`` keeps integer keys exact beyond 2^53)."""

    FAN_IN = 64
    """Runs of one level merged into one run of the next."""

    def __init__(self, buffer: int = 200_000, parse: Callable[[str], float] = float) -> None:
        self.buffer = max(1, buffer)
        self.parse = parse
        self.held: list[tuple[float, int, str]] = []
        self.levels: list[list[IO[str]]] = []
        self.seq = 0

    def add(self, key: float, line: str) -> None:
        self.held.append((key, self.seq, line))
        self.seq += 1
        if len(self.held) >= self.buffer:
            self._spill()

    @staticmethod
    def _write(rows: Iterable[tuple[float, int, str]]) -> IO[str]:
        run = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 (closed in sorted())
        run.writelines(f"{key!r}\t{seq}\t{line}\n" for key, seq, line in rows)
        run.seek(0)
        return run

    def _spill(self) -> None:
        self.held.sort()
        run = self._write(self.held)
        self.held = []
        level = 0
        while True:
            if level == len(self.levels):
                self.levels.append([])
            self.levels[level].append(run)
            if len(self.levels[level]) < self.FAN_IN:
                return
            runs, self.levels[level] = self.levels[level], []
            try:
                run = self._write(heapq.merge(*map(self._read, runs)))
            finally:
                for old in runs:
                    old.close()
            level += 1

    def _read(self, run: IO[str]) -> Iterator[tuple[float, int, str]]:
        parse = self.parse
        for text in run:
            key, seq, line = text.rstrip("\n").split("\t", 2)
            yield parse(key), int(seq), line

    @property
    def runs(self) -> int:
        """Temporary files held now."""
        return sum(map(len, self.levels))

    def sorted(self) -> Iterator[str]:
        """Every line added, by key then arrival (the temporary files removed at the end)."""
        self.held.sort()
        runs = [run for level in self.levels for run in level]
        if not runs:
            yield from (line for _, _, line in self.held)
            return
        try:
            yield from (line for _, _, line in heapq.merge(*map(self._read, runs), iter(self.held)))
        finally:
            for run in runs:
                run.close()

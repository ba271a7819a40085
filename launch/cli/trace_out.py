"""What ``aviary trace`` writes with: a progress bar with an ETA, and an output file that appears only
whole (a temporary file renamed at the end, removed on an error or Ctrl-C)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

from ..flags.spec import UsageError


@contextmanager
def progress_bar(label: str, total: float, quiet: bool) -> Iterator[Callable[[float], None]]:
    """A function that sets the bar at ``done`` of ``total`` (a rich bar on a terminal, else nothing)."""
    console = Console(stderr=True)
    if quiet or not console.is_terminal:
        yield lambda done: None
        return
    columns = (TextColumn(label), BarColumn(), TaskProgressColumn(), TextColumn("ETA"), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(label, total=total or 1)
        yield lambda done: bar.update(task, completed=done)


def write_lines(out: Path, header: Iterable[str], lines: Iterable[str]) -> int:
    """``header`` and ``lines`` into ``out`` through a temporary file renamed at the end (removed on any
    error or Ctrl-C); returns the lines written after the header."""
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    n = 0
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            for line in header:
                f.write(line + "\n")
            for line in lines:
                f.write(line + "\n")
                n += 1
        os.replace(tmp, out)
    except OSError as exc:
        raise UsageError(f"{out}: cannot write: {exc.strerror or exc}") from None
    finally:
        if tmp.exists():
            tmp.unlink()
    return n

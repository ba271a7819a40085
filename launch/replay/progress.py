"""A replay's progress bar and its stop signals.

:class:`ProgressBar` shows a running replay (jobs finished and submitted, the replay clock against the
predicted end, an ETA) on real processes or on the simulator's virtual time; :class:`StopSignals` turns
SIGINT and SIGTERM into a clean stop that still writes the results of what finished.
"""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
)
from rich.progress import Task as ProgressTask
from rich.text import Text

from ...common.frontend import FrontendCore


class _EtaColumn(ProgressColumn):
    """``ETA``: the time left by the prediction (``eta`` field), else rich's estimate from the rate."""

    def render(self, task: ProgressTask) -> Text:
        if task.finished:
            return Text("")
        eta = task.fields.get("eta")
        if eta is None:
            eta = task.time_remaining
        shown = "-:--:--" if eta is None else clock_hms(eta)
        return Text(f"ETA {shown}", style="progress.remaining")


def clock_hms(seconds: float) -> str:
    minutes, secs = divmod(round(max(0.0, seconds)), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}"


class ProgressBar:
    """A replay's progress: jobs finished (of all of them), the replay clock against its predicted end,
    and the time left.

    On a terminal, a rich bar that fits 80 columns. Elsewhere (``nohup``, ``| tee``, a sweep's worker: the
    console is not a terminal) a plain line every ``every`` seconds of wall time and one at the end, which
    a log file keeps, with the jobs submitted too.

    Real processes: the clock counts replay seconds from the first submission; the end is the
    simulator's prediction (``end``) and the ETA the difference (rich's estimate from the rate of
    finishing jobs without a prediction, or once past it). The simulator (``virtual``): the clock is
    virtual time, shown against the last arrival (``last_arrival``) until it passes it, the ETA the
    driver's estimate (:attr:`left`: by the tasks launched, the rate of the second half of the time so
    far), else rich's. The bar counts jobs finished, so it never shows more than 100 %."""

    LABEL = 16
    """The label's width on the bar (the policy's name; the plain line shows it whole)."""

    def __init__(
        self,
        total: int,
        label: str,
        enabled: bool,
        *,
        end: float | None = None,
        virtual: bool = False,
        last_arrival: float | None = None,
        transient: bool = False,
        every: float = 10.0,
        console: Console | None = None,
    ) -> None:
        self.console = console or Console(stderr=True)
        self.plain = enabled and not self.console.is_terminal
        self.every = every
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=10),
            MofNCompleteColumn(),
            TextColumn("jobs"),
            TextColumn("{task.fields[clock]}"),
            _EtaColumn(),
            disable=not enabled or self.plain,
            transient=transient,
            console=self.console,
        )
        short = label if len(label) <= self.LABEL else label[: self.LABEL - 1] + "…"
        self.task = self.progress.add_task(short, total=total, submitted=0, clock="", eta=None)
        self.label = label
        self.total = total
        self.end = end
        self.virtual = virtual
        self.last_arrival = last_arrival
        self.started = time.monotonic()
        self.left: float | None = None
        """The simulator: the seconds left by its share done so far (:func:`~.run.time_left`), or None."""
        self.printed: float | None = None
        self.last: tuple[int, int, float | None, bool] | None = None
        """What the last update said: jobs finished, submitted, the clock, and whether all registered."""

    def __enter__(self) -> ProgressBar:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)
        if self.plain and self.last is not None:
            self._line()

    def clock_text(self, clock: float | None) -> tuple[str, float | None]:
        """The clock column's text and the ETA by the prediction (None: rich's estimate)."""
        if clock is None:
            return "", None
        if self.virtual:  # against the last arrival until it passes it: never "X of Y" with X > Y
            if self.last_arrival is None or clock > self.last_arrival:
                return f"virtual {clock:,.0f} s" + (
                    "" if self.last_arrival is None else ", all arrived"
                ), self.left
            return f"virtual {clock:,.0f} of {self.last_arrival:,.0f} s", self.left
        if self.end is None:
            return f"clock {clock:,.1f} s", None
        eta = self.end - clock if clock <= self.end else None
        return f"{clock:,.1f}/{self.end:,.1f} s", eta

    def update(self, frontend: FrontendCore, clock: float | None = None) -> None:
        """Show ``frontend``'s jobs and the clock (replay seconds, or virtual ones; None: not started)."""
        self.last = (frontend.finished, frontend.submitted, clock, frontend.ready)
        if self.plain:
            now = time.monotonic()
            if now - (self.started if self.printed is None else self.printed) >= self.every:
                self._line(frontend)
            return
        text, eta = self.clock_text(clock)
        waiting = "" if frontend.ready else f" ({len(frontend.waiting)} to register)"
        self.progress.update(
            self.task,
            completed=frontend.finished,
            submitted=frontend.submitted,
            clock=text + waiting,
            eta=eta,
        )

    def _line(self, frontend: FrontendCore | None = None) -> None:
        """One plain progress line (off a terminal)."""
        assert self.last is not None
        finished, submitted, clock, ready = self.last
        elapsed = time.monotonic() - self.started
        if not ready and frontend is not None:
            state = f"waiting for {len(frontend.waiting)} processes to register"
        else:
            text, eta = self.clock_text(clock)
            if eta is None and 0 < finished < self.total:  # by the rate of finishing jobs so far
                eta = elapsed * (self.total - finished) / finished
            left = "" if eta is None or finished >= self.total else f", ETA {clock_hms(eta)}"
            state = f"{finished:,}/{self.total:,} jobs finished, {submitted:,} submitted, {text}{left}"
        self.console.print(f"{self.label}: {state} (elapsed {clock_hms(elapsed)})", soft_wrap=True)
        self.printed = time.monotonic()


class StopSignals:
    """SIGINT and SIGTERM during a replay (a context manager; the main thread only): the first one is
    recorded in :attr:`reason` (its name) and, with ``raise_first``, raises ``KeyboardInterrupt`` (to
    break a wait); a second one raises ``KeyboardInterrupt`` at once. A loop that can poll
    :attr:`reason` should (a handler's exception that lands in a gc callback is only printed)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, raise_first: bool) -> None:
        self.raise_first = raise_first
        self.reason: str | None = None
        self.saved: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:
        first = self.reason is None
        if first:
            self.reason = signal.Signals(signum).name
        if self.raise_first or not first:
            raise KeyboardInterrupt

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self.saved[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        self.saved.clear()

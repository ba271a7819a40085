"""A replay's progress bar and its stop signals.

:class:`ProgressBar` shows a running replay (jobs finished and submitted, the replay clock against the
predicted end, an ETA) on real processes or on the simulator's virtual time; :class:`StopSignals` turns
SIGINT and SIGTERM into a clean stop that still writes the results of what finished.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.progress import Task as ProgressTask
from rich.text import Text

from ..common.frontend import FrontendCore


class _EtaColumn(ProgressColumn):
    """``ETA``: the time left by the prediction (``eta`` field), else rich's estimate from the rate."""

    def render(self, task: ProgressTask) -> Text:
        if task.finished:
            return Text("")
        eta = task.fields.get("eta")
        if eta is None:
            eta = task.time_remaining
        if eta is None:
            shown = "-:--:--"
        else:
            minutes, seconds = divmod(round(max(0.0, eta)), 60)
            shown = f"{minutes // 60}:{minutes % 60:02d}:{seconds:02d}"
        return Text(f"ETA {shown}", style="progress.remaining")


class ProgressBar:
    """A rich progress bar of a replay. The bar counts jobs finished (of all of them); then the jobs
    submitted, the replay clock against its predicted end, the time left and the time elapsed.

    Real processes: the clock counts replay seconds from the first submission; the end is the
    simulator's prediction (``end``) and the ETA the difference (rich's estimate from the rate of
    finishing jobs without a prediction, or once past it). The simulator (``virtual``): the clock is
    virtual time, shown against the last arrival (``last_arrival``), the ETA rich's estimate."""

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
    ) -> None:
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=20),
            MofNCompleteColumn(),
            TextColumn("jobs finished, {task.fields[submitted]} submitted"),
            TextColumn("{task.fields[clock]}"),
            _EtaColumn(),
            TimeElapsedColumn(),
            disable=not enabled,
            transient=transient,
            console=Console(stderr=True),
        )
        self.task = self.progress.add_task(label, total=total, submitted=0, clock="", eta=None)
        self.label = label
        self.end = end
        self.virtual = virtual
        self.last_arrival = last_arrival

    def __enter__(self) -> ProgressBar:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)

    def clock_text(self, clock: float | None) -> tuple[str, float | None]:
        """The clock column's text and the ETA by the prediction (None: rich's estimate)."""
        if clock is None:
            return "", None
        if self.virtual:
            until = "" if self.last_arrival is None else f" (arrivals until {self.last_arrival:,.0f} s)"
            return f"virtual clock {clock:,.0f} s{until}", None
        if self.end is None:
            return f"clock {clock:,.1f} s", None
        eta = self.end - clock if clock <= self.end else None
        return f"clock {clock:,.1f} s of {self.end:,.1f} s predicted", eta

    def update(self, frontend: FrontendCore, clock: float | None = None) -> None:
        """Show ``frontend``'s jobs and the clock (replay seconds, or virtual ones; None: not started)."""
        if frontend.ready:
            desc = self.label
        else:
            desc = f"{self.label}: waiting for {len(frontend.waiting)} processes to register"
        text, eta = self.clock_text(clock)
        self.progress.update(
            self.task,
            completed=frontend.finished,
            description=desc,
            submitted=frontend.submitted,
            clock=text,
            eta=eta,
        )


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

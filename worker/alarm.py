"""A wake-up at an instant of ``time.monotonic``, as precise as the kernel makes it (issue 27).

The event loop's own timers keep a millisecond clock: uvloop (libuv) measures a delay from a cached,
truncated time and sleeps in whole milliseconds, so a 10 ms ``call_later`` wakes up ~0.2 ms late on
average here, and fires early at times (a timer executor must then wait again for what is left). An
:class:`Alarm` is a Linux ``timerfd`` on ``CLOCK_MONOTONIC`` (``time.monotonic``'s clock) armed at an
absolute instant and watched by the loop as a reader: it never fires early and wakes ~0.08 ms late
(``python -m aviary.benchmarks.floors``). ``timerfd_create`` is called through ``ctypes`` (the
``os`` module has it from Python 3.13); without it (not Linux) the alarm falls back to ``call_later``.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import time
from collections.abc import Callable

CLOCK_MONOTONIC = 1
TFD_TIMER_ABSTIME = 1


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.timerfd_create, libc.timerfd_settime  # noqa: B018  # both present, or no timerfd at all
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()


class Alarm:
    """Calls ``fire()`` from ``loop`` once ``time.monotonic()`` reaches the instant last given to
    :meth:`at` (a later :meth:`at` replaces it; the instant it is set for already costs nothing); never
    early, may come when nothing is due any more."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fire: Callable[[], None]) -> None:
        self.loop = loop
        self.fire = fire
        self._at: float | None = None
        """The instant it is set for (None: not set, or it has rung)."""
        self._handle: asyncio.TimerHandle | None = None
        self.fd = -1 if _LIBC is None else _LIBC.timerfd_create(CLOCK_MONOTONIC, os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd >= 0:
            self._spec = _Itimerspec()
            loop.add_reader(self.fd, self._ring)

    def at(self, when: float) -> None:
        if when == self._at:
            return
        self._at = when
        if self.fd < 0:
            if self._handle is not None:
                self._handle.cancel()
            self._handle = self.loop.call_later(max(0.0, when - time.monotonic()), self._rung)
            return
        assert _LIBC is not None
        value = self._spec.it_value
        value.tv_sec = sec = int(when)
        value.tv_nsec = max(1, int((when - sec) * 1e9))  # all zero would disarm it
        if _LIBC.timerfd_settime(self.fd, TFD_TIMER_ABSTIME, ctypes.byref(self._spec), None) != 0:
            raise OSError(ctypes.get_errno(), "timerfd_settime")

    def _ring(self) -> None:
        try:
            os.read(self.fd, 8)  # the expiry count: reading it clears the descriptor's readiness
        except BlockingIOError:  # re-armed for later since it became readable
            return
        self._rung()

    def _rung(self) -> None:
        self._at = None
        self.fire()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        if self.fd >= 0:
            self.loop.remove_reader(self.fd)
            os.close(self.fd)
            self.fd = -1

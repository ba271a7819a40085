"""The process executor's task: a sleep that counts only its own running time (DESIGN §6).

    python -I -S sleeptask.py DURATION [LAUNCHED_AT [PARENT_PID [TICK]]]

A plain ``sleep N`` keeps counting wall time while it is frozen by SIGSTOP; this one sleeps in small
ticks and adds to its progress only the part of each tick it actually ran, so a task suspended for X
seconds finishes X seconds later. Exit code 0 = done, 2 = bad arguments, 3 = the parent died.

It is run by path with ``-I -S`` and uses only modules that a bare interpreter has already loaded
(``_signal``, ``posix``, ``sys``, ``time``): it must not import ``aviary`` (not on the path without
site-packages), and its start-up costs one interpreter start (~10 ms) and nothing more.

Accounting (all on CLOCK_MONOTONIC, which every process of the host shares):

- ``LAUNCHED_AT`` is the parent's ``time.monotonic()`` when the task was launched: the interpreter's
  start-up counts as running time (the slot is busy during it), up to ``STARTUP_CAP``, so a task
  occupies its slot for its duration, not duration + spawn cost.
- Each tick sleeps ``min(TICK, left)``. A tick in which no SIGCONT arrived counts its elapsed time,
  oversleep included (capped at the tick + ``NO_SIGNAL_SLACK``, which only matters if the process was
  frozen without a signal, e.g. by a cgroup freezer). A tick in which SIGCONT arrived was stopped at
  an unknown moment within it: it counts half the planned tick before the stop (the stop moment is
  uniform over the tick, so this is unbiased) plus the exact time run since the SIGCONT. Each
  suspension therefore shifts the finish by at most ±TICK/2 (±2.5 ms by default) around "exactly X
  later", and an unsuspended task overshoots only by sleep latency and process exit (~1-2 ms).
- A stop that lands during the interpreter start-up, before the SIGCONT handler exists, would be seen
  as a long start-up (counted up to ``STARTUP_CAP``) and would find the task without its orphan
  guards: so the task marks the end of its set-up by becoming its own process group leader, and the
  executor holds back a SIGSTOP until it sees ``getpgid(pid) == pid``.

Orphans: on Linux the task asks for SIGKILL when its parent dies (PR_SET_PDEATHSIG), which also
reaches it while stopped; elsewhere, and as a second line, it puts itself in its own process group
(if the parent dies while it is stopped, the kernel sends the newly orphaned group SIGHUP + SIGCONT),
and each tick checks the parent pid (a new parent means the old one died: exit code 3). The parent
pid is passed by the parent so that a parent dying during the start-up is noticed too.
"""

import _signal
import posix
import sys
import time

TICK = 0.005
NO_SIGNAL_SLACK = 0.02
STARTUP_CAP = 0.05

_resumed = None  # monotonic time of the last SIGCONT seen during the current tick


def _on_cont(signum, frame):
    global _resumed
    _resumed = time.monotonic()


def _die_with_parent():
    """Linux: PR_SET_PDEATHSIG(SIGKILL), so the task dies with its parent even while stopped.

    Through ``_ctypes`` alone (0.5 ms to import; the ``ctypes`` package would cost ~4 ms)."""
    import _ctypes

    class c_int(_ctypes._SimpleCData):
        _type_ = "i"

    class c_ulong(_ctypes._SimpleCData):
        _type_ = "L"

    class Func(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL
        _restype_ = c_int

    class Libc:
        _handle = _ctypes.dlopen(None, 0)

    prctl = Func(("prctl", Libc()))
    prctl(c_int(1), c_ulong(_signal.SIGKILL), c_ulong(0), c_ulong(0), c_ulong(0))


def run(duration, launched_at=None, parent=None, tick=TICK):
    """Sleep ``duration`` seconds of running time; return the exit code."""
    global _resumed
    _signal.signal(_signal.SIGCONT, _on_cont)
    if sys.platform.startswith("linux"):
        try:  # noqa: SIM105 (contextlib is not loaded yet: importing it costs start-up time)
            _die_with_parent()
        except Exception:  # no _ctypes or no prctl: the other two guards remain
            pass
    try:  # noqa: SIM105
        posix.setpgid(0, 0)  # last: "pgid == pid" tells the parent that the task is ready
    except OSError:
        pass
    if parent is None:
        parent = posix.getppid()
    getppid = posix.getppid
    mono = time.monotonic
    sleep = time.sleep
    last = mono()
    done = 0.0 if launched_at is None else min(max(last - launched_at, 0.0), STARTUP_CAP)
    while True:
        left = duration - done
        if left <= 0.0:
            return 0
        if getppid() != parent:
            return 3
        planned = tick if left > tick else left
        sleep(planned)
        now = mono()
        resumed = _resumed
        if resumed is not None:
            _resumed = None
        if resumed is not None and resumed < now:
            # Stopped during this tick, at an unknown moment: count half the planned tick before
            # the stop, and exactly what ran since SIGCONT.
            before = resumed - last
            half = planned * 0.5
            done += (before if before < half else half) + (now - resumed)
            last = now
        else:
            # Ran the whole tick (a handler that ran just after ``now`` was read means the stop
            # came after the tick: the next tick starts at the resumption).
            ran = now - last
            cap = planned + NO_SIGNAL_SLACK
            done += ran if ran < cap else cap
            last = now if resumed is None else resumed


def main(argv):
    try:
        duration = float(argv[0])
        launched_at = float(argv[1]) if len(argv) > 1 else None
        parent = int(argv[2]) if len(argv) > 2 else None
        tick = float(argv[3]) if len(argv) > 3 else TICK
        if not (duration >= 0.0 and tick > 0.0):
            raise ValueError("duration must be >= 0 and tick > 0")
    except (IndexError, ValueError) as exc:
        sys.stderr.write(f"sleeptask: usage: DURATION [LAUNCHED_AT [PARENT_PID [TICK]]]: {exc}\n")
        return 2
    return run(duration, launched_at, parent, tick)


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stderr.flush()
    posix._exit(code)  # skip interpreter finalization: the exit is seen ~1 ms sooner

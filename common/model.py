"""The workload model (DESIGN §4): jobs of tasks with real durations and a scheduler-visible estimate."""

from __future__ import annotations

from dataclasses import dataclass

GOOGLE_CUTOFF = 1129.532
"""Reference short/long cutoff of the Google trace, in trace seconds (Hawk/Eagle evaluation)."""


@dataclass(slots=True)
class JobSpec:
    """One job of a replay, after scaling.

    ``submit`` is in seconds from the start of the replay; ``durations`` are what executors run;
    ``estimate`` is the only thing schedulers see of them; ``long`` is the class by the trace's
    reference cutoff (for reporting, whatever the policy does); ``line`` is the trace line it came from.
    """

    job_id: int
    submit: float
    durations: list[float]
    estimate: float
    long: bool
    line: int = 0

    @property
    def tasks(self) -> int:
        return len(self.durations)

    @property
    def cls(self) -> str:
        return "long" if self.long else "short"

"""Shortest job first by critical path ("SJF (CPM)", Carbyne's baseline, spec §5).

Strictly the job with the shortest remaining critical path (the longest chain of estimated stage
durations among its unfinished stages) first, ties to the earlier job; within the job the stage with
the longest critical path first (CP order); first fit over nodes. Like the other YARN baselines it counts
cores and memory by default (``--account``; see :mod:`aviary.central.drf`).
"""

from __future__ import annotations

from .packing import OrderedPolicy
from .state import JobState, StageState


class ShortestJobFirst(OrderedPolicy):
    def __init__(self, intra: str = "cp") -> None:
        super().__init__(intra)

    def job_key(self, job: JobState) -> tuple[float, int]:
        return job.remaining_cp(), job.job_id

    def on_placed(self, job: JobState, stage: StageState) -> None:
        if not job.runnable:  # a placement finishes no stage: the key only changes on a finish
            self.requeue(job)

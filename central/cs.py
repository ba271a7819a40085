"""Slot-fair capacity scheduling ("Tez + CS", spec §5): the baseline of Tetris and Graphene.

The job furthest below its slot fair share goes first: with equal shares that is the job running the
fewest tasks (ties to the earlier job); within the job, the intra-job order (BFS by default, ``cp`` for
"Tez + CP"); the first node in cluster order where the task fits. [D] A task is placed only where its
whole demand vector fits (no over-allocation: Aviary's nodes have no contention model yet), so the
baseline is slot-fair in its choice of job, not in its bookkeeping of resources.
"""

from __future__ import annotations

from .packing import OrderedPolicy
from .state import JobState


class SlotFair(OrderedPolicy):
    def job_key(self, job: JobState) -> tuple[int, int]:
        return job.running, job.job_id

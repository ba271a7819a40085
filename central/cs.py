"""Slot-fair capacity scheduling ("Tez + CS", spec §5): the baseline of Tetris and Graphene.

The job furthest below its slot fair share goes first: with equal shares that is the job running the
fewest tasks (ties to the earlier job); within the job, the intra-job order (BFS by default, ``cp`` for
"Tez + CP"); the first node in cluster order where the task fits.

What it counts (``--account``, default ``cores,mem``): YARN's Capacity Scheduler "checks for which DAG the
next available slot has to be allocated, and then picks (in a breadth-first order) a runnable task from
the designated DAG that fits the available resources" (``graphene.txt`` §2), its slots being "some amount
of memory or cores" (Tetris poster); so a task fits where its cores and memory fit, and disk and network
are over-allocated, which slows the tasks on a contended node (``worker/resource_node.py``): "ignoring
disk and network usage leads to arbitrary over-allocation" (``graphene.txt`` §7.2, of Tez + CP).
``--account all`` is the control that fits all four resources (Aviary before node contention).
"""

from __future__ import annotations

from .packing import OrderedPolicy
from .state import JobState


class SlotFair(OrderedPolicy):
    def job_key(self, job: JobState) -> tuple[int, int]:
        return job.running, job.job_id

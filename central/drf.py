"""Dominant Resource Fairness (Ghodsi et al., NSDI'11; spec §5): progressive filling on dominant shares.

The job with the lowest dominant share (its running tasks' summed demand over the cluster's capacity,
the largest share over the resources) that has a runnable task fitting the node goes next, ties to the
earlier job; within the job the intra-job order (BFS, as Tez); first fit over nodes.
"""

from __future__ import annotations

from .packing import OrderedPolicy
from .state import JobState


class Drf(OrderedPolicy):
    def job_key(self, job: JobState) -> tuple[float, int]:
        return self.state.dominant_share(job), job.job_id

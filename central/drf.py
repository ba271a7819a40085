"""Dominant Resource Fairness (Ghodsi et al., NSDI'11; spec §5): progressive filling on dominant shares.

The job with the lowest dominant share (its running tasks' summed demand over the cluster's capacity,
the largest share over the resources) that has a runnable task fitting the node goes next, ties to the
earlier job; within the job the intra-job order (BFS, as Tez); first fit over nodes.

What it counts (``--account``, default ``cores,mem``): the papers' DRF is "YARN's implementation of the DRF
algorithm [27] for inter-job scheduling along with the default intra-job scheduler in Tez"
(``carbyne.txt`` §5.1), and YARN's dominant resource calculator counts memory and virtual cores: shares
and fit are over those two, disk and network are over-allocated and contended on the nodes.
``--account all`` (the control) computes shares and fit over all four resources.
"""

from __future__ import annotations

from .packing import OrderedPolicy
from .state import JobState


class Drf(OrderedPolicy):
    def job_key(self, job: JobState) -> tuple[float, int]:
        return self.state.dominant_share(job), job.job_id

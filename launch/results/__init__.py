"""What results mean: :mod:`.compare` (``aviary compare``: percentiles normalized to a baseline, and the
check that runs replayed the same workload) and :mod:`.report` (``aviary report``: one self-contained
HTML page). They read results folders; they import :mod:`..replay`'s provenance and the groups below."""

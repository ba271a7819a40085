"""Where a replay's results go, so that no run is ever lost (issue 25).

Without ``--out`` a run gets a folder of its own, ``results/<workload>-<policy>-<runtime>-<time stamp>``
(``-2``, ``-3``... if two start within the same second), and ``results/latest`` points at the last one
written. An ``--out`` that holds another run's results is refused unless ``--force``."""

from __future__ import annotations

import os
import time
from pathlib import Path

from ...common.journal import JOURNAL, has_records
from ...common.results import JOBS_CSV, SUMMARY_JSON
from ..flags.spec import UsageError

RESULTS = Path("results")
LATEST = "latest"


def default_folder(workload: str, policy: str, runtime: str, root: Path = RESULTS) -> Path:
    """A folder no run has used: ``root/<workload>-<policy>-<runtime>-<YYYYmmdd-HHMMSS>[-N]``."""
    base = f"{workload}-{policy}-{runtime}-{time.strftime('%Y%m%d-%H%M%S')}"
    folder, n = root / base, 1
    while folder.exists():
        n += 1
        folder = root / f"{base}-{n}"
    return folder


def check_folder(out: Path, force: bool) -> None:
    """Refuse (one line) an ``--out`` that holds another run's results (a journal of finished jobs too:
    a run that never reached its end), unless ``force``."""
    held = [name for name in (SUMMARY_JSON, JOBS_CSV) if (out / name).exists()]
    held += [JOURNAL] if not held and has_records(out) else []  # a run that never reached its end
    if held and not force:
        raise UsageError(
            f"--out {out}: holds another run's results ({', '.join(held)}); give a new folder, leave --out "
            "out for one of its own, or --force to replace them"
        )


def point_latest(folder: Path) -> None:
    """Make ``<folder's parent>/latest`` a relative link to ``folder`` (replaced atomically)."""
    link = folder.parent / LATEST
    tmp = folder.parent / f".{LATEST}.{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(folder.name)
    os.replace(tmp, link)

"""A run's tables as typed data: Arrow tables, pandas frames and Parquet files (``aviary export``).

    from aviary import Run
    run = Run.load("results/latest")
    jobs, tasks = run.jobs_frame(), run.tasks_frame()        # pandas DataFrames, typed columns
    tasks.groupby("node")["start"].count()                   # tasks per node

``jobs.csv`` (one row per job) and ``tasks.csv`` (one per run of a task on a node,
:mod:`aviary.common.tasktable`) are read with a fixed schema (:data:`JOB_SCHEMA`, :data:`TASK_SCHEMA`):
ids and counts are 64-bit integers, times 64-bit floats in replay seconds (an empty cell: null, NaN in
pandas), ``class``, ``node``, ``outcome`` and ``policy`` dictionary-encoded strings (pandas
categoricals). A sweep's folder gives one table of every cell's rows with the cell's axes as columns
(and ``cell``, its folder's name), read from each cell's ``summary.json`` (``extra.sweep.values``); an
axis that is a column already (``policy``) is that column.

The library: pyarrow. It reads CSV with a declared schema in one call, is the reference writer of
Parquet (the format data tools share: pandas, polars, DuckDB, Spark read it), and gives pandas its
frames with the types kept (``Table.to_pandas``); pandas is what most analyses are written in. Both are
pinned in ``pyproject.toml``. A partial last line (a run killed outright while writing) is dropped, as the
journal's reader drops it.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...common.journal import JOURNAL
from ...common.results import JOBS_CSV, SUMMARY_JSON, ResultsError, read_jobs
from ...common.tasktable import TASKS_CSV

if TYPE_CHECKING:
    import pandas
    import pyarrow

__all__ = ["FORMATS", "export", "read_table", "sweep_cells", "table_frame"]

FORMATS = ("parquet", "csv")

_INT, _FLOAT, _TEXT = "int64", "float64", "dictionary"
JOB_SCHEMA = {
    "job_id": _INT,
    "class": _TEXT,
    "tasks": _INT,
    "submit_replay_s": _FLOAT,
    "first_start_replay_s": _FLOAT,
    "finish_replay_s": _FLOAT,
    "jct_replay_s": _FLOAT,
    "policy": _TEXT,
}
TASK_SCHEMA = {
    "job_id": _INT,
    "task": _INT,
    "stage": _INT,
    "node": _TEXT,
    "attempt": _INT,
    "outcome": _TEXT,
    "submit_replay_s": _FLOAT,
    "placed_replay_s": _FLOAT,
    "start_replay_s": _FLOAT,
    "finish_replay_s": _FLOAT,
    "preemptions": _INT,
}
TABLES = {"jobs": (JOBS_CSV, JOB_SCHEMA), "tasks": (TASKS_CSV, TASK_SCHEMA)}


def _arrow_type(name: str) -> Any:
    import pyarrow as pa

    if name == _TEXT:
        return pa.dictionary(pa.int32(), pa.string())
    return pa.int64() if name == _INT else pa.float64()


def _whole_lines(path: Path) -> bytes:
    """The file's bytes up to its last newline (a partial last line is a run cut while writing it)."""
    data = path.read_bytes()
    end = data.rfind(b"\n")
    return data[: end + 1] if end >= 0 else b""


def read_table(folder: str | Path, which: str = "jobs") -> pyarrow.Table:
    """A run's ``jobs`` or ``tasks`` table as an Arrow table with its schema's types; a missing or bad
    file is a :class:`ResultsError` of one line naming it."""
    import pyarrow as pa
    from pyarrow import csv as pacsv

    name, schema = TABLES[which]
    path = Path(folder) / name
    if which == "jobs" and not path.is_file() and (Path(folder) / JOURNAL).is_file():
        return _journal_jobs(Path(folder))
    if not path.is_file():
        why = " (the run was made with --no-task-table, or in a sweep)" if which == "tasks" else ""
        raise ResultsError(f"{path}: no such file{why}")
    data = _whole_lines(path)
    header = data.split(b"\n", 1)[0].decode(errors="replace").split(",")
    if header != list(schema):
        raise ResultsError(f"{path}: line 1: the header is {','.join(header)!r}, not {','.join(schema)!r}")
    try:
        table = pacsv.read_csv(
            io.BytesIO(data),
            convert_options=pacsv.ConvertOptions(
                column_types={k: _arrow_type(v) for k, v in schema.items()},
                strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid as exc:
        raise ResultsError(f"{path}: {_locate(data, schema) or str(exc).splitlines()[0]}") from None
    return table


def _locate(data: bytes, schema: dict[str, str]) -> str | None:
    """The first bad line and field of a table Arrow refused, as one line (the slow path of an error)."""
    import csv

    kinds = {_INT: (int, "an integer"), _FLOAT: (float, "a number")}
    names = list(schema)
    for lineno, row in enumerate(csv.reader(io.StringIO(data.decode(errors="replace"))), start=1):
        if lineno == 1:
            continue
        if len(row) != len(names):
            return f"line {lineno}: {len(row)} fields, not {len(names)}"
        for name, text in zip(names, row, strict=True):
            if schema[name] in kinds and text:
                convert, what = kinds[schema[name]]
                try:
                    convert(text)
                except ValueError:
                    return f"line {lineno}, field {name}: {text!r} is not {what}"
    return None


def _journal_jobs(folder: Path) -> pyarrow.Table:
    """The jobs of a run that never reached its end, from its journal (as ``aviary rebuild`` has them)."""
    import pyarrow as pa

    records = read_jobs(folder)
    columns = {
        "job_id": [r.job_id for r in records],
        "class": [r.cls for r in records],
        "tasks": [r.tasks for r in records],
        "submit_replay_s": [r.submit for r in records],
        "first_start_replay_s": [r.first_start for r in records],
        "finish_replay_s": [r.finish for r in records],
        "jct_replay_s": [r.jct for r in records],
        "policy": [r.policy for r in records],
    }
    schema = pa.schema([(k, _arrow_type(v)) for k, v in JOB_SCHEMA.items()])
    return pa.table({k: pa.array(v) for k, v in columns.items()}).cast(schema)


def table_frame(folder: str | Path, which: str = "jobs") -> pandas.DataFrame:
    """:func:`read_table` as a pandas frame (integers ``int64``, times ``float64``, strings categorical)."""
    return read_table(folder, which).to_pandas()


def sweep_cells(folder: Path) -> list[tuple[Path, dict[str, Any]]]:
    """A sweep's cell folders and each one's axis values (empty: ``folder`` is not a sweep's)."""
    cells = []
    for summary in sorted(folder.glob(f"*/{SUMMARY_JSON}")):
        try:
            extra = json.loads(summary.read_text()).get("extra") or {}
        except (OSError, ValueError):
            continue
        values = (extra.get("sweep") or {}).get("values")
        if isinstance(values, dict):
            cells.append((summary.parent, values))
    return cells


def _with_axes(table: pyarrow.Table, cell: str, values: dict[str, Any]) -> pyarrow.Table:
    import pyarrow as pa

    n = table.num_rows
    table = table.append_column("cell", pa.array([cell] * n, pa.string()))
    for axis, value in values.items():
        if axis not in table.column_names:  # ``policy`` is a column already
            table = table.append_column(axis, pa.array([value] * n))
    return table


def collect(folder: Path, which: str) -> pyarrow.Table:
    """The run's table, or a sweep's: every cell's rows with its axes as columns."""
    import pyarrow as pa

    if (folder / SUMMARY_JSON).is_file() or (folder / TABLES[which][0]).is_file():
        return read_table(folder, which)
    cells = sweep_cells(folder)
    if not cells:
        raise ResultsError(f"{folder}: neither a run's folder (no {SUMMARY_JSON}) nor a sweep's")
    tables = [_with_axes(read_table(path, which), path.name, values) for path, values in cells]
    return pa.concat_tables([t.unify_dictionaries() for t in tables], promote_options="permissive")


def export(
    folder: str | Path, out: str | Path, *, fmt: str = "parquet", which: Sequence[str] = ("jobs", "tasks")
) -> list[Path]:
    """Write the run's (or sweep's) tables into ``out`` (a folder) as ``jobs.parquet`` and ``tasks.parquet``
    (``fmt`` ``csv``: typed CSV again, a sweep's combined); returns the files written. A run without a
    task table exports its jobs alone."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    folder, out = Path(folder), Path(out)
    written: list[Path] = []
    for name in which:
        try:
            table = collect(folder, name)
        except ResultsError:
            if name == "tasks" and written:
                continue  # no task table: the jobs alone
            raise
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{name}.{fmt}"
        if fmt == "parquet":
            pq.write_table(table, path)
        else:
            pacsv.write_csv(table, path)
        written.append(path)
    return written

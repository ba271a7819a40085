"""``python -m aviary.benchmarks.simulator_speed families`` (benchmarks/simulator_speed/families.py): the
simulator's speed per family, compiled and pure, at the small size CI runs (two families here: Eagle,
the most compiled one, and DRF, a multi-resource DAG policy on TPC-H), and a difference between the two
builds' jobs.csv failing it. Not a timing test: it checks what the table and its JSON hold."""

from __future__ import annotations

import json
import os
from pathlib import Path

from aviary.benchmarks.simulator_speed import families


def cells(table: str) -> list[list[str]]:
    return [[c.strip() for c in line.split("|")[1:-1]] for line in table.splitlines()]


def test_the_small_size_gives_a_row_a_family_and_both_builds_agree(tmp_path):
    out = tmp_path / "families.md"
    required = os.environ.get("AVIARY_REQUIRE_BUILD") == "1"  # CI: the compiled build must be in use
    flags = ["--size", "small", "--families", "eagle", "drf", "--out", str(out), "--quiet"]
    assert families.main(flags + ([] if required else ["--allow-pure"])) == 0
    head, rule, *rows = cells(out.read_text())
    assert head == families.HEAD and len(rule) == len(head)
    assert [r[:5] for r in rows] == [
        ["small", "eagle", "google", "50/50", "50"],
        ["small", "drf", "tpch", "5/5", "50"],
    ]
    for row in rows:
        assert row[-1] == "same" and row[-2].endswith("x")
        assert int(row[5].replace(",", "")) > 0 and int(row[6].replace(",", "")) > 0  # tasks, events
        assert all(float(v.replace(",", "")) > 0 for v in row[9:13])  # events/s and tasks/s, each build
    record = json.loads(out.with_suffix(".json").read_text())
    assert record["sizes"] == {"small": {"google": [50, 50], "tpch": [5, 50], "gshet": [20, 50]}}
    for cell in record["cells"]:
        assert cell["same_jobs_csv"] and len(cell["jobs_csv_sha256"]) == 1
        assert cell["finished"] == cell["jobs"]
        assert "pure" in cell["builds_ran"] and (not required or "compiled" in cell["builds_ran"])


def test_a_difference_between_the_builds_fails(tmp_path, monkeypatch, capsys):
    def fake_run(cmd, cwd, env, log):  # a child whose jobs.csv depends on the build
        build = "pure" if env.get("AVIARY_PURE_PYTHON") == "1" else "compiled"
        folder = Path(cmd[cmd.index("--out") + 1])
        folder.mkdir()
        (folder / "jobs.csv").write_text(f"job,{build}\n")
        summary = {"tasks": 10, "finished": 50, "extra": {"events": 40}}
        (folder / "summary.json").write_text(json.dumps(summary))
        line = {"build": build, "why": "", "simulate_cpu": 0.5, "calls": 1}
        log.write_text(f"{families.MARK} {json.dumps(line)}\n")
        return 1.0, 100.0, 0

    monkeypatch.setattr(families, "run", fake_run)
    assert families.main(["--families", "sparrow", "--quiet"]) == 1
    captured = capsys.readouterr()
    (row,) = cells(captured.out)[2:]
    assert row[1] == "sparrow" and row[-1] == "DIFFERS" and row[-2] == "1.00x"
    assert "jobs.csv differs between the compiled and pure builds: sparrow (small)" in captured.err

"""``python -m aviary.benchmarks.simulator_speed compare`` (benchmarks/simulator_speed/compare.py): a run
of this tree, a baseline and another command per cell; a baseline
whose results differ fails; bad arguments are one line and status 2. (Not a timing test: it checks
what the table holds and when the script refuses.)"""

from __future__ import annotations

from pathlib import Path

import aviary
from aviary.benchmarks.simulator_speed import compare

ROOT = Path(aviary.__file__).resolve().parent


def test_each_cell_gets_a_run_of_every_variant_and_a_ratio_to_each(tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    (base / "aviary").symlink_to(ROOT)  # the same code: jobs.csv must be the same
    out = tmp_path / "speed.md"
    flags = ["--cells", "sparrow:50", "eagle:60", "--rounds", "1", "--jobs", "20", "--pure"]
    flags += ["--baseline", str(base), "--other", "true {policy} {nodes}", "--out", str(out)]
    assert compare.main(flags) == 0
    table = out.read_text().splitlines()
    assert table[0].split(" | ")[2:5] == ["this CPU", "baseline CPU", "other CPU"]
    assert table[0].endswith("this / baseline (median of rounds) | this / other (median of rounds) |")
    assert [row.split(" | ")[:2] for row in table[2:]] == [["| sparrow", "50"], ["| eagle", "60"]]


def test_a_baseline_with_other_results_fails(tmp_path, capsys):
    fake = tmp_path / "base" / "aviary"
    (fake / "launch").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "speedups.py").write_text("ACTIVE = 'compiled'\n")
    (fake / "launch" / "__init__.py").write_text("")
    (fake / "launch" / "cli.py").write_text(
        "import pathlib, sys\n"
        "def main():\n"
        "    out = pathlib.Path(sys.argv[sys.argv.index('--out') + 1])\n"
        "    out.mkdir(parents=True)\n"
        "    (out / 'jobs.csv').write_text('not the same\\n')\n"
        "    return 0\n"
        "if __name__ == '__main__':\n"  # a baseline from before launch/ was grouped: cli a module
        "    sys.exit(main())\n"
    )
    flags = [
        "--cells",
        "sparrow:50",
        "--rounds",
        "1",
        "--jobs",
        "10",
        "--pure",
        "--baseline",
        str(tmp_path / "base"),
    ]
    assert compare.main(flags) == 1
    assert "jobs.csv or tasks.csv differs" in capsys.readouterr().out


def test_bad_arguments_are_one_line_and_status_2(tmp_path, capsys):
    assert compare.main(["--cells", "sparrow"]) == 2
    assert (
        capsys.readouterr().err.strip() == "simulator_speed compare: --cells: 'sparrow' is not POLICY:NODES"
    )
    assert compare.main(["--baseline", str(tmp_path)]) == 2
    assert (
        capsys.readouterr().err.strip()
        == f"simulator_speed compare: --baseline {tmp_path}: no aviary/__init__.py in it"
    )

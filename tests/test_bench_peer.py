"""``aviary bench --peer dask``: the ratios say how many times better Aviary is, whichever way each
figure points (throughput up, times down)."""

from __future__ import annotations

from aviary.launch.cli.bench_dask import ratios
from aviary.launch.flags.parser import build_parser


def test_each_ratio_is_aviary_s_advantage_whichever_way_the_figure_points():
    aviary = {"noop_tasks_per_s": 20000.0, "roundtrip_p50_ms": 0.5, "roundtrip_p99_ms": 1.0,
              "sleep10ms_efficiency": 1.02}  # fmt: skip
    dask = {"noop_tasks_per_s": 1000.0, "roundtrip_p50_ms": 10.0, "roundtrip_p99_ms": 25.0,
            "sleep10ms_efficiency": 1.53}  # fmt: skip
    assert ratios(aviary, dask) == {
        "noop_tasks_per_s": 20.0,
        "roundtrip_p50_ms": 20.0,
        "roundtrip_p99_ms": 25.0,
        "sleep10ms_efficiency": 1.5,
    }


def test_the_peer_is_a_choice_of_the_bench_command():
    assert build_parser().parse_args(["bench", "--peer", "dask"]).peer == "dask"
    assert build_parser().parse_args(["bench"]).peer is None


def test_the_summary_shows_each_configuration_against_dask_and_each_target_at_its_best():
    from rich.console import Console

    from aviary.launch.cli.bench import summary

    def figures(rtt: float, noop: float, eff: float) -> dict:
        return {"roundtrip_p50_ms": rtt, "roundtrip_p99_ms": 2 * rtt, "noop_tasks_per_s": noop,
                "noop_messages_per_task": 4.0, "sleep10ms_efficiency": eff}  # fmt: skip

    results = {**figures(1.2, 8000.0, 1.09), "no_keys": figures(0.9, 9000.0, 1.08)}
    results["central_queue_tcp_no_keys"] = figures(0.55, 10500.0, 1.03)
    console = Console(record=True, width=200)
    console.print(summary(results))
    alone = console.export_text()
    assert "Dask" not in alone and "x)" not in alone  # no ratios without Dask
    results["dask"] = figures(11.0, 500.0, 1.7)
    console.print(summary(results))
    text = console.export_text()
    row = next(line for line in text.splitlines() if "node queue" in line)
    assert "0.550 (20.0x)" in row and "10,500 (21.0x)" in row and "1.030 (1.7x)" in row
    assert "round trip p50 <= 0.5 ms: 0.550 ms (central FIFO + node queue, tcp)" in text
    assert "no-op throughput >= 20x Dask's: 21.0x (central FIFO + node queue, tcp)" in text

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

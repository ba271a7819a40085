"""Cluster description: generated, written, read back; bad fields named with file and line."""

import pytest

from aviary.common.cluster import ClusterError, dump_cluster, load_cluster, local_cluster


def test_local_cluster_round_trips_through_toml(tmp_path):
    c = local_cluster(
        nodes=5, slots=2, schedulers=2, central=True, short_partition=0.2, params={"probe_ratio": 2.0}
    )
    path = tmp_path / "c.toml"
    path.write_text(dump_cluster(c))
    back = load_cluster(path)
    assert back == c
    assert len(back.nodes) == 5 and back.total_slots == 10
    assert [n.partition for n in back.nodes].count("short") == 1
    assert len({p.port for p in back.processes}) == len(back.processes)


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda t: t.replace("port = ", 'port = "x"#', 1), "field 'port'"),
        (lambda t: t.replace('role = "node"', 'role = "nod"', 1), "field 'role'"),
        (lambda t: t.replace("slots = 2", "slots = 0", 1), "field 'slots'"),
        (lambda t: t.replace('name = "node-1"', 'name = "node-0"', 1), "field 'name'"),
        (lambda t: t + "[[process]]\nname = 3\n", "field 'name'"),
        (lambda t: t + "[oops\n", "line"),
        (lambda t: t.replace("slots = 2", "slots = 2\nslot = 3", 1), "unknown field 'slot'"),
        (lambda t: t.replace("slots = 2", "slots = 2\ncapacity = { cores = -1 }", 1), "field 'capacity'"),
        (lambda t: t.replace("slots = 2", "slots = 2\ncapacity = { gpus = 1 }", 1), "field 'capacity'"),
        (lambda t: t.replace("seed = 0", "seed = 0\nsed = 1", 1), "unknown field 'sed'"),
    ],
)
def test_bad_field_gives_one_line_with_file_and_line(tmp_path, edit, needle):
    """Including unknown fields and capacities that are no resource vector."""
    path = tmp_path / "c.toml"
    path.write_text(edit(dump_cluster(local_cluster(nodes=2, slots=2, schedulers=1))))
    with pytest.raises(ClusterError) as info:
        load_cluster(path)
    text = str(info.value)
    assert "\n" not in text and str(path) in text and needle in text


def test_node_capacities_and_attributes_round_trip(tmp_path):
    from aviary.common.resources import Resources

    c = local_cluster(nodes=2, slots=16, schedulers=0, central=True, capacity=Resources(16, 64, 1, 1))
    c.nodes[0].attributes = {"gpu": True, "rack": "r1"}
    path = tmp_path / "c.toml"
    path.write_text(dump_cluster(c))
    back = load_cluster(path)
    assert back == c and back.nodes[0].resources == Resources(16, 64, 1, 1)
    assert back.nodes[0].attributes == {"gpu": True, "rack": "r1"}

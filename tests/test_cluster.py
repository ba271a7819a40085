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


def test_errors_name_the_line_of_the_key_not_of_its_table(tmp_path):
    path = tmp_path / "c.toml"
    text = dump_cluster(local_cluster(nodes=2, slots=2, schedulers=1))
    path.write_text(text.replace("slots = 2", "slots = 0", 1))
    line = 1 + path.read_text().splitlines().index("slots = 0")
    with pytest.raises(ClusterError) as info:
        load_cluster(path)
    assert str(info.value) == (
        f"{path}:{line}: [[process]] #3: field 'slots': a node needs at least 1 slot, got 0"
    )
    path.write_text(text.replace("[[process]]", "[[procss]]", 1))
    header = 1 + text.splitlines().index("[[process]]")
    with pytest.raises(ClusterError, match=rf"c\.toml:{header}: unknown table \[\[procss\]\] \(did you"):
        load_cluster(path)
    path.write_text(text.replace('executor = "timer"', 'executor = "dockr"'))
    with pytest.raises(ClusterError, match=r"c\.toml:3: \[cluster\]: field 'executor': 'dockr' is not one"):
        load_cluster(path)
    path.write_text(text.replace("seed = 0", "seed = -1"))
    with pytest.raises(ClusterError, match=r"c\.toml:4: \[cluster\]: field 'seed': must be >= 0"):
        load_cluster(path)
    path.write_text("process = 3\n")
    with pytest.raises(ClusterError, match=r"c\.toml:1: process: expected \[\[process\]\] tables"):
        load_cluster(path)


def test_toml_lines_find_keys_in_tables_arrays_dotted_keys_and_inline_tables():
    from aviary.common.cluster import TomlLines

    lines = TomlLines(
        "[cluster]\n"
        "policy = 'x'  # a comment\n"
        "params.quantum = 3\n"
        "[[process]]\n"
        "name = 'a'\n"
        "[[process]]\n"
        "  name = 'b'\n"
        "[ cluster.params ]\n"
        "cutoff = 1\n"
    )
    assert lines.line("cluster", "policy") == 2
    assert lines.line("cluster.params", "quantum") == 3  # a dotted key of the parent table
    assert lines.line("cluster.params", "cutoff") == 9
    assert (lines.line("process", "name", 0), lines.line("process", "name", 1)) == (5, 7)
    assert lines.line("process", "port", 1) == 6  # not there: its table's header
    assert lines.line("nowhere", "x") is None
    inline = TomlLines("[cluster]\nparams = { quantum = 3 }\n")
    assert inline.line("cluster.params", "quantum") == 2

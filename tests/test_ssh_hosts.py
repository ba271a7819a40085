"""System: a testbed over several hosts started in one command over SSH (``aviary replay --cluster``,
``aviary up --cluster``).

The test makes three "hosts": network namespaces on a bridge of its own (10.232.0.0/24), each running
Debian's ``sshd`` on its own address with a host key the test made; the user is a home folder of the
test's with a key pair, ``known_hosts`` and nothing else, so the launcher gets its credentials and host
keys where a user's come from. The frontend runs in the root namespace (10.232.0.1).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import namespace_hosts, need_root, pids

pytestmark = pytest.mark.system

BRIDGE = "avbr1"
ROOT = "10.232.0.1"
HOSTS = {"avssh1": "10.232.0.2", "avssh2": "10.232.0.3", "avssh3": "10.232.0.4"}  # namespace -> address
SSHD = "/usr/sbin/sshd"


def keygen(path: Path) -> str:
    """A new ed25519 key pair at ``path``; its public line."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip()


def answers(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.5):
            return True
    except OSError:
        return False


@dataclass
class Hosts:
    home: Path  # the user's HOME: .ssh/id_ed25519 and .ssh/known_hosts
    sshd: dict[str, int]  # namespace -> sshd's pid

    def running(self) -> dict[str, set[int]]:
        """Processes other than sshd in each namespace."""
        return {ns: pids(ns) - {pid} for ns, pid in self.sshd.items() if pids(ns) - {pid}}

    def left(self) -> dict[str, set[int]]:
        """What still runs after sshd's session processes had 5 s to exit (they end after the client)."""
        deadline = time.monotonic() + 5
        while (running := self.running()) and time.monotonic() < deadline:
            time.sleep(0.1)
        return running

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}
        return env | {"HOME": str(self.home)}


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hosts]:
    reason = "needs root, iproute2 and openssh-server (scripts/setup-docker.sh installs them)"
    need_root(reason, also=Path(SSHD).exists())
    base = tmp_path_factory.mktemp("ssh")
    home = base / "home"
    (home / ".ssh").mkdir(parents=True, mode=0o700)
    client = keygen(home / ".ssh" / "id_ed25519")
    (base / "authorized_keys").write_text(client + "\n")
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation folder
    servers: list[subprocess.Popen[bytes]] = []
    known = []
    with namespace_hosts(BRIDGE, ROOT, HOSTS):
        try:
            for ns, address in HOSTS.items():
                hostkey = base / f"{ns}_host_key"
                known.append(f"{address} {keygen(hostkey)}")
                config = base / f"{ns}_sshd_config"
                config.write_text(
                    f"ListenAddress {address}\nHostKey {hostkey}\nAuthorizedKeysFile {base}/authorized_keys\n"
                    "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                    "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                    f"PidFile {base}/{ns}_sshd.pid\nSubsystem sftp internal-sftp\n"
                )
                servers.append(
                    subprocess.Popen(
                        ["ip", "netns", "exec", ns, SSHD, "-D", "-e", "-f", str(config)],
                        stderr=open(base / f"{ns}_sshd.log", "wb"),  # noqa: SIM115 (the child's)
                    )
                )
            (home / ".ssh" / "known_hosts").write_text("\n".join(known) + "\n")
            deadline = time.monotonic() + 10
            while not all(answers(a, 22) for a in HOSTS.values()):
                assert time.monotonic() < deadline, "sshd did not start: " + " ".join(
                    (base / f"{ns}_sshd.log").read_text() for ns in HOSTS
                )
                time.sleep(0.1)
            yield Hosts(
                home, {ns: server.pid for ns, server in zip(HOSTS, servers, strict=True)}
            )  # ip execs sshd
        finally:
            for server in servers:
                server.kill()
                server.wait()


def aviary(*args: str) -> list[str]:
    return [sys.executable, "-m", "aviary.launch.cli", *args]


@pytest.fixture
def cluster(hosts: Hosts, tmp_path: Path) -> Path:
    """An Eagle testbed over the three hosts (keys: the addresses are not loopback)."""
    path = tmp_path / "cluster.toml"
    flags = ["cluster", "--policy", "eagle", "--nodes", "6", "--slots", "2", "--schedulers", "2",
             "--seed", "3", "--time-scale", "50000", "--hosts", ",".join(HOSTS.values()),
             "--frontend-host", ROOT, "--out", str(path)]  # fmt: skip
    subprocess.run(aviary(*flags), check=True, capture_output=True)
    return path


def remote_folders() -> set[Path]:
    """The hosts' private folders (the namespaces share this file system)."""
    return set(Path("/tmp").glob("aviary-??????"))


def test_one_command_replays_across_ssh_hosts_and_leaves_nothing_behind(
    hosts: Hosts, cluster: Path, tmp_path
):
    """``aviary replay --cluster`` starts every host's share over SSH, replays 80 jobs across them,
    stops them, fetches their logs and removes their folders: no process but sshd is left."""
    before = remote_folders()
    out = tmp_path / "run"
    flags = ["replay", "--cluster", str(cluster), "--jobs", "80", "--start", "6000", "--task-scale",
             "0.0012", "--load", "0.7", "--seed", "1", "--stall-timeout", "30", "--quiet", "--out",
             str(out)]  # fmt: skip
    done = subprocess.run(aviary(*flags), env=hosts.env(), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["finished"] == summary["jobs"] == 80 and summary["unfinished"] == []
    assert summary["counters"]["tasks_finished"] == summary["tasks"]
    assert summary["messages"]["Probe"] > 0 and summary["messages"]["LongTask"] > 0
    assert "all 9 processes registered on 3 hosts" in done.stdout
    for address in HOSTS.values():  # every host's output and its processes' logs came back
        said = (out / "hosts" / f"{address}.log").read_text()
        assert "processes registered" in said and "every process exited cleanly" in said, said
        assert list((out / "logs" / address).glob("node-*.log")), address
    assert remote_folders() == before
    assert hosts.left() == {}


def start_up(hosts: Hosts, cluster: Path, out: Path) -> subprocess.Popen[str]:
    """``aviary up --cluster`` in the background, returned once every host registered."""
    up = subprocess.Popen(
        aviary("up", "--cluster", str(cluster), "--dir", str(out)),
        env=hosts.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert up.stdout is not None
    lines = []
    for line in up.stdout:
        lines.append(line)
        if "processes registered on" in line:
            return up
    up.wait()
    pytest.fail(
        "aviary up --cluster did not register: " + "".join(lines) + (up.stderr.read() if up.stderr else "")
    )


def test_ctrl_c_stops_every_host(hosts: Hosts, cluster: Path, tmp_path):
    before = remote_folders()
    up = start_up(hosts, cluster, tmp_path / "up")
    assert all(hosts.running().get(ns) for ns in HOSTS), "a host runs nothing"
    up.send_signal(signal.SIGINT)
    out, err = up.communicate(timeout=60)
    assert up.returncode == 0, out + err
    assert "stopped: every host's processes exited" in out
    assert hosts.left() == {}
    assert remote_folders() == before
    assert list((tmp_path / "up" / "logs" / HOSTS["avssh2"]).glob("node-*.log"))


def test_ctrl_c_while_the_hosts_start_stops_them_too(hosts: Hosts, cluster: Path, tmp_path):
    """SIGINT as soon as the launcher says it is starting (the hosts are connecting, copying, starting):
    the launcher exits with status 130 and no process or folder is left on any host."""
    before = remote_folders()
    up = subprocess.Popen(
        aviary("up", "--cluster", str(cluster), "--dir", str(tmp_path / "up")),
        env=hosts.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert up.stdout is not None
    assert "starting 9 processes on 3 hosts" in up.stdout.readline()
    up.send_signal(signal.SIGINT)
    out, err = up.communicate(timeout=60)
    assert up.returncode == 130 and "interrupted" in err, out + err
    assert hosts.left() == {}
    assert remote_folders() == before


def test_what_stops_a_start_is_one_line_naming_the_host(hosts: Hosts, cluster: Path, tmp_path):
    """A host that cannot be reached, an unknown host key, a port in use on a host and a missing aviary:
    exit status 2, one line each naming the host, and nothing left running on any host, nor its folder."""
    before = remote_folders()

    def refused(cluster_file: Path, *more: str) -> str:
        """``aviary up --cluster``'s one line, once it exited with status 2, no folder left behind."""
        up = aviary("up", "--cluster", str(cluster_file), "--dir", str(tmp_path / "up"), *more)
        done = subprocess.run(up, env=hosts.env(), capture_output=True, text=True)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert remote_folders() == before
        return done.stderr

    nowhere = tmp_path / "nowhere.toml"  # an address of the test's bridge that no host answers
    flags = ["cluster", "--nodes", "2", "--hosts", f"{HOSTS['avssh1']},10.232.0.9", "--frontend-host", ROOT,
             "--out", str(nowhere)]  # fmt: skip
    subprocess.run(aviary(*flags), check=True, capture_output=True)
    assert "host 10.232.0.9: cannot reach its SSH server" in refused(nowhere)
    assert hosts.left() == {}

    known = hosts.home / ".ssh" / "known_hosts"
    saved = known.read_text()
    known.write_text("".join(line + "\n" for line in saved.splitlines() if HOSTS["avssh2"] not in line))
    try:
        said = refused(cluster)
    finally:
        known.write_text(saved)
    assert f"host {HOSTS['avssh2']}: its host key is not in ~/.ssh/known_hosts" in said
    assert hosts.left() == {}

    taken = next(p for p in listening(cluster) if p[0] == HOSTS["avssh1"])
    hold = (  # SO_REUSEADDR: the earlier tests' connections to that port may linger in TIME_WAIT
        "import socket, time; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
        f"s.bind(('{taken[0]}', {taken[1]})); s.listen(); time.sleep(60)"
    )
    holder = subprocess.Popen(["ip", "netns", "exec", "avssh1", sys.executable, "-c", hold])
    try:
        deadline = time.monotonic() + 10
        while not answers(taken[0], taken[1]):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        said = refused(cluster)
    finally:
        holder.kill()
        holder.wait()
    assert f"host {HOSTS['avssh1']}: aviary host exited with status 2 at its start: " in said
    assert f"cannot listen on {taken[0]}:{taken[1]}" in said
    assert hosts.left() == {}  # the port's holder gone too

    said = refused(cluster, "--remote-aviary", "/no/aviary")
    assert "/no/aviary is not installed there" in said and "host 10.232.0." in said
    assert hosts.left() == {}


def listening(cluster: Path) -> list[tuple[str, int]]:
    """Where every process of the cluster file but the frontend listens: (host, port)."""
    from aviary.common.cluster import load_cluster

    return [(p.host, p.port) for p in load_cluster(cluster).processes if p.role != "frontend"]


def test_a_host_that_dies_stops_every_other_host(hosts: Hosts, cluster: Path, tmp_path):
    """Every process of one host killed at once (sshd among them, as when the machine fails): the
    launcher says which host in one line, stops the others and exits with status 1."""
    before = remote_folders()
    up = start_up(hosts, cluster, tmp_path / "up")
    for pid in pids("avssh3"):
        os.kill(pid, signal.SIGKILL)
    out, err = up.communicate(timeout=60)
    hosts.sshd["avssh3"] = -1  # its sshd is gone too: this test runs last
    assert up.returncode == 1, out + err
    assert err.count("\n") == 1 and err.startswith(f"aviary up: host {HOSTS['avssh3']}: "), err
    assert hosts.left() == {}
    (kept,) = remote_folders() - before  # only the dead host's folder (with its keys) could not be removed
    assert {p.name for p in (kept / "cluster.keys").iterdir()} == {
        "control.secret",
        "node-2.secret",
        "node-5.secret",
    }
    shutil.rmtree(kept)

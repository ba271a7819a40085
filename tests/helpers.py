"""What several test files share: the sends among a core's effects, and test hosts in network namespaces."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from aviary.common.effects import Effect, Multicast, Send


def sent(effects: list[Effect], kind: type) -> list[tuple[str, Any]]:
    """The (target, message) of every ``Send`` of a ``kind`` message among ``effects`` (a ``Multicast``
    as a ``Send`` to each of its targets)."""
    out: list[tuple[str, Any]] = []
    for e in effects:
        if isinstance(e, Send) and isinstance(e.msg, kind):
            out.append((e.to, e.msg))
        elif isinstance(e, Multicast) and isinstance(e.msg, kind):
            out += [(to, e.msg) for to in e.to]
    return out


def dropped(counters: dict[str, Any]) -> dict[str, Any]:
    """A real run's counters of frames its processes dropped (bad frames, a message from a sender whose
    role may not send it): a legitimate run has none, so each family's real test asserts ``{}``."""
    return {k: v for k, v in counters.items() if k.startswith("dropped.") and v}


def ip(*args: str, check: bool = True) -> None:
    subprocess.run(["ip", *args], check=check, capture_output=True)


def pids(ns: str) -> set[int]:
    """The processes running in namespace ``ns``."""
    done = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
    return {int(x) for x in done.stdout.split()}


def need_root(reason: str, *, also: bool = True) -> None:
    """Skip (fail in CI, where the system tests must run) unless root with iproute2 and ``also``."""
    if os.geteuid() != 0 or shutil.which("ip") is None or not also:
        if os.environ.get("AVIARY_REQUIRE_DOCKER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)


def _teardown(bridge: str, hosts: dict[str, str]) -> None:
    for ns in hosts:
        for pid in pids(ns):
            os.kill(pid, signal.SIGKILL)
        ip("netns", "del", ns, check=False)  # takes its end of the veth pair, hence the pair, with it
    ip("link", "del", bridge, check=False)


@contextmanager
def namespace_hosts(bridge: str, root: str, hosts: dict[str, str]) -> Iterator[None]:
    """Test hosts: a network namespace per entry of ``hosts`` (namespace -> address, /24), each joined by
    a veth pair to ``bridge``, which has address ``root`` in this namespace; all removed afterwards (and
    leftovers of an interrupted run before), every process still in them killed."""
    _teardown(bridge, hosts)
    try:
        ip("link", "add", bridge, "type", "bridge")
        ip("addr", "add", f"{root}/24", "dev", bridge)
        ip("link", "set", bridge, "up")
        for ns, address in hosts.items():
            ip("netns", "add", ns)
            ip("link", "add", f"{ns}-h", "type", "veth", "peer", "name", f"{ns}-n")
            ip("link", "set", f"{ns}-h", "master", bridge, "up")
            ip("link", "set", f"{ns}-n", "netns", ns)
            ip("-n", ns, "addr", "add", f"{address}/24", "dev", f"{ns}-n")
            ip("-n", ns, "link", "set", f"{ns}-n", "up")
            ip("-n", ns, "link", "set", "lo", "up")
        yield
    finally:
        _teardown(bridge, hosts)


def docker_engine() -> Any:
    """A docker client with the task image built; skips (fails in CI: AVIARY_REQUIRE_DOCKER=1) when docker
    cannot run here."""
    try:
        from aviary.worker import dockertask

        client = dockertask.connect()
        dockertask.ensure_image(client)
    except Exception as exc:
        reason = (
            f"no usable docker engine ({type(exc).__name__}: {exc}); "
            "run scripts/setup-docker.sh as root to install and start one"
        )
        if os.environ.get("AVIARY_REQUIRE_DOCKER") == "1":
            pytest.fail(f"AVIARY_REQUIRE_DOCKER=1 but {reason}")
        pytest.skip(reason)
    return client


def orphans(client: Any) -> list[str]:
    """Task containers whose owner process is gone."""
    import psutil

    from aviary.worker.dockertask import OWNER_LABEL

    out = []
    for info in client.api.containers(all=True, filters={"label": OWNER_LABEL}):
        _, pid, started = info["Labels"][OWNER_LABEL].split(":", 2)
        try:
            if repr(psutil.Process(int(pid)).create_time()) == started:
                continue
        except psutil.Error:
            pass
        out.append(info["Id"])
    return out

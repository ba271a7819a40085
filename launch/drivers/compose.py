"""A testbed in containers: one per node monitor and scheduler, host networking (DESIGN §1, docker/).

    aviary compose write DIR [--policy P] [--nodes N] [--slots S] [--schedulers M] [--executor E]
                             [--cpus C] [--memory BYTES] [policy flags, as aviary up]
    aviary compose up DIR       # docker-compose -f DIR/docker-compose.yml -p PROJECT up -d, then checks
    aviary replay --connect DIR/cluster.toml ...
    aviary compose down DIR     # docker-compose ... down, and any container of the folder left

``write`` makes a cluster description
(``DIR/cluster.toml``, loopback addresses on free ports, as ``aviary up`` does) and
``DIR/docker-compose.yml``: a service per process but the frontend (which ``aviary replay --connect``
plays) or, with ``--nodes-per-process K``, per pack of K node monitors, each running ``python -m
aviary.launch.drivers.process cluster.toml NAME`` with ``network_mode: host``
(the processes reach each other at the addresses of the description, as on loopback) and ``pid:
host``, optionally limited to ``--cpus`` and ``--memory``. The file (JSON, which is YAML; the Compose
Specification without ``version``, as docker-compose 1.27+ and v2 read it) runs unchanged under
``docker-compose -f DIR/docker-compose.yml up -d``: ``DIR/.env`` names the project, the node image is
built from ``DIR/node-image`` when missing, never pulled. ``up`` runs that command where docker-compose
is installed (Debian 12's 1.29.2, or the ``docker compose`` plugin) and through the docker SDK where it
is not, then waits until every process listens on its address: a container that exited at its start
is one line (exit code, last log line), not a started one.

No registry is reachable, so there is no Python base image to pull: the node image
(``aviary-node:<hash>``, built locally ``FROM scratch``) holds only Debian's merged-/usr symbolic
links, and the services bind-mount, read-only, the host's ``/usr`` and ``/etc``, this Python
installation and the aviary source at the same paths (and a plug-in policy's folder, wherever it is
installed, put on ``PYTHONPATH``: :func:`~aviary.launch.policies.registry.import_root`): every container
runs the host's interpreter and code, isolated in its own mount namespace and cgroup (hence the CPU and
memory limits). With ``--executor docker``, the node monitors also get the engine's socket and start
their task containers beside their own (docker-out-of-docker).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import site
import socket
import subprocess
import sys
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ...common.cluster import Cluster, load_cluster, write_cluster
from ..flags.spec import UsageError
from ..policies.registry import import_root

PROJECT_LABEL = "aviary.testbed"
"""Every container of a testbed carries this label; its value is the testbed's folder."""
PROCESS_LABEL = "aviary.process"
REPOSITORY = "aviary-node"
DOCKER_SOCKET = "/var/run/docker.sock"
PARALLEL = 8
ROOT_LINKS = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}
COMPOSE_FILE = "docker-compose.yml"
IMAGE_CONTEXT = "node-image"
"""The node image's build context in the testbed folder, for docker-compose where the image is missing."""
AUTO: Literal["auto"] = "auto"
Tool = list[str] | None | Literal["auto"]
"""A docker-compose command, None for the docker SDK, or AUTO: :func:`compose_tool`'s."""


def host_mounts(workdir: Path, extra: tuple[Path, ...] = ()) -> list[str]:
    """Read-only bind mounts (same path inside) for the host's interpreter, libraries and code (and the
    ``extra`` folders: a plug-in's), and the testbed folder read-write; nested paths are left out."""
    paths = {
        **{str(p): "ro" for p in extra},
        "/usr": "ro",
        "/etc": "ro",
        sys.base_prefix: "ro",
        sys.prefix: "ro",
        str(Path(__file__).resolve().parents[2]): "ro",
    }
    for p in site.getsitepackages():
        paths[p] = "ro"
    paths[str(workdir)] = "rw"
    kept: dict[str, str] = {}
    for path in sorted(paths, key=len):
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept[path] = paths[path]
    if str(workdir) not in kept:  # under a read-only one: mounted read-write all the same
        kept[str(workdir)] = "rw"
    return [f"{p}:{p}:{mode}" for p, mode in kept.items()]


def node_image_context() -> tuple[str, bytes]:
    """``(tag, tar)`` of the node image: FROM scratch + the merged-/usr links and empty mount points."""
    dockerfile = b"FROM scratch\nCOPY rootfs/ /\n"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size, info.mtime = len(dockerfile), 0
        tar.addfile(info, io.BytesIO(dockerfile))
        for name in ("rootfs", "rootfs/tmp", "rootfs/usr", "rootfs/etc"):
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o1777 if name.endswith("tmp") else 0o755, 0
            tar.addfile(info)
        for name, target in sorted(ROOT_LINKS.items()):
            info = tarfile.TarInfo(f"rootfs/{name}")
            info.type, info.linkname, info.mtime = tarfile.SYMTYPE, target, 0
            tar.addfile(info)
    data = buf.getvalue()
    return f"{REPOSITORY}:{hashlib.sha256(data).hexdigest()[:16]}", data


def write_image_context(path: Path) -> None:
    """Unpack the node image's build context into ``path`` (replaced), for ``docker-compose build``."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(node_image_context()[1])) as tar:
        for member in tar.getmembers():
            target = path / member.name
            if member.isdir():
                target.mkdir(exist_ok=True)
                target.chmod(member.mode)
            elif member.issym():
                target.symlink_to(member.linkname)
            else:
                source = tar.extractfile(member)
                assert source is not None
                target.write_bytes(source.read())


def project_name(workdir: Path) -> str:
    """The compose project of the testbed in ``workdir``: one per folder."""
    return f"aviary-{hashlib.sha256(str(workdir.resolve()).encode()).hexdigest()[:8]}"


def compose_env(workdir: Path, services: int) -> dict[str, str]:
    """docker-compose's settings for the testbed (in ``DIR/.env``, which it reads): the project's name,
    a patient engine (600 s), and a parallel limit of twice the services. docker-compose 1.x holds a
    slot of its global limit (default 64) for each service it creates and needs another within (one per
    container): with 64 services or more created at once it may deadlock, every slot held by a service
    waiting for one (docker/compose issues 5864, 7486, 8161; 100 nodes hung here)."""
    return {
        "COMPOSE_PROJECT_NAME": project_name(workdir),
        "COMPOSE_PARALLEL_LIMIT": str(max(64, 2 * services)),
        "COMPOSE_HTTP_TIMEOUT": "600",
    }


def compose_spec(
    cluster: Cluster, workdir: Path, image: str, *, cpus: float | None = None, memory: int | None = None
) -> dict[str, Any]:
    """The docker-compose document for ``cluster`` (whose description is ``workdir/cluster.toml``)."""
    workdir = workdir.resolve()
    cluster_file = str(workdir / "cluster.toml")
    environment = {"PYTHONUNBUFFERED": "1", "HOME": str(workdir)}
    plugin: tuple[Path, ...] = ()
    if cluster.policy_source:  # a plug-in: its code where this process imports it from, on its sys.path
        plugin = (import_root(cluster.policy_source),)
        environment["PYTHONPATH"] = str(plugin[0])
    mounts = host_mounts(workdir, plugin)
    services: dict[str, Any] = {}
    for unit, members in cluster.units().items():
        role = members[0].role
        if role == "frontend":
            continue
        volumes = list(mounts)
        if role == "node" and cluster.executor == "docker":
            volumes.append(f"{DOCKER_SOCKET}:{DOCKER_SOCKET}")
        service: dict[str, Any] = {
            "image": image,
            "build": {"context": IMAGE_CONTEXT},  # only where the image is missing
            "pull_policy": "never",  # v2 honours it; 1.29 builds a missing image that has a build
            "command": [sys.executable, "-m", "aviary.launch.drivers.process", cluster_file, unit],
            "network_mode": "host",
            "pid": "host",
            "working_dir": str(workdir),
            "volumes": volumes,
            "environment": environment,
            "labels": {PROJECT_LABEL: str(workdir), PROCESS_LABEL: unit, "aviary.role": role},
            "stop_signal": "SIGTERM",
            "stop_grace_period": "5s",
        }
        if cpus is not None:
            service["cpus"] = cpus
        if memory is not None:
            service["mem_limit"] = memory
        services[unit] = service
    return {"services": services}


def write(
    workdir: Path,
    cluster: Cluster,
    *,
    cpus: float | None = None,
    memory: int | None = None,
    keys: bool = True,
) -> Path:
    """Write ``cluster.toml`` (with CurveZMQ keys in ``cluster.keys/`` unless not ``keys``: the folder is
    mounted in every container), ``docker-compose.yml``, ``.env`` (the project's name) and the image's
    build context into ``workdir``; return the compose file."""
    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    if keys and cluster.keys is None:
        from ...common.keys import make_keys

        make_keys(cluster, workdir / "cluster.toml")
    else:
        write_cluster(cluster, workdir / "cluster.toml")
    tag, _ = node_image_context()
    write_image_context(workdir / IMAGE_CONTEXT)
    path = workdir / COMPOSE_FILE
    spec = compose_spec(cluster, workdir, tag, cpus=cpus, memory=memory)
    settings = compose_env(workdir, len(spec["services"]))
    (workdir / ".env").write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    path.write_text(json.dumps(spec, indent=2) + "\n")
    return path


# -- the engine and the tools ------------------------------------------------------------------------


def engine() -> Any:
    """A docker client, or a one-line ``UsageError`` when no engine answers."""
    from ...worker.dockertask import connect

    try:
        return connect()
    except Exception as exc:
        raise UsageError(f"no docker engine answers ({exc}); as root: bash scripts/setup-docker.sh") from None


def compose_tool() -> list[str] | None:
    """The docker-compose command where installed (``docker-compose``, else the ``docker compose``
    plugin), else None (the docker SDK does its work)."""
    if found := shutil.which("docker-compose"):
        return [found]
    docker = shutil.which("docker")
    if docker and _run([docker, "compose", "version"], timeout=20).returncode == 0:
        return [docker, "compose"]
    return None


def _resolve(tool: Tool) -> list[str] | None:
    return compose_tool() if isinstance(tool, str) else tool


def tool_name(tool: list[str] | None) -> str:
    """``docker-compose 1.29.2``, or ``the docker SDK``."""
    if tool is None:
        return "the docker SDK"
    version = _run([*tool, "version", "--short"], timeout=20).stdout.strip()
    return f"{'docker compose' if len(tool) > 1 else Path(tool[0]).name} {version}".strip()


def _run(
    command: list[str], timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **(env or {})}
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(command, 1, "", f"did not finish in {timeout:.0f} s (killed)")
    except OSError as exc:
        return subprocess.CompletedProcess(command, 1, "", f"{command[0]}: {exc}")


def _compose(tool: list[str], workdir: Path, services: int, *args: str, timeout: float = 900) -> None:
    """Run ``TOOL -f DIR/docker-compose.yml -p PROJECT ARGS`` with :func:`compose_env`'s settings (a
    parallel limit set lower in the environment is raised); a failure is one line (its last)."""
    command = [*tool, "-f", str(workdir / COMPOSE_FILE), "-p", project_name(workdir), *args]
    env = compose_env(workdir, services)
    given = os.environ.get("COMPOSE_PARALLEL_LIMIT", "")
    if given.isdigit() and int(given) > int(env["COMPOSE_PARALLEL_LIMIT"]):
        env["COMPOSE_PARALLEL_LIMIT"] = given
    env["COMPOSE_HTTP_TIMEOUT"] = os.environ.get("COMPOSE_HTTP_TIMEOUT", env["COMPOSE_HTTP_TIMEOUT"])
    done = _run(command, timeout, env)
    if done.returncode != 0:
        lines = [line.strip() for line in (done.stderr + done.stdout).splitlines() if line.strip()]
        said = lines[-1] if lines else f"exit status {done.returncode}"
        raise UsageError(f"{' '.join(command[: len(tool)])} {' '.join(args)}: {said}")


def ensure_node_image(client: Any) -> str:
    import docker.errors

    tag, context = node_image_context()
    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        client.images.build(fileobj=io.BytesIO(context), custom_context=True, tag=tag, rm=True, pull=False)
    return tag


def ensure_node_image_tag(client: Any, tag: str) -> None:
    """Build the node image if ``tag`` is ours and missing (a file written by another version of this
    module names another tag: it is built from this module's context all the same)."""
    import docker.errors

    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        built = ensure_node_image(client)
        if built != tag:
            client.images.get(built).tag(*tag.split(":", 1))


def _containers(client: Any, workdir: Path) -> list[Any]:
    """The testbed's containers, any state (sparse: ``attrs`` as the engine lists them)."""
    label = f"{PROJECT_LABEL}={workdir.resolve()}"
    return list(client.containers.list(all=True, sparse=True, filters={"label": label}))


# -- up and down ---------------------------------------------------------------------------------------


@dataclass
class Started:
    """What ``up`` did: the processes listening, one line per container that is not, the tool used."""

    running: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    via: str = ""
    seconds: float = 0.0
    launched: float = 0.0
    """Seconds until the tool (or the SDK) had started the containers; ``seconds``: until all listened."""


def _load_spec(workdir: Path) -> dict[str, Any]:
    path = workdir / COMPOSE_FILE
    try:
        spec = json.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file (aviary compose write {workdir} first)") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a compose file of aviary compose write ({exc})") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("services"), dict):
        raise UsageError(f"{path}: no services: not a compose file of aviary compose write")
    return spec


def up(
    workdir: Path, client: Any = None, *, sdk: bool = False, wait: float | None = None, tool: Tool = AUTO
) -> Started:
    """Start the services of ``workdir/docker-compose.yml`` with docker-compose (``tool``, default
    :func:`compose_tool`) or, with ``sdk`` or none installed, the docker SDK; then wait up to ``wait``
    seconds (default 60 + 0.5 per service) until each process listens on its address or its container
    exited. Containers of an earlier ``up`` of the same folder are replaced first; ports held by
    something else are a one-line ``ClusterError`` before anything starts."""
    from .up import check_ports

    workdir = workdir.resolve()
    spec = _load_spec(workdir)
    cluster = load_cluster(workdir / "cluster.toml")
    names = list(spec["services"])
    tool = None if sdk else _resolve(tool)
    own = client is None
    client = client or engine()
    t0 = time.monotonic()
    try:
        down(workdir, client, tool=tool)
        units = cluster.units()
        members = [p.name for name in names for p in units.get(name, [])]
        check_ports(cluster, members, str(workdir / "cluster.toml"))
        for image in {s["image"] for s in spec["services"].values()}:
            ensure_node_image_tag(client, image)  # built here, so docker-compose neither builds nor pulls
        if tool is not None:
            _compose(tool, workdir, len(names), "up", "-d")
        else:
            _sdk_up(client, workdir, spec)
        launched = time.monotonic() - t0
        started = _settle(client, workdir, cluster, names, 60 + 0.5 * len(names) if wait is None else wait)
        seconds = time.monotonic() - t0
        started.via, started.seconds, started.launched = tool_name(tool), seconds, launched
        return started
    finally:
        if own:
            client.close()


def _sdk_up(client: Any, workdir: Path, spec: dict[str, Any]) -> None:
    """What ``docker-compose up -d`` does with the file, through the docker SDK."""
    project = project_name(workdir)

    def start(item: tuple[str, dict[str, Any]]) -> None:
        name, service = item
        volumes = {}
        for entry in service["volumes"]:
            src, dst, *mode = entry.split(":")
            volumes[src] = {"bind": dst, "mode": mode[0] if mode else "rw"}
        kwargs: dict[str, Any] = {}
        if "cpus" in service:
            kwargs["nano_cpus"] = int(service["cpus"] * 1e9)
        if "mem_limit" in service:
            kwargs["mem_limit"] = service["mem_limit"]
        client.containers.run(
            service["image"],
            service["command"],
            name=f"{project}-{name}",
            detach=True,
            network_mode="host",
            pid_mode="host",
            working_dir=service["working_dir"],
            volumes=volumes,
            environment=service["environment"],
            labels=service["labels"],
            stop_signal="SIGTERM",
            **kwargs,
        )

    with ThreadPoolExecutor(PARALLEL) as pool:  # the engine does the work; a few calls at once help
        list(pool.map(start, spec["services"].items()))


def _listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1" if host in ("*", "0.0.0.0") else host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _last_line(container: Any) -> str:
    try:
        text = container.logs(tail=20).decode(errors="replace")
    except Exception as exc:  # removed meanwhile, say
        return f"(no log: {exc})"
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "(no output)")


def _exited_line(client: Any, name: str, container: Any) -> str:
    """``NAME: container C exited at its start with code N[, out of memory]: LAST LOG LINE``."""
    try:
        info = client.api.inspect_container(container.id)
        state = info["State"]
        code, oom = state.get("ExitCode"), state.get("OOMKilled")
        limit = info.get("HostConfig", {}).get("Memory") or 0
    except Exception:
        code, oom, limit = "?", False, 0
    why = f", killed for lack of memory (limit {limit} bytes)" if oom else ""
    cname = container.attrs.get("Names", ["?"])[0].lstrip("/")
    return f"{name}: container {cname} exited at its start with code {code}{why}: {_last_line(container)}"


def _settle(client: Any, workdir: Path, cluster: Cluster, names: list[str], wait: float) -> Started:
    """Wait until each service's process listens on its address, or its container ended."""
    started = Started()
    units = cluster.units()
    pending = set(names)
    deadline = time.monotonic() + wait
    latest: dict[str, Any] = {}
    while pending:
        for c in _containers(client, workdir):
            name = c.attrs.get("Labels", {}).get(PROCESS_LABEL)
            if name not in pending:
                continue
            latest[name] = c
            if c.attrs.get("State") in ("exited", "dead"):
                started.failed.append(_exited_line(client, name, c))
                pending.discard(name)
            elif c.attrs.get("State") == "running" and all(
                _listening(p.bind or p.host, p.port) for p in units[name]
            ):
                started.running.append(name)
                pending.discard(name)
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    for name in sorted(pending):
        if name not in latest:
            started.failed.append(f"{name}: no container (did docker-compose start it?)")
            continue
        c = latest[name]
        cname = c.attrs.get("Names", ["?"])[0].lstrip("/")
        deaf = [p for p in units[name] if not _listening(p.bind or p.host, p.port)] or units[name]
        started.failed.append(
            f"{name}: container {cname} is {c.attrs.get('State')} but not listening on "
            f"{deaf[0].bind or deaf[0].host}:{deaf[0].port} after {wait:.0f} s: {_last_line(c)}"
        )
    order = {name: i for i, name in enumerate(names)}  # the file's order, whichever exited first
    started.failed.sort(key=lambda line: order.get(line.split(":", 1)[0], len(order)))
    return started


def down(workdir: Path, client: Any = None, grace: float = 5.0, *, tool: Tool = AUTO) -> int:
    """Stop (SIGTERM, then SIGKILL after ``grace`` s) and remove the testbed's containers, with
    docker-compose where installed (``tool``), then any left with the docker SDK; how many there were."""
    workdir = workdir.resolve()
    own = client is None
    client = client or engine()
    try:
        containers = _containers(client, workdir)
        if not containers:
            return 0
        command = _resolve(tool)
        if command is not None and (workdir / COMPOSE_FILE).exists():
            try:
                _compose(command, workdir, len(containers), "down", "--remove-orphans", "-t", str(int(grace)))
            except UsageError as exc:
                print(f"aviary compose down: warning: {exc}; removing them through the SDK", file=sys.stderr)

        def remove(c: Any) -> None:
            import docker.errors

            try:
                client.api.stop(c.id, timeout=int(grace))
                client.api.remove_container(c.id, force=True)
            except docker.errors.NotFound:
                pass

        with ThreadPoolExecutor(PARALLEL) as pool:
            list(pool.map(remove, _containers(client, workdir)))
        return len(containers)
    finally:
        if own:
            client.close()

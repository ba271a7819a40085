"""A testbed in containers: one per node monitor and scheduler, host networking (DESIGN §1, docker/).

    python -m aviary.launch.compose write DIR [--policy P] [--nodes N] [--slots S] [--schedulers M]
                                              [--executor E] [--cpus C] [--memory BYTES] [--seed N]
    python -m aviary.launch.compose up DIR      # start the containers (docker SDK; no compose needed)
    aviary replay --connect DIR/cluster.toml ...
    python -m aviary.launch.compose down DIR    # stop and remove them

``write`` makes a cluster description (``DIR/cluster.toml``, loopback addresses on free ports, as
``aviary up`` does) and ``DIR/docker-compose.yml``: a service per process but the frontend (which
``aviary replay --connect`` plays), each running ``python -m aviary.launch.process cluster.toml NAME``
with ``network_mode: host`` (the processes reach each other at the addresses of the description,
as on loopback) and ``pid: host``, optionally limited to ``--cpus`` and ``--memory``. The file is JSON,
which is YAML, so ``docker compose -f DIR/docker-compose.yml up -d`` runs it where compose is
installed; ``up`` and ``down`` do the same through the docker SDK, reading that file, where it is not.

No registry is reachable, so there is no Python base image to pull: the node image
(``aviary-node:<hash>``, built locally ``FROM scratch``) holds only Debian's merged-/usr symbolic
links, and the services bind-mount, read-only, the host's ``/usr`` and ``/etc``, this Python
installation and the aviary source at the same paths: every container runs the host's interpreter
and code, isolated in its own mount namespace and cgroup (hence the CPU and memory limits). With
``--executor docker``, the node monitors also get the engine's socket and start their task containers
beside their own (docker-out-of-docker).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import site
import sys
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..common.cluster import Cluster, write_cluster

PROJECT_LABEL = "aviary.testbed"
"""Every container of a testbed carries this label; its value is the testbed's folder."""
REPOSITORY = "aviary-node"
DOCKER_SOCKET = "/var/run/docker.sock"
PARALLEL = 8
ROOT_LINKS = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}


def host_mounts(workdir: Path) -> list[str]:
    """Read-only bind mounts (same path inside) for the host's interpreter, libraries and code, and
    the testbed folder read-write; nested paths are left out."""
    import aviary

    paths = {
        "/usr": "ro",
        "/etc": "ro",
        sys.base_prefix: "ro",
        sys.prefix: "ro",
        str(Path(aviary.__file__).resolve().parent): "ro",
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


def compose_spec(
    cluster: Cluster, workdir: Path, image: str, *, cpus: float | None = None, memory: int | None = None
) -> dict[str, Any]:
    """The docker-compose document for ``cluster`` (whose description is ``workdir/cluster.toml``)."""
    workdir = workdir.resolve()
    cluster_file = str(workdir / "cluster.toml")
    mounts = host_mounts(workdir)
    services: dict[str, Any] = {}
    for spec in cluster.processes:
        if spec.role == "frontend":
            continue
        volumes = list(mounts)
        if spec.role == "node" and cluster.executor == "docker":
            volumes.append(f"{DOCKER_SOCKET}:{DOCKER_SOCKET}")
        service: dict[str, Any] = {
            "image": image,
            "command": [sys.executable, "-m", "aviary.launch.process", cluster_file, spec.name],
            "network_mode": "host",
            "pid": "host",
            "working_dir": str(workdir),
            "volumes": volumes,
            "environment": {"PYTHONUNBUFFERED": "1", "HOME": str(workdir)},
            "labels": {PROJECT_LABEL: str(workdir), "aviary.process": spec.name, "aviary.role": spec.role},
            "stop_signal": "SIGTERM",
            "stop_grace_period": "5s",
        }
        if cpus is not None:
            service["cpus"] = cpus
        if memory is not None:
            service["mem_limit"] = memory
        services[spec.name] = service
    return {"name": f"aviary-{hashlib.sha256(str(workdir).encode()).hexdigest()[:8]}", "services": services}


def write(workdir: Path, cluster: Cluster, *, cpus: float | None = None, memory: int | None = None) -> Path:
    """Write ``workdir/cluster.toml`` and ``workdir/docker-compose.yml``; return the latter."""
    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    write_cluster(cluster, workdir / "cluster.toml")
    tag, _ = node_image_context()
    path = workdir / "docker-compose.yml"
    spec = compose_spec(cluster, workdir, tag, cpus=cpus, memory=memory)
    path.write_text(json.dumps(spec, indent=2) + "\n")
    return path


def ensure_node_image(client: Any) -> str:
    import docker.errors

    tag, context = node_image_context()
    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        client.images.build(fileobj=io.BytesIO(context), custom_context=True, tag=tag, rm=True, pull=False)
    return tag


def _container_name(project: str, service: str) -> str:
    return f"{project}-{service}"


def up(workdir: Path, client: Any = None) -> list[str]:
    """Start the services of ``workdir/docker-compose.yml`` (as ``docker compose up -d`` would);
    return their container names. Containers of an earlier ``up`` of the same folder are replaced."""
    from ..worker.dockertask import connect

    workdir = workdir.resolve()
    spec = json.loads((workdir / "docker-compose.yml").read_text())
    own = client is None
    client = client or connect()
    try:
        down(workdir, client)
        for service in spec["services"].values():
            ensure_node_image_tag(client, service["image"])

        def start(item: tuple[str, dict[str, Any]]) -> str:
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
            container = client.containers.run(
                service["image"],
                service["command"],
                name=_container_name(spec["name"], name),
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
            return str(container.name)

        with ThreadPoolExecutor(PARALLEL) as pool:  # the engine does the work; a few calls at once help
            names = list(pool.map(start, spec["services"].items()))
        return names
    finally:
        if own:
            client.close()


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


def down(workdir: Path, client: Any = None, grace: float = 5.0) -> int:
    """Stop (SIGTERM, then SIGKILL after ``grace`` s) and remove the testbed's containers; how many."""
    from ..worker.dockertask import connect

    own = client is None
    client = client or connect()
    try:
        label = f"{PROJECT_LABEL}={workdir.resolve()}"
        containers = client.containers.list(all=True, filters={"label": label})

        def remove(c: Any) -> None:
            if c.status == "running":
                c.stop(timeout=int(grace))
            c.remove(force=True)

        with ThreadPoolExecutor(PARALLEL) as pool:
            list(pool.map(remove, containers))
        return len(containers)
    finally:
        if own:
            client.close()


def main(argv: list[str] | None = None) -> int:
    from .registry import POLICIES, policy_cluster

    parser = argparse.ArgumentParser(
        prog="python -m aviary.launch.compose", description=(__doc__ or "").split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    wr = sub.add_parser("write", help="write DIR/cluster.toml and DIR/docker-compose.yml")
    wr.add_argument("dir", type=Path)
    wr.add_argument("--policy", default="sparrow", choices=sorted(POLICIES))
    wr.add_argument("--nodes", type=int, default=100)
    wr.add_argument("--slots", type=int, default=1)
    wr.add_argument("--schedulers", type=int, default=2)
    wr.add_argument("--executor", default="timer", choices=["timer", "process", "docker"])
    wr.add_argument("--seed", type=int, default=0)
    wr.add_argument("--cpus", type=float, default=None, help="CPU limit of each container")
    wr.add_argument("--memory", type=int, default=None, help="memory limit of each container (bytes)")
    for name, text in (
        ("up", "start the containers of DIR/docker-compose.yml"),
        ("down", "stop and remove them"),
    ):
        sub.add_parser(name, help=text).add_argument("dir", type=Path)
    args = parser.parse_args(argv)
    if args.command == "write":
        cluster = policy_cluster(
            args.policy,
            nodes=args.nodes,
            slots=args.slots,
            schedulers=args.schedulers,
            executor=args.executor,
            seed=args.seed,
        )
        path = write(args.dir, cluster, cpus=args.cpus, memory=args.memory)
        print(
            f"{path} ({len(cluster.processes) - 1} services); then: python -m aviary.launch.compose up "
            f"{args.dir} && aviary replay --connect {args.dir / 'cluster.toml'} ..."
        )
    elif args.command == "up":
        t0 = time.monotonic()
        names = up(args.dir)
        print(f"started {len(names)} containers in {time.monotonic() - t0:.1f} s")
    else:
        print(f"removed {down(args.dir)} containers")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())

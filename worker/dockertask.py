"""The docker executor's task image: ``FROM scratch`` + Debian's static busybox + :file:`sleeptask.sh`.

No registry is reachable here, so nothing is ever pulled: the image is built locally from a context made
in memory (a Dockerfile, the host's static busybox binary, the task script) and tagged with a hash of
that context, ``aviary-sleeptask:<16 hex digits>``. :func:`ensure_image` builds it only when that tag is
missing, so it is built once per machine and rebuilt by itself when the script or busybox changes.

    python -m aviary.worker.dockertask [--check]

builds the image if needed and prints its tag; ``--check`` also runs one short task in it and checks
that it finishes (what ``scripts/setup-docker.sh`` does to decide that the engine works). The docker SDK
(``docker``) is imported by the functions that need it, not by this module.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import struct
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).with_name("sleeptask.sh")
REPOSITORY = "aviary-sleeptask"
TASK_LABEL = "aviary.sleeptask"
"""Every task container carries this label (its value: the task id), and ``aviary.owner``."""
OWNER_LABEL = "aviary.owner"
"""``<pid>:<process start time>`` of the executor's process: containers of a dead owner are orphans."""

DOCKERFILE = """\
FROM scratch
COPY busybox /bin/busybox
COPY sleeptask.sh /sleeptask.sh
ENTRYPOINT ["/bin/busybox", "sh", "/sleeptask.sh"]
"""

BUSYBOX_CANDIDATES = ("/bin/busybox", "/usr/bin/busybox")


class ImageError(RuntimeError):
    """The image cannot be made (no static busybox, or the build failed); the message says why."""


def is_static_elf(path: Path) -> bool:
    """True for an ELF executable without a program interpreter (PT_INTERP), i.e. statically linked."""
    with path.open("rb") as f:
        head = f.read(64)
        if len(head) < 64 or head[:4] != b"\x7fELF":
            return False
        is64, little = head[4] == 2, head[5] == 1
        order = "<" if little else ">"
        if is64:
            (phoff,) = struct.unpack_from(order + "Q", head, 0x20)
            phentsize, phnum = struct.unpack_from(order + "HH", head, 0x36)
        else:
            (phoff,) = struct.unpack_from(order + "I", head, 0x1C)
            phentsize, phnum = struct.unpack_from(order + "HH", head, 0x2A)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    for i in range(phnum):
        (p_type,) = struct.unpack_from(order + "I", table, i * phentsize)
        if p_type == 3:  # PT_INTERP: needs the dynamic loader, which a scratch image does not have
            return False
    return True


def find_busybox() -> Path:
    """The static busybox to put in the image: ``$AVIARY_BUSYBOX``, else Debian's ``busybox-static``."""
    env = os.environ.get("AVIARY_BUSYBOX")
    candidates = [env] if env else [*BUSYBOX_CANDIDATES, shutil.which("busybox")]
    seen = []
    for name in candidates:
        if not name or not Path(name).is_file():
            continue
        path = Path(name).resolve()
        if is_static_elf(path):
            return path
        seen.append(str(path))
    if seen:
        raise ImageError(
            f"busybox at {', '.join(seen)} is dynamically linked and cannot run in a FROM "
            "scratch image: install Debian's busybox-static (scripts/setup-docker.sh does)"
        )
    raise ImageError(
        "no busybox found: install Debian's busybox-static (scripts/setup-docker.sh does) or "
        "set AVIARY_BUSYBOX to a statically linked busybox"
    )


def build_context(busybox: Path | None = None) -> tuple[str, bytes]:
    """``(tag, tar)``: the image's content tag and its build context as an uncompressed tar."""
    files = {
        "Dockerfile": (DOCKERFILE.encode(), 0o644),
        "busybox": ((busybox or find_busybox()).read_bytes(), 0o755),
        "sleeptask.sh": (SCRIPT.read_bytes(), 0o644),
    }
    digest = hashlib.sha256()
    for name in sorted(files):
        data, mode = files[name]
        digest.update(f"{name}\0{mode:o}\0{len(data)}\0".encode())
        digest.update(data)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, (data, mode) in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, 0
            tar.addfile(info, io.BytesIO(data))
    return f"{REPOSITORY}:{digest.hexdigest()[:16]}", buf.getvalue()


def ensure_image(client: Any) -> str:
    """The task image's tag, built now (with ``client``, a ``docker.DockerClient``) if missing."""
    import docker.errors

    tag, context = build_context()
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    try:
        client.images.build(
            fileobj=io.BytesIO(context),
            custom_context=True,
            tag=tag,
            rm=True,
            forcerm=True,
            pull=False,
            labels={TASK_LABEL: "image"},
        )
    except (docker.errors.BuildError, docker.errors.APIError) as exc:
        raise ImageError(f"building the task image {tag} failed: {exc}") from exc
    return tag


def connect(**kwargs: Any) -> Any:
    """A docker client for the engine of ``$DOCKER_HOST`` (default: the local socket), API version
    negotiated with the engine; raises ``docker.errors.DockerException`` when no engine answers."""
    import docker

    client = docker.from_env(**kwargs)
    client.ping()
    return client


def check(client: Any, tag: str) -> float:
    """Run one 0.2 s task without network; return how long it took from create to exit (s).

    Its stdin stays open (as the executor's attached one does): on a closed stdin the task's reads fail
    at once and it exits with status 3 (input closed), unless its start-up alone outlasted the 0.2 s."""
    t0 = time.monotonic()
    origin = time.time_ns() // 1000
    container = client.containers.create(
        tag,
        ["200000", str(origin), "5000", "20000"],
        network_mode="none",
        stdin_open=True,
        labels={TASK_LABEL: "check"},
    )
    try:
        container.start()
        status = container.wait(timeout=30)
        out = container.logs().decode(errors="replace").strip()
        if status.get("StatusCode") != 0 or not out.startswith("done"):
            raise ImageError(f"the check task failed: status {status}, output {out!r}")
        return time.monotonic() - t0
    finally:
        container.remove(force=True)


def main(argv: list[str]) -> int:
    try:
        client = connect()
    except Exception as exc:
        print(f"aviary-sleeptask: no docker engine answers: {exc}", file=sys.stderr)
        return 1
    try:
        tag = ensure_image(client)
        print(tag)
        if "--check" in argv:
            print(f"check task ran in {check(client, tag):.3f} s", file=sys.stderr)
    except Exception as exc:
        print(f"aviary-sleeptask: {exc}", file=sys.stderr)
        return 1
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

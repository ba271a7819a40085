"""CurveZMQ keys of a cluster (``aviary keys CLUSTER.toml``) and the ZAP handler that admits them.

``make_keys`` gives every process of a cluster description, and the launchers' ``control`` socket, a
key pair: the public key goes into the description (``public_key`` of each ``[[process]]``,
``control_key`` of ``[cluster]``), the secret one into ``NAME.secret`` (z85, mode 0600) in a folder
next to the description (``cluster.keys/`` for ``cluster.toml``, mode 0700), which the description names
(``keys``). The secret files are the user's: copy the folder to every host of the testbed (or only the
files of that host's processes). Keys are never printed: logs name processes and addresses only.

A process of a keyed cluster serves CURVE (its ROUTER is a CURVE server) and connects to each peer
with that peer's public key; the ZAP handler of its ZeroMQ context (:class:`~.zmq_keys.Gate`, pyzmq's
``ThreadAuthenticator``) admits a client only if its public key is one of the cluster's, and names it
by the process that key belongs to: that name, the frame's ``User-Id``, is the sender the process
sees, whatever routing id the peer claims. A refused key is counted and logged once per address; so is a
peer that offers no key at all (ZeroMQ refuses it before any ZAP request: the socket's monitor sees it,
:class:`~.zmq_keys.Watch`). ZeroMQ is imported only where a ZeroMQ socket uses the keys:
a plain-TCP process reads its keys here (:func:`z85_decode`) and never loads it.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cluster import CONTROL, Cluster, ClusterError, Peers, write_cluster

if TYPE_CHECKING:
    import zmq

log = logging.getLogger("aviary.keys")

SECRET_SUFFIX = ".secret"

Z85 = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
"""ZeroMQ's Z85 alphabet (RFC 32): the text form of CurveZMQ keys."""
_Z85_VALUE = {c: i for i, c in enumerate(Z85)}


def z85_decode(text: bytes) -> bytes:
    """The bytes of Z85 ``text`` (ZeroMQ's ``z85.decode``, without loading ZeroMQ: a plain-TCP process
    reads its keys with it); ValueError for a length not a multiple of 5 or a character not of Z85."""
    if len(text) % 5:
        raise ValueError(f"Z85 text of {len(text)} characters (a multiple of 5 is needed)")
    out = bytearray()
    for i in range(0, len(text), 5):
        value = 0
        for c in text[i : i + 5]:
            digit = _Z85_VALUE.get(c)
            if digit is None:
                raise ValueError(f"{chr(c)!r} is not a Z85 character")
            value = value * 85 + digit
        if value >= 1 << 32:
            raise ValueError(f"Z85 group {text[i : i + 5]!r} is above 32 bits")
        out += value.to_bytes(4, "big")
    return bytes(out)


def keys_folder(cluster_file: Path) -> Path:
    """Where ``aviary keys`` puts the secret keys of ``cluster_file``: ``STEM.keys`` next to it."""
    return cluster_file.with_name(cluster_file.stem + ".keys")


def make_keys(cluster: Cluster, cluster_file: Path) -> Path:
    """Give every process of ``cluster`` and its ``control`` socket a new key pair: secrets into
    :func:`keys_folder` (0600 files in a 0700 folder), public keys into the description, which is
    rewritten at ``cluster_file``. Returns the folder. Old secrets of the same names are replaced."""
    import zmq

    folder = keys_folder(cluster_file)
    folder.mkdir(mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)
    for name in [CONTROL, *(p.name for p in cluster.processes)]:
        public, secret = zmq.curve_keypair()
        path = folder / f"{name}{SECRET_SUFFIX}"
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(secret + b"\n")
        os.replace(tmp, path)
        if name == CONTROL:
            cluster.control_key = public.decode()
        else:
            cluster.get(name).public_key = public.decode()
    cluster.keys = folder.resolve()
    write_cluster(cluster, cluster_file)
    return folder


def read_secret(folder: Path, name: str) -> bytes:
    """The secret key of process ``name`` (z85, 40 characters); a one-line :class:`ClusterError` when it
    cannot be read or is not a key."""
    path = folder / f"{name}{SECRET_SUFFIX}"
    try:
        text = path.read_bytes().strip()
    except OSError as exc:
        raise ClusterError(
            f"{path}: cannot read the secret key of {name!r}: {exc.strerror} (made by 'aviary keys')"
        ) from None
    if len(text) != 40:
        raise ClusterError(f"{path}: not a CurveZMQ secret key (40 z85 characters)")
    try:
        z85_decode(text)
    except ValueError:
        raise ClusterError(f"{path}: not a CurveZMQ secret key (40 z85 characters)") from None
    return text


@dataclass(frozen=True, slots=True)
class Curve:
    """What one process needs to speak CURVE: its key pair and every known peer's public key."""

    name: str
    public: bytes
    secret: bytes
    peers: dict[str, bytes]
    """Name -> public key (z85) of every process that may talk to this one (``control`` too)."""

    @classmethod
    def of(cls, name: str, peers: Peers) -> Curve | None:
        """The keys of ``name`` from a keyed cluster's address book; None for a cluster without keys."""
        if not peers.public or peers.key_folder is None:
            return None
        if name not in peers.public:
            raise ClusterError(f"no public key for {name!r} in the cluster description (run 'aviary keys')")
        known = {n: k.encode() for n, k in peers.public.items()}
        return cls(name, known[name], read_secret(peers.key_folder, name), known)

    def serve(self, sock: zmq.Socket[Any], domain: str) -> None:
        """Make ``sock`` a CURVE server whose clients ``Gate`` checks in ``domain`` (before bind)."""
        import zmq

        from .zmq_keys import Gate

        sock.setsockopt(zmq.CURVE_SECRETKEY, self.secret)
        sock.setsockopt(zmq.CURVE_PUBLICKEY, self.public)
        sock.setsockopt(zmq.CURVE_SERVER, 1)
        sock.setsockopt(zmq.ZAP_DOMAIN, domain.encode())
        Gate.of(sock.context).admit(domain, {k: n for n, k in self.peers.items()})

    def client(self, sock: zmq.Socket[Any], peer: str) -> bool:
        """Make ``sock``'s next connect a CURVE client of ``peer`` (False: no key known for it)."""
        key = self.peers.get(peer)
        if key is None:
            return False
        import zmq

        sock.setsockopt(zmq.CURVE_SERVERKEY, key)
        return True

    def close(self, sock: zmq.Socket[Any], domain: str) -> None:
        from .zmq_keys import Gate

        Gate.of(sock.context).forget(domain)

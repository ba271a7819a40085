"""Which transport a process speaks: ZeroMQ (:mod:`.transport`, the default) or plain TCP
(:mod:`.tcp_transport`, ``transport = "tcp"`` in the cluster description). Every process of a testbed
speaks the same one: the choice travels in the address book (:attr:`Peers.transport`)."""

from __future__ import annotations

from collections.abc import Mapping

from .tcp_transport import TcpTransport
from .transport import MAX_FRAME, Transport

AnyTransport = Transport | TcpTransport


def open_transport(
    name: str, bind: str, advertise: str, peers: Mapping[str, str], *, max_frame: int = MAX_FRAME
) -> AnyTransport:
    """The transport ``peers`` names (:attr:`Peers.transport`; a plain mapping: ZeroMQ)."""
    kind = TcpTransport if getattr(peers, "transport", "zmq") == "tcp" else Transport
    return kind(name, bind, advertise, peers, max_frame=max_frame)

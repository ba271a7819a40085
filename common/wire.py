"""Which transport a process speaks: ZeroMQ (:mod:`.transport`, the default) or plain TCP
(:mod:`.tcp_transport`, ``transport = "tcp"`` in the cluster description). Every process of a testbed
speaks the same one: the choice travels in the address book (:attr:`Peers.transport`). ZeroMQ is
imported only by a process that speaks it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeAlias

from .addresses import MAX_FRAME
from .tcp_transport import TcpTransport

if TYPE_CHECKING:
    from .transport import Transport

AnyTransport: TypeAlias = "Transport | TcpTransport"


def open_transport(
    name: str, bind: str, advertise: str, peers: Mapping[str, str], *, max_frame: int = MAX_FRAME
) -> AnyTransport:
    """The transport ``peers`` names (:attr:`Peers.transport`; a plain mapping: ZeroMQ)."""
    if getattr(peers, "transport", "zmq") == "tcp":
        return TcpTransport(name, bind, advertise, peers, max_frame=max_frame)
    from .transport import Transport

    return Transport(name, bind, advertise, peers, max_frame=max_frame)

"""A node monitor written from docs/protocol.md alone: it imports nothing of Aviary (pyzmq, msgpack and the
standard library only), so it shows what a client in another language has to do.

    python node_monitor.py CLUSTER.toml NAME

It joins the testbed of CLUSTER.toml as the node NAME over ZeroMQ (with the cluster's CurveZMQ keys when
the file has them), serves a FIFO queue of probes (late binding: GetTask, AssignTask / NoTask) and of
placed tasks (PlaceTask) on its slots, runs each task as a timer of its duration, and answers the
frontend's control messages. On SIGTERM it prints its counters as one JSON line and exits.
"""

from __future__ import annotations

import json
import secrets
import signal
import sys
import time
import tomllib
from collections import Counter, deque
from pathlib import Path
from typing import Any

import msgpack
import zmq
from zmq.utils import z85

VERSION = 4
SUBMIT_JOB, JOB_DONE, PROBE, GET_TASK, ASSIGN_TASK, NO_TASK, CANCEL_PROBES = 1, 2, 3, 4, 5, 6, 7
TASK_FINISHED, PLACE_TASK, KILL_TASK = 8, 9, 10
HELLO, REGISTER, SHUTDOWN, STATS, GET_STATS, PEER_DOWN, PEER_UP, GET_COUNTERS, COUNTERS = range(20, 29)
GET_HOLDING, HOLDING = 61, 62
NAMES = {
    GET_TASK: "GetTask",
    TASK_FINISHED: "TaskFinished",
    HOLDING: "Holding",
}
CONTROLLERS = {"frontend", "control"}
SCHEDULERS = {"central", "scheduler"}
MAY_SEND = {HELLO: CONTROLLERS, SHUTDOWN: CONTROLLERS, GET_STATS: CONTROLLERS, GET_COUNTERS: CONTROLLERS}
MAY_SEND |= {PEER_DOWN: CONTROLLERS, PEER_UP: CONTROLLERS}
MAY_SEND |= dict.fromkeys((PROBE, ASSIGN_TASK, NO_TASK, CANCEL_PROBES, PLACE_TASK, KILL_TASK), SCHEDULERS)
MAY_SEND |= {GET_HOLDING: SCHEDULERS}


class Wire:
    """One ZeroMQ ROUTER socket: bound at this process's address, connected to each peer it sends to."""

    def __init__(self, path: Path, name: str) -> None:
        cluster = tomllib.loads(path.read_text())
        self.name = name
        procs = {p["name"]: p for p in cluster["process"]}
        self.me = procs[name]
        self.address = {n: f"tcp://{p['host']}:{p['port']}" for n, p in procs.items()}
        self.roles = {n: p["role"] for n, p in procs.items()} | {"control": "control"}
        ctx = zmq.Context.instance()
        keys = cluster["cluster"].get("keys")
        self.public: dict[str, bytes] = {}
        self.zap = None
        sock = ctx.socket(zmq.ROUTER)
        if keys:  # CurveZMQ: a server for what peers send here, a client of each peer it connects to
            self.public = {n: p["public_key"].encode() for n, p in procs.items()}
            self.public["control"] = cluster["cluster"]["control_key"].encode()
            self.owner = {z85.decode(k): n for n, k in self.public.items()}
            self.zap = ctx.socket(zmq.REP)  # the ZAP handler: admits the cluster's keys only
            self.zap.bind("inproc://zeromq.zap.01")
            secret = (path.parent / keys / f"{name}.secret").read_bytes().strip()
            sock.setsockopt(zmq.CURVE_SECRETKEY, secret)
            sock.setsockopt(zmq.CURVE_PUBLICKEY, self.public[name])
            sock.setsockopt(zmq.CURVE_SERVER, 1)
            sock.setsockopt(zmq.ZAP_DOMAIN, b"aviary")
        for option, value in ((zmq.ROUTER_MANDATORY, 1), (zmq.SNDHWM, 0), (zmq.RCVHWM, 0), (zmq.LINGER, 0)):
            sock.setsockopt(option, value)
        sock.bind(f"tcp://{self.me.get('bind', self.me['host'])}:{self.me['port']}")
        self.sock = sock
        self.links: dict[str, bytes] = {}
        self.outgoing: dict[bytes, str] = {}
        self.sent: Counter[str] = Counter()
        self.refused = 0  # connections whose key is not the cluster's
        self.poller = zmq.Poller()
        self.poller.register(sock, zmq.POLLIN)
        if self.zap is not None:
            self.poller.register(self.zap, zmq.POLLIN)

    def send(self, to: str, tag: int, *fields: Any) -> None:
        rid = self.links.get(to)
        if rid is None and (to not in self.address or (self.public and to not in self.public)):
            return  # no address (or no key) for it: nothing to send to
        if rid is None:  # connect on first use: frames queue until the connection is up
            if self.public:
                self.sock.setsockopt(zmq.CURVE_SERVERKEY, self.public[to])
            me = f"{self.name}@{self.address[self.name]}#{secrets.token_hex(8)}"
            self.sock.setsockopt(zmq.ROUTING_ID, me.encode())
            rid = self.links[to] = f"{to}>{secrets.token_hex(8)}".encode()
            self.outgoing[rid] = to
            self.sock.setsockopt(zmq.CONNECT_ROUTING_ID, rid)
            self.sock.connect(self.address[to])
        self.sock.send_multipart([rid, bytes([VERSION]) + msgpack.packb([tag, *fields])])
        if tag in NAMES:
            self.sent[NAMES[tag]] += 1

    def receive(self, timeout: float) -> list[tuple[str, int, list[Any]]]:
        """The messages that arrive within ``timeout`` seconds: (sender, tag, fields)."""
        out = []
        for sock, _ in self.poller.poll(max(0, int(timeout * 1000))):
            if sock is self.zap:
                self._authenticate()
                continue
            while True:
                try:
                    rid, frame = self.sock.recv_multipart(zmq.NOBLOCK, copy=False)
                except zmq.Again:
                    break
                sender = self._sender(rid.bytes, frame)
                data = frame.bytes
                if data[:1] != bytes([VERSION]):
                    continue
                try:
                    msg = msgpack.unpackb(data[1:])
                except ValueError:
                    continue
                if isinstance(msg, list) and msg and isinstance(msg[0], int):
                    out.append((sender, msg[0], msg[1:]))
        return out

    def _sender(self, rid: bytes, frame: zmq.Frame) -> str:
        """Who sent ``frame``: with keys, the name the ZAP handler gave its key; else the name its routing
        id ``name@address#nonce`` claims (a frame on a connection this process made: that peer). The
        address of ``control``, which the description does not list, is learned from its routing id."""
        if rid in self.outgoing:
            return self.outgoing[rid]
        claimed, _, rest = rid.decode(errors="replace").partition("@")
        name = claimed
        if self.public:
            try:
                name = str(frame.get("User-Id"))
            except zmq.ZMQError:
                return ""  # not authenticated: no sender
        address = rest.rpartition("#")[0]
        if (
            name == claimed == "control"
            and address.startswith("tcp://")
            and self.address.get(name) != address
        ):
            self.address[name] = address  # its newest connection wins
            self.links.pop(name, None)
        return name

    def _authenticate(self) -> None:
        version, request, _domain, _address, _identity, mechanism, *credentials = self.zap.recv_multipart()
        owner = self.owner.get(credentials[0]) if mechanism == b"CURVE" and credentials else None
        if owner is None:
            self.refused += 1
            self.zap.send_multipart([version, request, b"400", b"unknown key", b"", b""])
        else:
            self.zap.send_multipart([version, request, b"200", b"OK", owner.encode(), b""])


class Node:
    """Slots and one FIFO queue of probe reservations and placed tasks; a task is a timer."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire
        self.slots = int(wire.me["slots"])
        self.counters: Counter[str] = Counter()
        self.epoch = 0
        self.stopping = False
        self.reset()

    def reset(self) -> None:
        self.free = self.slots
        self.queue: deque[list[Any]] = deque()  # [scheduler, job, count] or [scheduler, job, index, duration]
        self.asked: Counter[tuple[str, int]] = Counter()  # GetTask sent, no answer yet
        self.running: dict[tuple[int, int], tuple[str, float, float]] = {}  # -> scheduler, start, end
        self.finished: dict[str, list[list[Any]]] = {}  # tasks placed here that ended: [job, index, start]
        self.dead: set[str] = set()

    def on_message(self, sender: str, tag: int, fields: list[Any]) -> None:
        if sender not in self.wire.roles or self.wire.roles[sender] not in MAY_SEND.get(tag, ()):
            self.counters["dropped"] += 1
            return
        now = time.monotonic()
        if tag == HELLO:
            epoch = fields[0] if fields else 0
            if epoch and epoch != self.epoch:
                if self.epoch:  # a new replay: the earlier one's work is forgotten
                    self.reset()
                self.epoch = epoch
            self.wire.send(sender, REGISTER, "node", self.slots, False)
        elif tag in (GET_STATS, SHUTDOWN):
            self.wire.send(sender, STATS, dict(self.counters), dict(self.wire.sent), [], [])
            self.stopping = tag == SHUTDOWN
        elif tag == GET_COUNTERS:
            self.wire.send(sender, COUNTERS, dict(self.counters), dict(self.wire.sent), {})
        elif tag == PROBE:
            job, count = fields[0], fields[3] if len(fields) > 3 else 1
            self.queue.append([sender, job, max(1, count)])
        elif tag == PLACE_TASK:
            self.queue.append([sender, fields[0], fields[1], fields[2]])
        elif tag in (ASSIGN_TASK, NO_TASK):
            key = (sender, fields[0])
            if self.asked[key] <= 0:
                self.counters["unsolicited"] += 1
                return
            self.asked[key] -= 1
            if tag == ASSIGN_TASK:
                self.launch(sender, fields[0], fields[1], fields[2], now)
            else:
                self.free += 1
        elif tag == CANCEL_PROBES:
            self.queue = deque(e for e in self.queue if not (len(e) == 3 and e[:2] == [sender, fields[0]]))
        elif tag == KILL_TASK:
            task = (fields[0], fields[1])
            if self.running.get(task, ("",))[0] == sender:
                del self.running[task]
                self.free += 1
                self.wire.send(sender, TASK_FINISHED, task[0], task[1], False)
        elif tag == PEER_DOWN:
            self.scheduler_down(fields[0])
        elif tag == PEER_UP:
            self.dead.discard(fields[0])
        elif tag == GET_HOLDING:
            queued = [[e[1], e[2]] for e in self.queue if len(e) == 4 and e[0] == sender]
            running = [[j, i, now - s] for (j, i), (who, s, _) in self.running.items() if who == sender]
            done = [[j, i, now - s] for j, i, s in self.finished.get(sender, [])]
            self.wire.send(sender, HOLDING, queued, running, done)
        self.serve(now)

    def scheduler_down(self, name: str) -> None:
        self.dead.add(name)
        self.queue = deque(e for e in self.queue if e[0] != name)
        for key in [k for k in self.asked if k[0] == name]:
            self.free += self.asked.pop(key)
        for task in [t for t, (who, _, _) in self.running.items() if who == name]:
            del self.running[task]  # killed: its job runs again elsewhere
            self.free += 1

    def launch(self, scheduler: str, job: int, index: int, duration: float, now: float) -> None:
        self.running[(job, index)] = (scheduler, now, now + duration)
        self.counters["tasks_launched"] += 1

    def serve(self, now: float) -> None:
        """Fill the free slots from the head of the queue: a placed task starts, a probe asks for one."""
        while self.free > 0 and self.queue:
            head = self.queue[0]
            self.free -= 1
            if len(head) == 4:
                self.queue.popleft()
                self.launch(head[0], head[1], head[2], head[3], now)
                continue
            head[2] -= 1
            if head[2] == 0:
                self.queue.popleft()
            self.asked[(head[0], head[1])] += 1
            self.wire.send(head[0], GET_TASK, head[1])

    def tick(self, now: float) -> float:
        """End the tasks whose time is up; the seconds until the next one ends (1 s at most)."""
        for task, (scheduler, start, end) in sorted(self.running.items(), key=lambda kv: kv[1][2]):
            if end > now:
                break
            del self.running[task]
            self.free += 1
            self.counters["tasks_finished"] += 1
            self.finished.setdefault(scheduler, []).append([task[0], task[1], start])
            if scheduler not in self.dead:
                self.wire.send(scheduler, TASK_FINISHED, task[0], task[1], True)
        self.serve(now)
        return min([1.0, *(end - now for _, _, end in self.running.values())])


def main() -> int:
    path, name = Path(sys.argv[1]), sys.argv[2]
    node = Node(Wire(path, name))
    signal.signal(signal.SIGTERM, lambda *_: setattr(node, "stopping", True))
    wait = 0.0
    while not node.stopping:
        for sender, tag, fields in node.wire.receive(wait):
            node.on_message(sender, tag, fields)
        wait = node.tick(time.monotonic())
    print(json.dumps({"name": name, "refused": node.wire.refused, **node.counters}), flush=True)
    node.wire.sock.close(linger=1000)
    return 0


if __name__ == "__main__":
    sys.exit(main())

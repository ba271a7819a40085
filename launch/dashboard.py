"""A live dashboard of a real replay in the browser (issue 29): ``aviary replay --dashboard [PORT]``.

Built on Bokeh's server, as Dask's dashboard is: Bokeh is already the project's figure library
(``aviary report``), its server runs on the replay's own event loop (Tornado on asyncio), and it pushes
only what changed to the page over a websocket, with its JavaScript served by the server itself (no
internet needed). The page updates every second:

- jobs submitted, in the system and finished over the replay clock, with an ETA from the finishing rate;
- the job completion times so far (a CDF; short and long jobs apart for flat jobs);
- busy task slots as a share of all slots over time (the utilization of slots);
- every node as a cell of a heatmap (busy tasks / slots; dead nodes red), readable at 1,000 nodes;
- messages per second by kind, and the counters of the policy (preemptions, tasks re-run, solver cycles,
  ...), summed over the processes.

Its data is what the frontend already holds: its job records, and the ``Counters`` every process
reports to it (asked every second while a page is open, every 5 s otherwise: no message per task). A
page is computed only while a browser shows it: with none connected the dashboard costs nothing but its
listening socket.

Secure by default, as Jupyter is: it listens on loopback, and the URL carries a session id signed with
a key made for this dashboard (Bokeh's signed sessions): the server refuses a page without it.
"""

from __future__ import annotations

import math
import socket
from collections import Counter
from collections.abc import Callable
from typing import Any

from ..common.frontend import COUNTERS_EVERY, FrontendCore

PAGE_SECONDS = 1.0
"""How often an open page is updated."""
DEFAULT_PORT = 8789
"""``--dashboard`` without a port (Dask's is 8787)."""
W, H = 460, 260
"""Each figure's size in pixels: two side by side fit a laptop's screen."""
BUSY = ("tasks_launched", "tasks_finished")
"""A node's busy tasks: launched minus finished, by its counters."""


def free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


class Dashboard:
    """The Bokeh server of one replay's dashboard, on the running event loop; :attr:`url` to open."""

    def __init__(
        self,
        core: FrontendCore,
        clock: Callable[[], float],
        slots: dict[str, int],
        *,
        port: int = DEFAULT_PORT,
        address: str = "127.0.0.1",
    ) -> None:
        from bokeh.application import Application
        from bokeh.application.handlers.function import FunctionHandler
        from bokeh.server.server import Server
        from bokeh.util.token import generate_secret_key, generate_session_id
        from tornado.ioloop import IOLoop

        self.core, self.clock, self.slots = core, clock, slots
        self.pages = 0
        secret = generate_secret_key()
        self.port = port or free_port(address)
        self.server = Server(
            {"/": Application(FunctionHandler(self._page))},
            io_loop=IOLoop.current(),
            address=address,
            port=self.port,
            allow_websocket_origin=[f"{address}:{self.port}", f"localhost:{self.port}"],
            sign_sessions=True,
            secret_key=secret,
            generate_session_ids=False,
        )
        self.server.start()
        session = generate_session_id(secret_key=secret.encode(), signed=True)
        self.url = f"http://{address}:{self.port}/?bokeh-session-id={session}"

    def stop(self) -> None:
        self.server.stop()
        self.server.io_loop.add_callback(self.server.unlisten)

    # --- one open page -----------------------------------------------------------------------------
    def _page(self, doc: Any) -> None:
        page = Page(self, doc)
        self.pages += 1
        self.core.counters_every = 2  # a second at the default liveness period
        doc.add_periodic_callback(page.update, round(PAGE_SECONDS * 1000))

        def closed(_: Any) -> None:
            self.pages -= 1
            if self.pages == 0:
                self.core.counters_every = COUNTERS_EVERY

        doc.on_session_destroyed(closed)


def node_busy(core: FrontendCore, nodes: list[str]) -> list[int]:
    """Each node's busy tasks by its last reported counters."""
    out = []
    for name in nodes:
        report = core.reported.get(name)
        c = report.counters if report is not None else {}
        out.append(max(0, int(c.get(BUSY[0], 0)) - int(c.get(BUSY[1], 0))))
    return out


def totals(core: FrontendCore) -> tuple[Counter[str], Counter[str]]:
    """Sent messages by kind and counters, summed over the processes' last reports."""
    messages: Counter[str] = Counter()
    counters: Counter[str] = Counter()
    for report in core.reported.values():
        messages.update(report.messages)
        counters.update({k: v for k, v in report.counters.items() if isinstance(v, int | float)})
    return messages, counters


def heat(share: float, palette: tuple[str, ...]) -> str:
    """A colour of ``palette`` (Bokeh's Blues256: dark first) from white (idle) to dark (every slot busy)."""
    return palette[255 - min(255, max(0, round(share * 255)))]


class Page:
    """The figures of one browser page and their update."""

    def __init__(self, board: Dashboard, doc: Any) -> None:
        from bokeh.layouts import column, row
        from bokeh.models import ColumnDataSource, FactorRange, Range1d
        from bokeh.models.widgets import DataTable, Div, TableColumn
        from bokeh.palettes import Blues256
        from bokeh.plotting import figure

        self.board = board
        self.palette: tuple[str, ...] = tuple(Blues256)  # imported once, not per node and second
        core = board.core
        self.nodes = sorted(board.slots)
        self.last: tuple[float, Counter[str]] | None = None
        self.status = Div(text="", name="status")
        self.jobs = ColumnDataSource({"t": [], "submitted": [], "in_system": [], "finished": []})
        self.busy = ColumnDataSource({"t": [], "share": []})
        self.cdf = {c: ColumnDataSource({"jct": [], "y": []}) for c in ("short", "long", "all")}
        self.rate = ColumnDataSource({"kind": [], "per_s": []})
        self.table = ColumnDataSource({"counter": [], "value": []})
        cols = max(1, math.ceil(math.sqrt(len(self.nodes))))
        self.grid = ColumnDataSource(
            {
                "x": [i % cols for i in range(len(self.nodes))],
                "y": [-(i // cols) for i in range(len(self.nodes))],
                "node": self.nodes,
                "busy": [0] * len(self.nodes),
                "color": [heat(0.0, self.palette)] * len(self.nodes),
            }
        )
        jobs = figure(title="jobs", x_axis_label="replay time (s)", width=W, height=H)
        lines = (("submitted", "dashed", "submitted"), ("in_system", "dotted", "in the system"),
                 ("finished", "solid", "finished"))  # fmt: skip
        for key, dash, label in lines:
            jobs.line("t", key, source=self.jobs, line_dash=dash, legend_label=label)
        jobs.legend.location = "top_left"
        util = figure(
            title="busy slots",
            x_axis_label="replay time (s)",
            y_range=Range1d(start=0, end=105),
            width=W,
            height=H,
        )
        util.line("t", "share", source=self.busy)
        util.yaxis.axis_label = "% of all slots"
        flat = not any(j.stages for j in core.jobs)
        cdf = figure(
            title="job completion time so far, CDF", x_axis_label="JCT (replay s)", width=W, height=H
        )
        for cls, color in (("short", "#1f77b4"), ("long", "#d62728")) if flat else (("all", "#1f77b4"),):
            cdf.step("jct", "y", source=self.cdf[cls], color=color, legend_label=cls, mode="after")
        cdf.legend.location = "bottom_right"
        nodes = figure(
            title=f"nodes: busy tasks / slots (red: dead), {len(self.nodes)} nodes",
            tools="hover",
            tooltips=[("node", "@node"), ("busy", "@busy")],
            x_axis_type=None,
            y_axis_type=None,
            match_aspect=True,
            width=W,
            height=H,
        )
        nodes.rect("x", "y", 0.92, 0.92, source=self.grid, fill_color="color", line_color=None)
        nodes.grid.visible = False
        self.kinds = FactorRange()
        rate = figure(
            title="messages per second", y_range=self.kinds, x_axis_label="messages/s", width=W, height=H
        )
        rate.hbar(y="kind", right="per_s", height=0.7, source=self.rate)
        table = DataTable(
            source=self.table,
            columns=[
                TableColumn(field="counter", title="counter"),
                TableColumn(field="value", title="value"),
            ],
            width=W,
            height=H,
            index_position=None,
        )
        doc.title = f"Aviary: {len(core.jobs)} jobs, {len(self.nodes)} nodes"
        doc.add_root(column(self.status, row(jobs, util), row(cdf, nodes), row(rate, table)))
        self.update()

    def update(self) -> None:
        board, core = self.board, self.board.core
        now = board.clock()
        t = 0.0 if core.t0 is None else now - core.t0
        submitted, finished = core.submitted, core.finished
        total = len(core.jobs)
        eta = ""
        if 0 < finished < total and t > 0:
            eta = f", ETA {((total - finished) * t / finished):,.0f} s"
        dead = sorted(n for n in core.dead if n in board.slots)
        self.status.text = (
            f"<b>finished {finished}/{total}</b>, submitted {submitted}, replay clock {t:,.1f} s{eta}"
            + (f"; dead: {', '.join(dead[:10])}{' ...' if len(dead) > 10 else ''}" if dead else "")
        )
        self.jobs.stream(
            {"t": [t], "submitted": [submitted], "in_system": [submitted - finished], "finished": [finished]},
            rollover=10_000,
        )
        busy = node_busy(core, self.nodes)
        slots = [board.slots[n] for n in self.nodes]
        share = 100.0 * sum(busy) / max(1, sum(slots))
        self.busy.stream({"t": [t], "share": [share]}, rollover=10_000)
        colors = [
            "#d62728" if n in core.dead else heat(b / max(1, s), self.palette)
            for n, b, s in zip(self.nodes, busy, slots, strict=True)
        ]
        self.grid.patch({"busy": [(slice(len(busy)), busy)], "color": [(slice(len(colors)), colors)]})
        jct: dict[str, list[float]] = {"short": [], "long": [], "all": []}
        for job in core.jobs:
            times = core.times[job.job_id]
            if times.finish is not None and times.submit is not None:
                value = times.finish - times.submit
                jct["all"].append(value)
                jct["long" if job.long else "short"].append(value)
        for cls, source in self.cdf.items():
            xs = sorted(jct[cls])  # once per page update (insort per job was quadratic)
            source.data = {"jct": xs, "y": [(i + 1) / len(xs) for i in range(len(xs))]}
        messages, counters = totals(core)
        if self.last is not None and now > self.last[0]:
            dt = now - self.last[0]
            per_s = {k: (v - self.last[1].get(k, 0)) / dt for k, v in messages.items()}
            kinds = sorted((k for k in per_s if per_s[k] > 0), key=lambda k: per_s[k])[-12:]
            self.kinds.factors = kinds
            self.rate.data = {"kind": kinds, "per_s": [per_s[k] for k in kinds]}
        self.last = (now, messages)
        shown = sorted((k, v) for k, v in counters.items() if v and not k.startswith(("dropped.", "error.")))
        self.table.data = {"counter": [k for k, _ in shown], "value": [f"{v:,.6g}" for _, v in shown]}

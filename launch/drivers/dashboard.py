"""A live dashboard of a running testbed in the browser (issue 29): ``aviary replay --dashboard [PORT]``
and ``aviary up --dashboard [PORT]``.

Built on Bokeh's server, as Dask's dashboard is: Bokeh is already the project's figure library
(``aviary report``), its server runs on the testbed's own event loop (Tornado on asyncio), and it pushes
only what changed to the page over a websocket, with its JavaScript served by the server itself (no
internet needed). The page updates every second:

- a replay's jobs submitted, in the system and finished over the replay clock, with an ETA from the
  finishing rate, and its job completion times so far (a CDF; short and long jobs apart for flat jobs);
  under ``aviary up``, which submits nothing itself, the tasks the nodes launched, hold and finished
  (whichever frontend submitted them);
- busy task slots as a share of all slots over time (the utilization of slots);
- every node as a cell of a heatmap (busy tasks / slots; dead nodes red, rejoined ones outlined in
  orange), readable at 1,000 nodes;
- messages per second by kind, and the counters of the policy summed over the processes;
- with a central scheduler, its own signals: the jobs, stages and tasks it holds pending and the tasks
  running by its books, preemptions (its kills and the nodes' LAS preemptions); TetriSched's HiGHS time
  of its last solved cycle and the share of SLO jobs that met their deadline so far (a job counts once it
  finished or its deadline passed); Carbyne's share of placements that went through its leftover pool
  and of plans that fell back to forward packing.

Its data is what the frontend already holds: its job records, and the ``Counters`` every process
reports to it (asked every second while a page is open, every 5 s otherwise: no message per task), which
carry each core's :meth:`~aviary.common.core.Core.gauges`. A page is computed only while a browser shows
it: with none connected the dashboard costs nothing but its listening socket.

Secure by default, as Jupyter is: it listens on loopback, and the URL carries a session id signed with
a key made for this dashboard (Bokeh's signed sessions): the server refuses a page without it.
``--dashboard-address`` binds another address, with a warning: the page is plain HTTP, so its key
travels in clear.
"""

from __future__ import annotations

import html
import math
import socket
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from ...common.addresses import is_loopback
from ...common.cluster import Cluster, free_ports
from ...common.frontend import COUNTERS_EVERY, FrontendCore
from ...common.resources import Resources, vector_sum
from ...common.results import DEADLINE_SLACK, SLO_TYPES
from ..flags.spec import DASHBOARD_PORT
from ..policies.registry import cluster_policy

if TYPE_CHECKING:
    from .real import FrontendSession

PAGE_SECONDS = 1.0
"""How often an open page is updated."""
W, H = 460, 260
"""Each figure's size in pixels: two side by side fit a laptop's screen."""
BUSY = ("tasks_launched", "tasks_finished", "tasks_failed")
"""A node's busy tasks: launched minus ended (finished or failed), by its counters."""
PREEMPTIONS = ("tasks_preempted", "preemptions")
"""Counters of preemptions: a central scheduler's kills (Rayon/CS), a Kairos node's LAS preemptions."""
PENDING = ("jobs_pending", "stages_pending", "tasks_pending", "tasks_running")
"""A central scheduler's gauges drawn over time (those it reports)."""
DEAD, REJOINED = "#d62728", "#ff7f0e"


def node_slots(cluster: Cluster) -> dict[str, int]:
    """Each node's task slots (its cores where it declares no slots)."""
    return {n.name: n.slots or round(n.resources.cores) for n in cluster.nodes}


def exposed(address: str, port: int) -> str | None:
    """The warning for a dashboard bound beyond loopback, as for an unkeyed testbed; None on loopback."""
    if is_loopback(address):
        return None
    return (
        f"warning: the dashboard listens on {address}:{port}: anyone who can reach it and see its URL can "
        "watch the testbed (plain HTTP: the URL's key travels in clear; 'ssh -L' to a loopback dashboard "
        "keeps it private)"
    )


class Dashboard:
    """The Bokeh server of one testbed's dashboard, on the running event loop; :attr:`url` to open."""

    def __init__(
        self,
        core: FrontendCore,
        clock: Callable[[], float],
        slots: dict[str, int],
        *,
        policy: str = "",
        port: int = DASHBOARD_PORT,
        address: str = "127.0.0.1",
    ) -> None:
        from bokeh.application import Application
        from bokeh.application.handlers.function import FunctionHandler
        from bokeh.server.server import Server
        from bokeh.util.token import generate_secret_key, generate_session_id
        from tornado.ioloop import IOLoop

        self.core, self.clock, self.slots, self.policy = core, clock, slots, policy
        self.capacity: Resources | None = None
        """The nodes' summed capacity, for multi-resource policies: the page draws each resource's use."""
        self.began = clock()
        self.poll: Callable[[], None] | None = None
        """Without a replay of its own (``aviary up``): what asks the processes for their counters."""
        self.exited: Callable[[], set[str]] = set
        """Processes known to have exited (``aviary up``'s launcher sees them), beside ``core.dead``."""
        self.pages = 0
        self._headless: list[Callable[[], None]] = []
        secret = generate_secret_key()
        self.port = port or free_ports(1, address)[0]
        local = is_loopback(address)
        self.server = Server(
            {"/": Application(FunctionHandler(self._page))},
            io_loop=IOLoop.current(),
            address=address,
            port=self.port,
            # Beyond loopback the page is reached by names this process cannot know: the signed session
            # id is the check.
            allow_websocket_origin=[f"{address}:{self.port}", f"localhost:{self.port}"]
            if local
            else [f"*:{self.port}"],
            sign_sessions=True,
            secret_key=secret,
            generate_session_ids=False,
        )
        self.server.start()
        session = generate_session_id(secret_key=secret.encode(), signed=True)
        host = address if address not in ("0.0.0.0", "::") else socket.gethostname()
        self.url = f"http://{host}:{self.port}/?bokeh-session-id={session}"

    def stop(self) -> None:
        for stop in self._headless:
            stop()
        self.server.stop()
        self.server.io_loop.add_callback(self.server.unlisten)

    def headless(self) -> Page:
        """Compute a page every second as an open one is, with no browser (its document is never sent):
        what ``aviary bench --dashboard`` measures the dashboard's own cost with."""
        from bokeh.document import Document
        from tornado.ioloop import PeriodicCallback

        page = self._open(Document())
        timer = PeriodicCallback(page.update, round(PAGE_SECONDS * 1000))
        timer.start()
        self._headless.append(timer.stop)
        return page

    # --- one open page -----------------------------------------------------------------------------
    def _open(self, doc: Any) -> Page:
        page = Page(self, doc)
        self.pages += 1
        self.core.counters_every = 2  # a second at the default liveness period
        return page

    def _page(self, doc: Any) -> None:
        doc.add_periodic_callback(self._open(doc).update, round(PAGE_SECONDS * 1000))

        def closed(_: Any) -> None:
            self.pages -= 1
            if self.pages == 0:
                self.core.counters_every = COUNTERS_EVERY

        doc.on_session_destroyed(closed)


def serve(
    session: FrontendSession, cluster: Cluster, port: int, address: str, say: Callable[[str], None]
) -> Dashboard:
    """Start the dashboard of ``cluster``'s testbed on a frontend session's core and ``say`` its URL, and
    the warning when it listens beyond loopback. A session that replays nothing (``aviary up``'s) is
    polled for counters while a page is open."""
    core, runtime = session.core, session.runtime
    board = Dashboard(
        core, runtime.now, node_slots(cluster), policy=cluster.policy, port=port, address=address
    )
    if cluster_policy(cluster).dag:
        board.capacity = vector_sum(n.resources for n in cluster.nodes)
    if not core.jobs:
        board.poll = partial(runtime.inject, core.ask_counters)
        board.exited = lambda: session.lost
    say(f"dashboard: {board.url}")
    if (warning := exposed(address, board.port)) is not None:
        say(warning)
    return board


def node_busy(core: FrontendCore, nodes: list[str]) -> list[int]:
    """Each node's busy tasks by its last reported counters."""
    out = []
    for name in nodes:
        report = core.reported.get(name)
        c = report.counters if report is not None else {}
        launched, finished, failed = (int(c.get(k, 0)) for k in BUSY)
        out.append(max(0, launched - finished - failed))
    return out


def totals(core: FrontendCore) -> tuple[Counter[str], Counter[str], dict[str, float]]:
    """Sent messages by kind, counters and gauges (a central scheduler's pending work, the nodes' demand
    per resource), summed over the processes' last reports (a dead process's gauges left out)."""
    messages: Counter[str] = Counter()
    counters: Counter[str] = Counter()
    gauges: Counter[str] = Counter()
    for name, report in core.reported.items():
        messages.update(report.messages)
        counters.update({k: v for k, v in report.counters.items() if isinstance(v, int | float)})
        if name not in core.dead:
            gauges.update(report.gauges)
    return messages, counters, dict(gauges)


def slo_so_far(core: FrontendCore, clock: float) -> tuple[int, int]:
    """SLO jobs that met their deadline, of those decided by replay clock ``clock`` (finished, or past
    their deadline): :func:`aviary.common.results.slo_metrics`' rule, so far."""
    met = decided = 0
    for job in core.jobs:
        if job.slo not in SLO_TYPES or job.deadline is None:
            continue
        times = core.times[job.job_id]
        if times.submit is None:
            continue
        if times.finish is not None:
            decided += 1
            met += times.finish - times.submit <= job.deadline + DEADLINE_SLACK
        elif clock - times.submit > job.deadline + DEADLINE_SLACK:
            decided += 1
    return met, decided


def heat(share: float, palette: tuple[str, ...]) -> str:
    """A colour of ``palette`` (Bokeh's Blues256: dark first) from white (idle) to dark (every slot busy)."""
    return palette[255 - min(255, max(0, round(share * 255)))]


def share(part: float, whole: float) -> float:
    """``part`` as a percentage of ``whole`` (NaN without a whole: a gap in the line)."""
    return 100.0 * part / whole if whole else math.nan


class Page:
    """The figures of one browser page and their update."""

    def __init__(self, board: Dashboard, doc: Any) -> None:
        from bokeh.layouts import column, row
        from bokeh.models import ColumnDataSource, FactorRange, Range1d
        from bokeh.models.widgets import Div
        from bokeh.palettes import Blues256
        from bokeh.plotting import figure

        self.board = board
        self.palette: tuple[str, ...] = tuple(Blues256)  # imported once, not per node and second
        core = board.core
        self.nodes = sorted(board.slots)
        self.replay = bool(core.jobs)  # else ``aviary up``'s control session: no jobs of its own
        policy = board.policy
        self.central = any(role == "central" for role in core.roles.values())
        self.tetrisched = policy.startswith("tetrisched")
        self.slo = any(j.slo in SLO_TYPES and j.deadline is not None for j in core.jobs)
        self.carbyne = policy == "carbyne"
        self.last: tuple[float, Counter[str]] | None = None
        self.status = Div(text="", name="status")
        self.jobs = ColumnDataSource({"t": [], "submitted": [], "in_system": [], "finished": []})
        self.busy = ColumnDataSource({"t": [], "share": [], **{r: [] for r in Resources._fields}})
        self.cdf = {c: ColumnDataSource({"jct": [], "y": []}) for c in ("short", "long", "all")}
        self.rate = ColumnDataSource({"kind": [], "per_s": []})
        self.signals = ColumnDataSource(
            {"t": [], **{k: [] for k in (*PENDING, "preempted", "solver_ms", "slo", "leftover", "fallback")}}
        )
        cols = max(1, math.ceil(math.sqrt(len(self.nodes))))
        self.grid = ColumnDataSource(
            {
                "x": [i % cols for i in range(len(self.nodes))],
                "y": [-(i // cols) for i in range(len(self.nodes))],
                "node": self.nodes,
                "busy": [0] * len(self.nodes),
                "color": [heat(0.0, self.palette)] * len(self.nodes),
                "line": [None] * len(self.nodes),
            }
        )
        clock = "replay time (s)" if self.replay else "time since the dashboard started (s)"

        def over_time(title: str, **kw: Any) -> Any:
            return figure(title=title, x_axis_label=clock, width=W, height=H, **kw)

        figures = []
        jobs = over_time("jobs" if self.replay else "tasks (all frontends)")
        names = (
            ("submitted", "in the system", "finished")
            if self.replay
            else ("launched", "on nodes", "finished")
        )
        for key, dash, label in zip(
            ("submitted", "in_system", "finished"), ("dashed", "dotted", "solid"), names, strict=True
        ):
            jobs.line("t", key, source=self.jobs, line_dash=dash, legend_label=label)
        jobs.legend.location = "top_left"
        if board.capacity is None:
            util = over_time("busy slots", y_range=Range1d(start=0, end=105))
            util.line("t", "share", source=self.busy)
            util.yaxis.axis_label = "% of all slots"
        else:  # beyond 100 %: cores, disk or network over-allocated (contention)
            util = over_time("resources: demand of running tasks / capacity")
            for r, color in zip(Resources._fields, ("#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd"), strict=True):
                util.line("t", r, source=self.busy, color=color, legend_label=r)
            util.yaxis.axis_label = "%"
            util.legend.location = "top_left"
        figures += [jobs, util]
        if self.replay:
            flat = not any(j.stages for j in core.jobs)
            cdf = figure(
                title="job completion time so far, CDF", x_axis_label="JCT (replay s)", width=W, height=H
            )
            for cls, color in (("short", "#1f77b4"), ("long", "#d62728")) if flat else (("all", "#1f77b4"),):
                cdf.step("jct", "y", source=self.cdf[cls], color=color, legend_label=cls, mode="after")
            cdf.legend.location = "bottom_right"
            figures.append(cdf)
        nodes = figure(
            title=f"{len(self.nodes)} nodes: busy / slots (red: dead, orange: rejoined)",
            tools="hover",
            tooltips=[("node", "@node"), ("busy", "@busy")],
            x_axis_type=None,
            y_axis_type=None,
            match_aspect=True,
            width=W,
            height=H,
        )
        nodes.rect(
            "x", "y", 0.92, 0.92, source=self.grid, fill_color="color", line_color="line", line_width=2
        )
        nodes.grid.visible = False
        figures.append(nodes)
        self.kinds = FactorRange()
        rate = figure(
            title="messages per second", y_range=self.kinds, x_axis_label="messages/s", width=W, height=H
        )
        rate.hbar(y="kind", right="per_s", height=0.7, source=self.rate)
        figures.append(rate)
        if self.central:
            pending = over_time("central scheduler: what it holds")
            styles = zip(PENDING, ("#1f77b4", "#2ca02c", "#9467bd", "#7f7f7f"), strict=True)
            for key, color in styles:
                pending.line("t", key, source=self.signals, color=color, legend_label=key.replace("_", " "))
            pending.line("t", "preempted", source=self.signals, color=DEAD, line_dash="dashed",
                         legend_label="preemptions so far")  # fmt: skip
            pending.legend.location = "top_left"
            figures.append(pending)
        if self.tetrisched:
            solver = over_time("TetriSched: HiGHS time of the last solved cycle")
            solver.line("t", "solver_ms", source=self.signals)
            solver.yaxis.axis_label = "ms"
            figures.append(solver)
        shares = []
        if self.slo:
            shares.append(("slo", "SLO jobs that met their deadline so far"))
        if self.carbyne:
            shares += [
                ("leftover", "placements from the leftover pool"),
                ("fallback", "plans that fell back"),
            ]
        if shares:
            title = "TetriSched: SLO attainment" if self.slo and not self.carbyne else "Carbyne"
            pct = over_time(title, y_range=Range1d(start=0, end=105))
            for (key, label), color in zip(shares, ("#1f77b4", "#2ca02c", "#ff7f0e"), strict=False):
                pct.line("t", key, source=self.signals, color=color, legend_label=label)
            pct.yaxis.axis_label = "%"
            pct.legend.location = "bottom_left"
            figures.append(pct)
        # The counters as an HTML table in a Div: Bokeh's DataTable kept drawing its first rows in
        # Chromium while its source changed (as in bokeh#13859).
        self.table = Div(text="", name="counters", width=W, height=H, styles={"overflow-y": "auto"})
        figures.append(self.table)
        what = f"{len(core.jobs)} jobs" if self.replay else "testbed"
        doc.title = f"Aviary: {what}, {len(self.nodes)} nodes"
        self.figures = figures
        rows = [row(*figures[i : i + 2]) for i in range(0, len(figures), 2)]
        doc.add_root(column(self.status, *rows))
        self.update()

    def update(self) -> None:
        board, core = self.board, self.board.core
        if board.poll is not None:  # the answers arrive for the next update
            board.poll()
        now = board.clock()
        origin = core.t0 if core.t0 is not None and self.replay else board.began
        t = now - origin
        messages, counters, gauges = totals(core)
        busy = node_busy(core, self.nodes)
        gone = core.dead.keys() | board.exited()
        dead = sorted(n for n in gone if n in board.slots)
        if self.replay:
            submitted, finished = core.submitted, core.finished
            total = len(core.jobs)
            eta = ""
            if 0 < finished < total and t > 0:
                eta = f", ETA {((total - finished) * t / finished):,.0f} s"
            head = f"<b>finished {finished}/{total}</b>, submitted {submitted}, replay clock {t:,.1f} s{eta}"
            self.jobs.stream(
                {
                    "t": [t],
                    "submitted": [submitted],
                    "in_system": [submitted - finished],
                    "finished": [finished],
                },
                rollover=10_000,
            )
        else:
            launched, finished, failed = (int(counters[k]) for k in BUSY)  # only nodes count them
            done = finished + failed
            head = (
                f"<b>testbed of {len(self.nodes)} nodes</b>: tasks launched {launched:,}, finished {done:,} "
                f"(every frontend's), up for {t:,.0f} s"
            )
            self.jobs.stream(
                {"t": [t], "submitted": [launched], "in_system": [sum(busy)], "finished": [done]},
                rollover=10_000,
            )
        more = " ..." if len(dead) > 10 else ""
        self.status.text = head + (f"; dead: {', '.join(dead[:10])}{more}" if dead else "")
        slots = [board.slots[n] for n in self.nodes]
        use = {
            r: [share(gauges.get(f"used_{r}", 0.0), c)]
            for r, c in zip(Resources._fields, board.capacity or (0,) * 4, strict=True)
        }
        self.busy.stream(
            {"t": [t], "share": [100.0 * sum(busy) / max(1, sum(slots))], **use}, rollover=10_000
        )
        colors = [
            DEAD if n in gone else heat(b / max(1, s), self.palette)
            for n, b, s in zip(self.nodes, busy, slots, strict=True)
        ]
        lines = [REJOINED if n in core.rejoined else None for n in self.nodes]
        self.grid.patch(
            {
                "busy": [(slice(len(busy)), busy)],
                "color": [(slice(len(colors)), colors)],
                "line": [(slice(len(lines)), lines)],
            }
        )
        if self.replay:
            self._cdf()
        if self.last is not None and now > self.last[0]:
            dt = now - self.last[0]
            per_s = {k: (v - self.last[1].get(k, 0)) / dt for k, v in messages.items()}
            kinds = sorted((k for k in per_s if per_s[k] > 0), key=lambda k: per_s[k])[-12:]
            self.kinds.factors = kinds
            self.rate.data = {"kind": kinds, "per_s": [per_s[k] for k in kinds]}
        self.last = (now, messages)
        if self.central:
            met, decided = slo_so_far(core, t) if self.slo else (0, 0)
            point = {k: [gauges.get(k, math.nan)] for k in (*PENDING, "solver_ms")}
            self.signals.stream(
                {
                    "t": [t],
                    **point,
                    "preempted": [sum(counters[k] for k in PREEMPTIONS)],
                    "slo": [share(met, decided)],
                    "leftover": [share(counters["carbyne_leftover_placements"], counters["tasks_placed"])],
                    "fallback": [share(counters["carbyne_plan_fallbacks"], counters["carbyne_plans"])],
                },
                rollover=10_000,
            )
        shown = sorted((k, v) for k, v in counters.items() if v and not k.startswith(("dropped.", "error.")))
        rows = "".join(f"<tr><td>{html.escape(k)}</td><td align=right>{v:,.6g}</td></tr>" for k, v in shown)
        self.table.text = f"<table><tr><th align=left>counter</th><th>value</th></tr>{rows}</table>"

    def _cdf(self) -> None:
        core = self.board.core
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

"""Self-contained HTML reports (Jinja2 template shipped as package data, inline SVG from matplotlib).

A report has the sections a reader looks for, in order: the cluster at a glance (its headline figures and a
drawing of domains, rails and tiers), the answer (the figures asked for, units stated, each with an ``id``
so tests and scripts can find it), why (the explanation, bottleneck, per-network or per-part time, link
heatmaps), the rows behind the answer, and the inputs with the aifabric version. Nothing is fetched at view
time: no script or style sheet from the network, figures inline, every user string escaped (Jinja2
``autoescape``).

Builders: :func:`plan_report`, :func:`step_report`, :func:`fabric_report`, :func:`collective_report`,
:func:`sweep_report`, :func:`inspect_report`, :func:`nccl_tests_report`, :func:`checkpoint_report`; then
:func:`render_html` and :func:`write_html`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aifabric.cluster.summary import summarize
from aifabric.cluster.topology import Topology, cached_topology
from aifabric.inputs import printable
from aifabric.report.figures import cluster_drawing, figure_svg, step_bars, tier_heatmaps
from aifabric.report.nccl_plot import comparison_figure
from aifabric.report.paths import check_output_path
from aifabric.sweep.pareto import pareto_figure
from aifabric.training.step import PARTS
from aifabric.units import format_bytes, format_time
from aifabric.version import __version__

if TYPE_CHECKING:
    import pandas as pd

    from aifabric.cluster.spec import ClusterSpec
    from aifabric.discovery.compare import NcclTestsComparison
    from aifabric.discovery.node import NodeInspection
    from aifabric.engines.result import CollectiveResult
    from aifabric.engines.scenario import Scenario
    from aifabric.training.planner import PlanResult
    from aifabric.training.step import StepTime

__all__ = [
    "Report",
    "check_html_path",
    "checkpoint_report",
    "collective_report",
    "fabric_report",
    "inspect_report",
    "nccl_tests_report",
    "plan_report",
    "render_html",
    "step_report",
    "sweep_report",
    "write_html",
]

UNITS = (
    "seconds (s, ms, us as labelled); GB/s = 1e9 bytes/s per direction; GB = 1e9 bytes; utilisation 0-100%"
)
_MAX_ROWS = 200


@dataclass(frozen=True)
class Report:
    """What a report shows (see the module docstring). ``headline`` rows are ``(id, label, text)``;
    ``spec`` None: no cluster section (a machine the input could not model); ``glance``, where given,
    replaces the cluster's headline figures (a sweep's: the ranges over the designs it ran)."""

    kind: str
    title: str
    spec: ClusterSpec | None
    topology: Topology | None
    headline: tuple[tuple[str, str, str], ...]
    why: tuple[str, ...] = ()
    figures: tuple[tuple[str, str], ...] = ()
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    inputs: tuple[tuple[str, str], ...] = field(default=())
    glance: tuple[tuple[str, str], ...] | None = None  # None: the headline figures of ``spec``


def _topology(spec: ClusterSpec) -> Topology | None:

    return None if spec.scale_up.kind == "torus" else cached_topology(spec)


def _cluster_headline(spec: ClusterSpec, topo: Topology | None) -> list[tuple[str, str]]:

    s = summarize(spec, topo)
    out = [
        ("GPUs", f"{s.n_gpus} in {s.n_nodes} nodes"),
        ("scale-up domain", f"{s.domain_gpus} GPUs"),
        ("scale-out", s.scale_out_words),
        ("bisection", f"{s.bisection_bytes_per_s / 1e9:,.0f} GB/s per direction"),
        ("network power", f"{s.inventory.total_watts / 1e3:,.1f} kW"),
    ]
    out += [
        (f"{r.level} ({r.network})", f"{r.per_direction_bytes_per_s / 1e9:,.1f} GB/s per GPU")
        for r in s.rungs
    ]
    return out


def _glance(report: Report) -> Sequence[tuple[str, str]]:
    """The rows of "the cluster at a glance": the report's own, else its cluster's headline figures."""
    if report.glance is not None:
        return report.glance
    return _cluster_headline(report.spec, report.topology) if report.spec is not None else []


def render_html(report: Report) -> str:
    """The report as one HTML document (str)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("aifabric.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        finalize=_printable_value,
    )
    return env.get_template("report.html.j2").render(
        kind=report.kind,
        title=report.title,
        version=__version__,
        units=UNITS,
        cluster_headline=_glance(report),
        topology_svg=cluster_drawing(report.spec, report.topology) if report.spec is not None else "",
        headline=report.headline,
        why=report.why,
        figures=report.figures,
        columns=report.columns,
        rows=report.rows[:_MAX_ROWS],
        inputs=report.inputs,
    )


def _printable_value(value: Any) -> Any:
    """Every value the template prints, control characters shown as ``\\xNN``
    (:func:`aifabric.inputs.printable`); markup (the inline SVG) stays markup."""
    import markupsafe  # jinja2's own dependency, imported with it (lazily, as jinja2 is)

    if isinstance(value, markupsafe.Markup):
        return markupsafe.Markup(printable(value))
    return printable(value) if isinstance(value, str) else value


def check_html_path(path: str | Path, option: str = "--html") -> Path:
    """Check, before any work, that a report can be written to ``path`` (``.html``).

    Raises ValueError naming ``option`` for another extension, a directory, or a file in the way.

    >>> check_html_path("out/report.htm")
    Traceback (most recent call last):
    ...
    ValueError: --html: 'out/report.htm' must end in .html
    """
    p = Path(path)
    if p.is_dir():
        raise ValueError(
            f"{option}: {str(path)!r} is a directory; give a file such as {str(p / 'report.html')!r}"
        )
    if p.suffix.lower() != ".html":
        raise ValueError(f"{option}: {str(path)!r} must end in .html")
    return check_output_path(p, option)  # folders above, devices, names too long, writable


def write_html(report: Report, path: str | Path, option: str = "--html") -> Path:
    """Render ``report`` and write it to ``path``, creating folders; ValueError names ``option``."""
    p = check_html_path(path, option)
    text = render_html(report)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    except OSError as err:
        raise ValueError(f"{option}: cannot write {str(p)!r}: {err.strerror}") from err
    return p


def _inputs(**kv: Any) -> tuple[tuple[str, str], ...]:
    return tuple((k, str(v)) for k, v in kv.items() if v is not None)


def _step_headline(st: StepTime, prefix: str = "") -> tuple[tuple[str, str, str], ...]:
    return (
        ("step-time", f"{prefix}step time", f"{st.step_s:.4f} s"),
        ("throughput", "throughput", f"{st.tokens_per_s:,.0f} tokens/s"),
        ("mfu", "MFU (model FLOPs / datasheet peak)", f"{st.mfu:.1%}"),
        ("bubble", "pipeline bubble (share of the step)", f"{st.bubble_share:.1%}"),
        ("memory", "memory per GPU", f"{st.memory.total_bytes / 1e9:.1f} GB"),
    )


def _step_figures(sts: Sequence[StepTime]) -> tuple[str, str]:

    return (
        "Critical path per step, by part (seconds)",
        step_bars(
            [st.layout.describe() for st in sts], PARTS, [[st.breakdown_s[p] for p in PARTS] for st in sts]
        ),
    )


def _network_lines(st: StepTime) -> list[str]:
    return [
        f"{net}: {v['exposed']:.4f} s exposed, {v['hidden']:.4f} s hidden behind compute per step"
        for net, v in st.network_s.items()
    ]


def step_report(st: StepTime, spec: ClusterSpec, **inputs: Any) -> Report:
    """Report of one training step (``aifabric train --html``)."""

    rows = tuple(
        (p, f"{st.breakdown_s[p]:.4f}", f"{st.breakdown_s[p] / st.step_s:.1%}")
        for p in PARTS
        if st.breakdown_s[p] > 0
    )
    return Report(
        kind="train",
        title=f"{st.model} on {st.n_gpus} GPUs of {st.cluster}: {st.layout.describe()}",
        spec=spec,
        topology=_topology(spec),
        headline=_step_headline(st),
        why=(f"{st.compute.summary()}.", *_network_lines(st), *st.notes),
        figures=(_step_figures([st]),),
        columns=("part", "seconds", "share of the step"),
        rows=rows,
        inputs=_inputs(**inputs),
    )


def plan_report(res: PlanResult, why: str, spec: ClusterSpec, **inputs: Any) -> Report:
    """Report of a layout search (``aifabric plan --html``): the winner's figures, then the ranking."""
    best = res.best
    rows = tuple(
        (
            str(i),
            st.layout.describe(),
            f"{st.step_s:.4f}",
            f"{st.tokens_per_s:,.0f}",
            f"{st.mfu:.1%}",
            f"{st.memory.total_bytes / 1e9:.1f}",
        )
        for i, st in enumerate(res.ranked, 1)
    )
    return Report(
        kind="plan",
        title=f"plan: {res.model} on {res.n_gpus} GPUs of {res.cluster}, global batch "
        f"{res.global_batch_size}",
        spec=spec,
        topology=_topology(spec),
        headline=(("winner", "winning layout", best.layout.describe()), *_step_headline(best, "winner's ")),
        why=(
            why,
            f"{res.n_evaluated} layouts tried, {res.n_feasible} feasible.",
            *_network_lines(best),
        ),
        figures=(_step_figures(res.ranked),),
        columns=("#", "layout", "step (s)", "tokens/s", "MFU", "memory per GPU (GB)"),
        rows=rows,
        inputs=_inputs(**inputs),
    )


def fabric_report(sc: Scenario, **inputs: Any) -> Report:
    """Report of a fabric scenario (``aifabric fabric --html``): completion, efficiency, bottleneck link."""

    res = sc.result
    hot = res.top_links[0] if res.top_links else None
    headline = (
        ("completion", "completion time", f"{res.time_s * 1e3:,.3f} ms"),
        ("ideal", "contention-free ideal", f"{res.ideal_time_s * 1e3:,.3f} ms"),
        ("efficiency", "efficiency (ideal / completion)", f"{res.efficiency:.1%}"),
        ("bottleneck-link", "bottleneck link", hot.label if hot else "none"),
        ("bottleneck-utilisation", "its utilisation", f"{hot.utilisation:.0%} ({hot.tier})" if hot else "-"),
    )
    why = [
        f"{j.job}: {j.n_ranks} ranks, {j.time_s * 1e3:.3f} ms, {j.busbw_bytes_per_s / 1e9:.1f} GB/s"
        for j in sc.jobs
    ]
    why += [
        f"tier {k}: mean {a:.0%}, max {b:.0%} of the links that carried traffic"
        for k, (a, b) in sc.tiers.items()
    ]
    rows = tuple(
        (
            lr.label,
            lr.tier,
            f"{lr.utilisation:.0%}",
            f"{lr.bytes_ / 1e9:.2f}",
            str(lr.n_flows),
            ", ".join(lr.flows),
        )
        for lr in res.top_links
    )
    size = f"{format_bytes(sc.message_bytes)} {'per flow' if sc.is_pattern else '(nccl-tests size)'}"
    return Report(
        kind="fabric",
        title=f"{sc.traffic} of {size} on {sc.spec.name} ({sc.engine}/{sc.routing}, {sc.placement}, "
        f"seed {sc.seed})",
        spec=sc.spec,
        topology=sc.topology,
        headline=headline,
        why=tuple(why),
        figures=(("Link utilisation per tier", tier_heatmaps(sc.topology, res.link_utilisation)),),
        columns=("link", "tier", "utilisation", "GB carried", "flows", "which flows"),
        rows=rows,
        inputs=_inputs(**inputs),
    )


def collective_report(results: Sequence[CollectiveResult], spec: ClusterSpec, **inputs: Any) -> Report:
    """Report of one collective or an nccl-tests-like size sweep (``aifabric collective --html``)."""
    r = results[-1]
    headline = (
        ("size", "size (largest)", format_bytes(r.message_bytes)),
        ("time", "time", f"{r.time_s * 1e6:,.2f} us"),
        ("busbw", "busbw (nccl-tests)", f"{r.busbw_bytes_per_s / 1e9:,.2f} GB/s"),
        ("algorithm", "algorithm / protocol", f"{r.algorithm} / {r.protocol}"),
        ("bottleneck", "bottleneck", r.bottleneck),
    )
    shares = ", ".join(f"{k} {v * 1e6:.1f} us" for k, v in r.network_time_s.items())
    rows = tuple(
        (
            f"{int(x.message_bytes)}",
            f"{x.time_s * 1e6:.2f}",
            f"{x.algbw_bytes_per_s / 1e9:.2f}",
            f"{x.busbw_bytes_per_s / 1e9:.2f}",
            f"{x.algorithm}/{x.protocol}",
        )
        for x in results
    )
    return Report(
        kind="collective",
        title=f"{r.op} on {r.n_ranks} ranks of {spec.name} ({r.engine} engine)",
        spec=spec,
        topology=_topology(spec),
        headline=headline,
        why=(r.explanation, f"time per network: {shares}"),
        columns=("size (B)", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "algo/proto"),
        rows=rows,
        inputs=_inputs(**inputs),
    )


def _cell(value: Any, text: str) -> str:
    """``text`` for a stored figure, "-" for one a row does not have (NULL or NaN: a collective row has no
    MFU, a training row no busbw) or that is not positive."""
    return text if value is not None and value == value and float(value) > 0 else "-"


def _sweep_row(r: Any, vary: Sequence[str]) -> tuple[str, ...]:
    """One stored point as table cells: a collective's size and busbw, a training step's MFU and tokens/s
    (its ``time_s`` is the step time), each "-" where the row has none."""
    get = r.get
    return (
        str(r["op"]),
        _cell(get("message_bytes"), format_bytes(float(get("message_bytes") or 0))),
        format_time(float(r["time_s"])),
        _cell(get("busbw_bytes_per_s"), f"{float(get('busbw_bytes_per_s') or 0) / 1e9:,.1f}"),
        _cell(get("mfu"), f"{float(get('mfu') or 0):.1%}"),
        _cell(get("tokens_per_s"), f"{float(get('tokens_per_s') or 0):,.0f}"),
        ", ".join(f"{c[5:]}={r[c]:g}" if isinstance(r[c], float) else f"{c[5:]}={r[c]}" for c in vary),
        f"{float(r['network_watts']) / 1e3:,.1f}",
    )


def _spread(frame: pd.DataFrame, column: str, fmt: Callable[[float], str]) -> str:
    """The range of ``column`` over the designs a sweep ran: "lo to hi", one value alone, "-" for none."""
    values = frame[column].dropna() if column in frame.columns else frame.index[:0]
    if values.empty:
        return "-"
    lo, hi = float(values.min()), float(values.max())
    return fmt(lo) if lo == hi else f"{fmt(lo)} to {fmt(hi)}"


def _sweep_glance(ok: pd.DataFrame, drawn: ClusterSpec) -> tuple[tuple[str, str], ...]:
    """The glance of a sweep: each figure's range over the points that ran (not the base cluster's
    default size, which the grid may not hold), and which of its designs the drawing shows."""
    s = summarize(drawn)
    count = "{:,.0f}".format
    return (
        ("GPUs", _spread(ok, "gpus", count) + " (over the designs swept)"),
        (
            "bisection",
            _spread(ok, "bisection_bytes_per_s", lambda v: f"{v / 1e9:,.0f}") + " GB/s per direction",
        ),
        (
            "network power",
            _spread(ok, "network_watts", lambda v: f"{v / 1e3:,.1f}") + " kW (all four networks)",
        ),
        ("switches", _spread(ok, "switches", count)),
        ("transceivers", _spread(ok, "transceivers", count)),
        ("drawn below", f"the grid's first design: {s.n_gpus:,} GPUs in {s.n_nodes:,} nodes"),
    )


def sweep_report(frame: pd.DataFrame, spec: ClusterSpec, *, store: str, **inputs: Any) -> Report:
    """Report of a sweep store (``aifabric sweep --html``): the points, the fastest design per
    collective and size and per trained model, and the Pareto fronts of network watts against time."""

    ok = frame[frame["error"] == ""]
    by_time = ok.sort_values(["op", "message_bytes", "time_s", "network_watts"], kind="stable")
    best = by_time.drop_duplicates(["op", "message_bytes"])  # equally fast: the least watts
    vary = [c for c in frame.columns if c.startswith("vary_")]
    rows = tuple(_sweep_row(r, vary) for _, r in best.iterrows())
    headline = (
        ("points", "points stored", f"{len(frame):,}"),
        ("failed", "points that failed", f"{len(frame) - len(ok):,}"),
        ("variants", "cluster variants", f"{len(frame.drop_duplicates(vary)) if vary else 1:,}"),
    )
    figures = (
        (("Pareto fronts: network power (W) against time (s)", figure_svg(pareto_figure(frame))),)
        if len(ok)
        else ()
    )
    return Report(
        kind="sweep",
        title=f"sweep over {spec.name}: {len(frame):,} points in {store}",
        spec=spec,
        topology=_topology(spec),
        headline=headline,
        why=(
            "The fastest variant for every collective and size, and for every trained model, the one of "
            "least network power among equally fast ones (time: the collective's, or the step time of a "
            "model; busbw in GB/s per direction; MFU and tokens/s of a training step):",
        ),
        glance=_sweep_glance(ok, spec),
        figures=figures,
        columns=("op", "size", "time", "busbw (GB/s)", "MFU", "tokens/s", "variant", "network power (kW)"),
        rows=rows,
        inputs=_inputs(store=store, **inputs),
    )


def inspect_report(nodes: Sequence[NodeInspection], **inputs: Any) -> Report:
    """Report of ``aifabric inspect --html``: the node's GPUs, NICs, NVLink, the GPU-NIC paths (GPUDirect
    RDMA verdict) and the all_reduce busbw it should reach (formula engine; GB/s = 1e9 bytes/s).

    Raises
    ------
    ValueError
        If ``nodes`` is empty.
    """
    if not nodes:
        raise ValueError("inspect: no node to report")
    node = nodes[0]
    lay = node.layout
    pairs = [p for n in nodes for p in n.pairing.values() if p is not None]
    exp = node.expected[0] if node.expected else None
    headline = (
        ("accelerator", "accelerator", f"{node.accelerator} ({node.accelerator_source or 'given'})"),
        ("gpus", "GPUs", str(len(lay.gpus))),
        ("nics", "NICs", f"{len(lay.nics)} at {node.nic_speed_bytes_per_s * 8 / 1e9:g} Gb/s"),
        ("nvlink", "NVLink groups", str(len(node.nvlink_groups))),
        ("gdr", "GPUs with a GPUDirect RDMA path", f"{sum(p.gdr for p in pairs)} of {len(pairs)}"),
        (
            "expected-busbw",
            f"expected all_reduce busbw at {format_bytes(exp.message_bytes)}" if exp else "expected busbw",
            f"{exp.busbw_bytes_per_s / 1e9:,.1f} GB/s ({exp.label})" if exp else "-",
        ),
    )
    why = [
        f"NVLink group {'+'.join(g.gpus)}: {len(g.pairs)} pairs, {n.group_shape(g)}"
        for n in nodes
        for g in n.nvlink_groups
    ]
    why += [
        f"{e.label}: {e.busbw_bytes_per_s / 1e9:,.1f} GB/s ({e.algorithm}/{e.protocol})"
        for n in nodes
        for e in n.expected
    ]
    why += [f"warning ({w.code}): {w.message}" for n in nodes for w in n.warnings]
    why += [f"assumed: {a}" for n in nodes for a in n.assumptions]
    rows = tuple(
        (
            n.layout.source or f"node {k + 1}",
            g,
            str(n.layout.gpu_numa.get(g, "-")),
            ", ".join(x.nic for x in n.nearest.get(g, ())) or "-",
            p.nic if (p := n.pairing.get(g)) else "-",
            p.path if p else "-",
            ("yes" if p.gdr else "no") if p else "-",
        )
        for k, n in enumerate(nodes)
        for g in n.layout.gpus
    )
    return Report(
        kind="inspect",
        title=f"{lay.source or 'node'}: {len(lay.gpus)} GPUs, {len(lay.nics)} NICs",
        spec=node.spec,
        topology=_topology(node.spec) if node.spec is not None else None,
        headline=headline,
        why=tuple(why),
        columns=("node", "GPU", "NUMA", "nearest NIC(s)", "paired NIC", "path", "GPUDirect RDMA"),
        rows=rows,
        inputs=_inputs(**inputs),
    )


def _nccl_headline(result: NcclTestsComparison) -> tuple[tuple[str, str, str], ...]:
    """The headline of an nccl-tests report: the first table's run, its largest row and its verdict."""
    comp = result.tables[0]
    big = comp.large_rows[-1]
    return (
        ("tables", "tables compared", str(len(result.tables))),
        ("run", "run", f"{comp.op}, {comp.n_ranks} ranks on {comp.n_nodes} node(s)"),
        ("measured-busbw", f"measured busbw at {format_bytes(big.size_bytes)}",
         f"{big.measured_busbw_bytes_per_s / 1e9:,.2f} GB/s"),
        ("predicted-busbw", "predicted busbw (formula engine)",
         f"{big.predicted_busbw_bytes_per_s / 1e9:,.2f} GB/s"),
        ("deviation", "median deviation of the large messages", f"{comp.large_deviation:+.1%}"),
        ("verdict", "verdict", comp.verdict),
    )  # fmt: skip


def _nccl_why(result: NcclTestsComparison) -> list[str]:
    """The "why" lines of an nccl-tests report: each table's verdict and findings, what an unexplained
    shortfall needs to be told apart, the assumptions and the tables skipped."""
    why = [
        f"table {c.index}: {c.verdict}; "
        + "; ".join(
            f"{f.cause}: {f.gap_bytes_per_s / 1e9:,.2f} GB/s {f.side} {f.reference} "
            f"over {f.rows} large row(s)"
            for f in c.findings
        )
        for c in result.tables
    ]
    why += [f"table {c.index}: {c.describe(f.cause)}" for c in result.tables for f in c.findings
            if f.cause == "unexplained_shortfall"]  # fmt: skip
    why += [f"assumed: {a}" for c in result.tables for a in c.assumptions]
    why += [f"table {c.index}: line {r.line} out of order: {format_bytes(r.size_bytes)} after "
            f"{format_bytes(b.size_bytes)} (line {b.line}), a second run or a repeated line; compared as "
            "printed"
            for c in result.tables for r, b, _ in c.out_of_order]  # fmt: skip
    why += [f"table {i} (line {line}) skipped: {reason}" for i, line, reason in result.skipped]
    return why


def nccl_tests_report(result: NcclTestsComparison, **inputs: Any) -> Report:
    """Report of ``aifabric nccl-tests compare --html``: measured against predicted busbw per row, the
    verdict of each table and its findings (GB/s = 1e9 bytes/s; deviation = measured / predicted - 1).

    Raises
    ------
    ValueError
        If no table was compared.
    """
    if not result.tables:
        raise ValueError("nccl-tests compare: no table was compared, nothing to report")
    comp = result.tables[0]
    why = _nccl_why(result)
    rows = tuple(
        (
            str(c.index),
            format_bytes(r.size_bytes),
            f"{r.measured_time_s * 1e6:,.2f}",
            f"{r.predicted.time_s * 1e6:,.2f}",
            f"{r.measured_busbw_bytes_per_s / 1e9:,.2f}",
            f"{r.predicted_busbw_bytes_per_s / 1e9:,.2f}",
            f"{r.deviation:+.1%}",
            f"{r.predicted.algorithm}/{r.predicted.protocol}",
            "FLAG" if r.flagged else "",
        )
        for c in result.tables
        for r in c.rows
    )
    return Report(
        kind="nccl-tests",
        title=f"nccl-tests {comp.op} against the model on {comp.spec.name}",
        spec=comp.spec,
        topology=_topology(comp.spec),
        headline=_nccl_headline(result),
        why=tuple(why),
        figures=(
            ("busbw against size, measured and predicted", figure_svg(comparison_figure(result.tables))),
        ),
        columns=(
            "table",
            "size",
            "time meas (us)",
            "time pred (us)",
            "busbw meas (GB/s)",
            "busbw pred (GB/s)",
            "deviation",
            "algo/proto",
            "",
        ),  # fmt: skip
        rows=rows,
        inputs=_inputs(**inputs),
    )


#: The phases of a checkpoint report: (label, key of the checkpoint command's result).
_CHECKPOINT_PHASES = (("write (sync)", "write"), ("restore", "restore"), ("async drain", "async_drain"))


def checkpoint_report(out: dict[str, Any], spec: ClusterSpec, **inputs: Any) -> Report:
    """Report of ``aifabric checkpoint --html`` from the command's result mapping (its ``--json``): the
    checkpoint size, write and restore time with the bottleneck, the async copy, Young/Daly intervals."""
    write = out["write"]
    headline = [
        ("checkpoint-size", "checkpoint size", f"{out['checkpoint_bytes'] / 1e9:,.1f} GB"),
        ("write-time", "write time (sync)", f"{write['seconds']:,.2f} s"),
        ("write-bottleneck", "write bottleneck", str(write["bottleneck"])),
        ("restore-time", "restore time", f"{out['restore']['seconds']:,.2f} s"),
        ("async-copy", "async copy GPU->host (training stops)", f"{out['async_copy_s']:,.3f} s"),
    ]
    if "interval_sync_s" in out:
        headline += [
            ("interval-sync", "Young/Daly interval (sync)", f"{out['interval_sync_s']:,.0f} s"),
            ("goodput-lost-sync", "goodput lost (sync)", f"{out['goodput_lost_sync']:.2%}"),
        ]
    why = [
        f"{out['params'] / 1e9:.4g} B parameters x {out['bytes_per_param']:g} B/param, written by "
        f"{out['writer_gpus']} GPUs on {out['writer_nodes']} nodes."
    ]
    if "async_drain_steps" in out:
        why.append(f"The async drain overlaps {out['async_drain_steps']:.2f} training steps.")
    if "data_loading" in out:
        d = out["data_loading"]
        why.append(
            f"Data loading: {d['need_bytes_per_s'] / 1e9:.3g} GB/s needed of "
            f"{d['have_bytes_per_s'] / 1e9:.4g} GB/s ({d['share']:.2%}; limit: {d['bottleneck']})."
        )
    rows = tuple(
        (
            label,
            f"{out[key]['seconds']:,.3f}",
            f"{out[key]['bytes_per_node'] / 1e9:,.2f}",
            f"{out[key]['rate_bytes_per_s'] / 1e9:,.3g}",
            str(out[key]["bottleneck"]),
        )
        for label, key in _CHECKPOINT_PHASES
    )
    return Report(
        kind="checkpoint",
        title=f"checkpoint of {out['params'] / 1e9:.4g} B parameters on {out['gpus']} GPUs of {spec.name}",
        spec=spec,
        topology=_topology(spec),
        headline=tuple(headline),
        why=tuple(why),
        columns=("phase", "seconds", "GB per node", "rate per node (GB/s)", "bottleneck"),
        rows=rows,
        inputs=_inputs(**inputs),
    )

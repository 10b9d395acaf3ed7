"""Chakra execution traces on the command line: ``--chakra FOLDER`` of ``train`` and ``collective`` (their
shared option and checks), and ``aifabric import-chakra``: a Chakra trace as a workload timed on a cluster.

Exit codes: 0 done; 2 bad input (a file that is not a Chakra trace, a bad cluster), one line on stderr.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from aifabric.cli.common import CommandClusterOpt, console, emit_json, err_console, handle_errors, literal
from aifabric.errors import ConfigError
from aifabric.report.paths import check_output_path

if TYPE_CHECKING:
    from aifabric.cluster.spec import ClusterSpec
    from aifabric.interop.chakra import WorkloadCall

__all__ = ["ChakraOpt", "check_chakra_folder", "import_chakra", "written"]

#: ``--chakra FOLDER``: Chakra execution traces, ``workload.<rank>.et`` per rank (aifabric.interop.chakra).
ChakraOpt = Annotated[
    Path | None,
    typer.Option(
        "--chakra",
        help="Write Chakra execution traces (ASTRA-sim's workload format) into this folder: "
        "workload.<rank>.et per rank",
    ),
]


def check_chakra_folder(folder: Path) -> Path:
    """Check, before any work, that rank files can be written into ``folder``; ValueError names --chakra."""
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--chakra: {str(folder)!r} is a file; give a folder")
    check_output_path(folder / "workload.0.et", "--chakra")
    return folder


def written(paths: list[Path]) -> None:
    """Say where the rank files went (stderr: stdout stays for the command's answer)."""
    if paths:
        err_console.print(
            f"chakra: {len(paths)} rank file(s) written, {paths[0]} .. {paths[-1].name}",
            markup=False,
            highlight=False,
        )


def _span_fields(calls: Sequence[WorkloadCall]) -> str:
    """The trace fields that set how many GPUs its groups span: their sizes, and spacing where one has it."""
    return "comm_group_size" + (", comm_group_stride" if any(c.group_stride for c in calls) else "")


def _refuse_small_cluster(
    trace: Path, ranks: int | None, calls: Sequence[WorkloadCall], spec: ClusterSpec
) -> None:
    """ConfigError when the GPUs the trace's groups span (rank 0 on GPU 0, a group of ``size`` ranks
    ``stride`` apart spans ``(size - 1) stride + 1`` GPUs) are more than ``spec`` has; it names the span as a
    span, and the ranks the trace was written for (its GlobalMetadata ``ranks``) where it says; they are its
    ranks only where the two agree (a DP group of 2 under TP 8 spans 9 GPUs of a 16-rank trace)."""
    need = max(((c.group_size or 1) - 1) * (c.group_stride or 1) + 1 for c in calls) if calls else 0
    if need <= spec.n_gpus:
        return
    fields = _span_fields(calls)
    has = {
        None: f"has groups that span {need} GPUs ({fields})",
        need: f"has {need} ranks ({fields})",
    }.get(ranks, f"was written for {ranks} ranks; its groups span {need} GPUs ({fields})")
    raise ConfigError(
        f"--nodes: the trace {str(trace)!r} {has} "
        f"but {spec.name} has {spec.n_gpus} GPUs; give a cluster of at least {need} GPUs "
        f"(--nodes {-(-need // spec.gpus_per_node)})"
    )


@handle_errors
def import_chakra(
    trace: Annotated[Path, typer.Argument(help="A Chakra .et file (one rank's), e.g. workload.0.et")],
    cluster: CommandClusterOpt = "dgx-h100-superpod",
    nodes: Annotated[int | None, typer.Option(help="Resize the cluster to this many nodes", min=1)] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Read one rank's Chakra execution trace as a workload: its compute time and its communication calls,
    each timed on the cluster with the formula engine over its group (the trace's comm_group_size, else
    every GPU; GPU i runs rank i, the group's ranks comm_group_stride apart as the trace's layout placed
    them, else in order; a group larger than the cluster is refused).
    The total assumes no overlap of compute and communication: an upper
    bound of the rank's time. Seconds; sizes in bytes (nccl-tests convention)."""
    from aifabric.cli.sizing import sized_cluster
    from aifabric.collectives.communicator import Communicator
    from aifabric.engines.api import collective_time
    from aifabric.interop.chakra import read_et, workload

    spec = sized_cluster(cluster, nodes=nodes)
    tr = read_et(trace)
    w = workload(tr)
    _refuse_small_cluster(trace, tr.ranks, w.calls, spec)
    calls: list[dict[str, Any]] = []
    for c in w.calls:
        ranks = c.group_size or spec.n_gpus
        comm = Communicator.contiguous(spec, ranks, stride=c.group_stride or 1)
        r = collective_time(c.op, c.message_bytes, spec, ranks=comm)
        calls.append(
            {"op": c.op, "message_bytes": c.message_bytes, "group": c.group, "ranks": ranks,
             "stride": c.group_stride or 1, "count": c.count, "time_s": r.time_s,
             "total_s": r.time_s * c.count, "algorithm": r.algorithm}
        )  # fmt: skip
    comm_s = sum(c["total_s"] for c in calls)
    out = {
        "trace": str(trace),
        "version": tr.version,
        "cluster": spec.name,
        "nodes": w.nodes,
        "skipped_nodes": w.skipped,
        "compute_s": w.compute_s,
        "communication_s": comm_s,
        "serial_total_s": w.compute_s + comm_s,
        "calls": calls,
    }
    if json_out:
        emit_json(out)
        return
    console.print(
        f"{literal(str(trace))}: Chakra {literal(tr.version)}, {w.nodes} nodes ({w.skipped} neither compute "
        f"nor a known collective); on {literal(spec.name)} ({spec.n_gpus} GPUs):",
        markup=True,
        highlight=False,
    )
    t = Table(show_edge=False)
    for col in ("op", "size (B)", "group", "ranks", "stride", "calls", "time (us)", "total (s)", "algorithm"):
        t.add_column(col, justify="right")
    for row in calls:
        t.add_row(row["op"], f"{row['message_bytes']:.0f}", literal(row["group"]), str(row["ranks"]),
                  str(row["stride"]), str(row["count"]), f"{row['time_s'] * 1e6:,.2f}",
                  f"{row['total_s']:.4f}", row["algorithm"])  # fmt: skip
    console.print(t)
    console.print(
        f"compute {w.compute_s:.4f} s + communication {comm_s:.4f} s = {w.compute_s + comm_s:.4f} s "
        "(no overlap: an upper bound)"
    )

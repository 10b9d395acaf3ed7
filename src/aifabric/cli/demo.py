"""``aifabric demo``: the seed lesson's all-reduce example and its "Try it" variants."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from aifabric.cli.common import console, emit_json, handle_errors
from aifabric.engines.lesson import lesson_rows, try1_nic_rates

__all__ = ["demo"]


@handle_errors
def demo(
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Gradient all-reduce of a 70B model in BF16 (140 GB): 8 GPUs, an NVL72, 1,024 GPUs flat and
    hierarchical, and the lesson's "Try it" variants, under three bandwidth conventions (seconds).
    """
    rows = lesson_rows()
    if json_out:
        emit_json([r.__dict__ for r in rows])
        return
    t = Table(title="All-reduce of 140 GB (70B params, BF16); seconds", show_edge=False)
    for col in ("scenario", "lesson says", "lesson convention", "per direction", "NCCL-effective"):
        t.add_column(col)
    for r in rows:

        def fmt(x: float, parts: tuple[float, ...]) -> str:
            return f"{x:.2f}" + (f" ({parts[0]:.2f} NVLink + {parts[1]:.3f} NICs)" if parts else "")

        t.add_row(
            r.scenario,
            f"{r.expected_s:.2f}" if r.expected_s else "",
            fmt(r.lesson_s, r.parts_lesson),
            fmt(r.per_direction_s, r.parts_per_direction),
            f"{r.nccl_s:.2f}",
        )
    console.print(t)
    h = rows[3]
    speedup = rows[3].lesson_s / rows[4].lesson_s
    console.print(
        f"Try 1: ConnectX-9 makes the hierarchical all-reduce {speedup:.2f}x faster under the lesson's "
        f"convention ({rows[3].lesson_s:.2f} -> {rows[4].lesson_s:.2f} s). {_try1_bound()}"
    )
    console.print(
        "Conventions: the lesson divides by NVLink's 900 GB/s, which adds both directions. A ring sends "
        "and receives at once, so each direction carries 450 GB/s: under the per-direction convention (the "
        f"default) every NVLink term doubles ({h.parts_lesson[0]:.2f} -> {h.parts_per_direction[0]:.2f} s) "
        "while NIC terms, already quoted per direction (800 Gb/s = 100 GB/s), stay. The NVL72 rows use a "
        "real GB200 NVL72 in those columns: NVLink 5 carries 900 GB/s per direction, the lesson's figure, "
        "so its NVL72 times hold. NCCL-effective adds what real machines lose: NVLink at NCCL's per-link "
        "constants (370.8 GB/s on H100, 721.8 on GB200), NIC payload efficiency, latencies."
    )
    console.print(
        "Try 3: run 'aifabric inspect <file with nvidia-smi topo -m output>' to see NVLink pairs and the "
        "nearest NIC per GPU."
    )


def _try1_bound() -> str:
    """Why Try 1's NCCL-effective time stands still: the GPU's PCIe link caps the NIC, whichever NIC."""
    before, after, link = try1_nic_rates()
    if link >= after:
        return ""
    return (
        f"A real machine gains {'nothing' if link <= before else 'less'}: the GPU's PCIe link to its NIC "
        f"carries {link / 1e9:.1f} GB/s, below the NIC's payload ({before / 1e9:.1f} GB/s at 800 Gb/s, "
        f"{after / 1e9:.1f} at 1.6 Tb/s), so the NCCL-effective column is held at the link's rate."
    )

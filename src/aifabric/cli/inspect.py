"""``aifabric inspect``: what a machine is, from ``nvidia-smi topo -m`` or an NCCL topology XML.

Exit codes: 0 success; 2 bad input (unreadable or malformed file, bad option), with one line on stderr
naming the file and line; 1 an internal error.

Start-up: only what ``inspect`` uses is imported (issue 9: <= 0.5 s with start-up); the nccl-tests
commands live in :mod:`aifabric.cli.nccl_tests`.
"""

from __future__ import annotations

import math
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
import yaml
from rich.console import RenderableType
from rich.markup import escape
from rich.text import Text

from aifabric.cli.common import (
    HtmlOpt,
    check_outputs,
    console,
    emit_json,
    err_console,
    handle_errors,
    options_as_typed,
)
from aifabric.cli.tables import Cell, fits, fitted_table, gbps_text, name_ranges, size_text
from aifabric.discovery._text import read_log

__all__ = ["inspect"]


class Format(str, Enum):
    auto = "auto"
    nvidia_smi = "nvidia-smi"
    nccl_xml = "nccl-xml"


@handle_errors
def inspect(
    file: Annotated[
        Path, typer.Argument(help="nvidia-smi topo -m output, or an NCCL topology XML (NCCL_TOPO_DUMP_FILE)")
    ],
    gpu: Annotated[
        str | None,
        typer.Option(
            help="Accelerator catalogue key (h100-sxm, h200-sxm, b200, gb200, a100-sxm-80gb, "
            "v100-pcie-32gb); default: guessed from the input, else h100-sxm"
        ),
    ] = None,
    nic_speed: Annotated[
        str | None,
        typer.Option(
            "--nic-speed", help="Speed of each NIC, e.g. '400 Gb/s'; default: the XML's, else 400 Gb/s"
        ),
    ] = None,
    fmt: Annotated[Format, typer.Option("--format", help="Input format")] = Format.auto,
    doc: Annotated[
        int | None, typer.Option("--doc", help="Only the N-th <system> of an XML file (1-based)", min=1)
    ] = None,
    nccl_version: Annotated[
        str | None,
        typer.Option(
            "--nccl-version",
            help="The NCCL release the node runs, e.g. 2.26.2 (default: newest recorded): its tuning tables "
            "price the expected busbw, and it decides GPUDirect RDMA to a NIC behind a Grace CPU (2.27.3 on)",
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
    html: HtmlOpt = None,
) -> None:
    """What a machine is: NVLink groups, nearest NICs and GPUDirect RDMA, NUMA, a node ClusterSpec, and the
    busbw it should reach.

    Reads `nvidia-smi topo -m` text or an NCCL topology XML (detected). GPUDirect RDMA is judged per GPU-NIC
    pair from the path: PIX/PXB good; PHB/NODE/SYS degrade it (NCCL_NET_GDR_LEVEL defaults to PXB). Expected
    busbw is all_reduce at 4 GiB (GB/s = 1e9 B/s), from the formula engine. Exit codes: 0 ok, 2 bad input.
    """
    from aifabric.discovery.node import inspect_node_text

    check_outputs(html=html)  # before any work
    text, source = read_log(file)
    # the two-node fabric is built from the input: a node too big for it names the input, not a YAML field
    typed = {
        "scale_out.tiers": f"{file}: the node it describes cannot be wired",
        "nccl version": "--nccl-version",
    }
    with options_as_typed(typed):
        nodes = inspect_node_text(
            text, source=source, gpu=gpu, nic_speed=nic_speed, fmt=fmt.value, nccl_version=nccl_version
        )
    if doc is not None:
        if doc > len(nodes):
            raise ValueError(f"--doc: {doc} is out of range; the file describes {len(nodes)} node(s)")
        nodes = [nodes[doc - 1]]
    if html is not None:
        from aifabric.report.html import inspect_report, write_html

        written = write_html(inspect_report(nodes, file=file, gpu=gpu, nic_speed=nic_speed), html)
        err_console.print(f"report written to {written}", markup=False, highlight=False)
    if json_out:
        emit_json([n.to_dict() for n in nodes])
        return
    for k, node in enumerate(nodes):
        if k:
            console.print()
        _render_node(node)


def _nic_origin(node) -> str:  # noqa: ANN001  (a NodeInspection)
    """Where the NIC speed of the headline came from, when not the file or the caller: `` (assumed)``, or
    `` (from ND96asr_v4)`` for the cloud instance the file names."""
    if node.nic_speed_instance is not None:
        return f" (from {escape(node.nic_speed_instance)})"
    return " (assumed)" if node.nic_speed_assumed else ""


def _render_node(node) -> None:  # noqa: ANN001  (a NodeInspection; the module is imported lazily)
    """One inspected node: its layout, NVLink, GPU-NIC paths, NUMA, ClusterSpec YAML, expected busbw, and
    its warnings and assumptions."""
    lay = node.layout
    matrix = "nvidia-smi topo -mp" if lay.nvlink_hidden else "nvidia-smi topo -m"
    what = matrix if lay.kind == "nvidia-smi" else "NCCL topology XML"
    origin = {"--gpu": "given", "the file": "from the file", "the layout": "guessed from the layout",
              "default": "assumed"}.get(node.accelerator_source, "")  # fmt: skip
    console.print(
        f"[bold]{escape(lay.source or 'node')}[/] ({what}, line {lay.line}): {len(lay.node_gpus)} GPUs, "
        f"{len(lay.nics)} NICs; modelled as {node.accelerator}{f' ({origin})' if origin else ''} with "
        f"{node.nic_speed_bytes_per_s * 8 / 1e9:g} Gb/s "
        f"NICs{_nic_origin(node)}",
        markup=True,
    )
    _render_nvlink(node)
    if lay.nics:
        console.print(_nic_table(node))
    numa = "; ".join(
        f"node {n.node if n.node is not None else '?'}: {', '.join(n.gpus) or 'no GPU'}"
        + (f" + {', '.join(n.nics)}" if n.nics else "")
        for n in node.numa
    )
    console.print(f"NUMA: {numa}")
    console.print("Node ClusterSpec (save as YAML, then --cluster FILE):")
    console.print(
        yaml.safe_dump(node.spec_data, sort_keys=False, default_flow_style=None).rstrip(), markup=False
    )
    _render_expected(node)
    for w in node.warnings:
        console.print(f"[yellow]warning[/] ({w.code}): {escape(w.message)}", highlight=False, markup=True)
    for a in node.assumptions:
        console.print(f"assumed: {escape(a)}", highlight=False, markup=True)


def _render_nvlink(node) -> None:  # noqa: ANN001  (a NodeInspection; the module is imported lazily)
    """The node's NVLink groups: pairs, link counts, full mesh or partial (then each pair)."""
    if not node.nvlink_groups:
        hidden, to_cut = node.layout.nvlink_hidden, node.layout.nvlinks_to_cut_gpus
        console.print(
            "NVLink: not shown (nvidia-smi topo -mp prints PCIe paths only)"
            if hidden
            else "NVLink: none among the GPUs counted; the rows read show "
            + ", ".join(f"{a}-{b} NV{c}" for a, b, c in to_cut)
            + " to GPUs whose rows were cut"
            if to_cut
            else "NVLink: none in the input"
        )
    for g in node.nvlink_groups:
        counts = ", ".join(f"NV{c}" for c in g.link_counts)
        shape = node.group_shape(g)  # an NVSwitch's only when the node is modelled on one
        console.print(f"NVLink group {'+'.join(g.gpus)}: {len(g.pairs)} pairs, {counts}; {shape}")
        if not g.full_mesh or len(g.link_counts) > 1:
            console.print("  pairs: " + ", ".join(f"{a}-{b} NV{c}" for a, b, c in g.pairs))


_NIC_TITLE = "GPU to NIC (GPUDirect RDMA: PIX/PXB good; PHB/NODE/SYS degrade it)"
#: The same on a Grace board (:attr:`NodeLayout.c2c`): NCCL 2.27+ reaches its own CPU's NICs over C2C.
_NIC_TITLE_C2C = (
    "GPU to NIC (GPUDirect RDMA: PIX/PXB, and over C2C to the GPU's own Grace's NICs from NCCL 2.27.3; else "
    "degraded)"
)
_NIC_HEADERS = ("GPU", "NUMA", "nearest NIC(s)", "path", "paired NIC", "GDR")


def _nic_table(node) -> RenderableType:  # noqa: ANN001  (a NodeInspection, imported lazily)
    """GPU to NIC: NUMA node, nearest NICs, the PCIe path, the paired NIC, GPUDirect RDMA, then each NIC's
    path in a column of its own when the columns fit the console, else one column per GPU naming its NICs
    by path (an AWS p5 has 32 NICs: 32 columns do not fit 180 characters)."""
    lay = node.layout
    rows = {g: _nic_row(node, g) for g in lay.gpus}
    per_nic = [[*row, *(_path_cell(node.path(g, n)) for n in lay.nics)] for g, row in rows.items()]
    title = _NIC_TITLE_C2C if lay.c2c else _NIC_TITLE
    if fits(console, [*_NIC_HEADERS, *lay.nics], per_nic):
        return fitted_table(console, [*_NIC_HEADERS, *lay.nics], per_nic, title=title)
    summary = [[*row, _nics_by_path(node, g)] for g, row in rows.items()]
    return fitted_table(console, [*_NIC_HEADERS, "NICs by path"], summary, title=title)


def _nic_row(node, gpu: str) -> list[Cell]:  # noqa: ANN001  (a NodeInspection, imported lazily)
    """A GPU's NUMA node, nearest NICs (with their names), nearest path, paired NIC and its GDR verdict."""
    lay = node.layout
    near = node.nearest.get(gpu, ())
    p = node.pairing.get(gpu)
    numa = lay.gpu_numa.get(gpu)
    return [
        gpu,
        str(numa) if numa is not None else "-",
        ", ".join(f"{x.nic} ({x.nic_name})" if x.nic_name != x.nic else x.nic for x in near),
        near[0].path if near else "-",
        p.nic if p else "-",
        ("yes" if p.gdr else Text("no", style="red")) if p else "-",
    ]


def _path_cell(path) -> Text:  # noqa: ANN001  (a GpuNicPath, imported lazily)
    return Text(path.path, style="green" if path.gdr else "red")


def _nics_by_path(node, gpu: str) -> str:  # noqa: ANN001  (a NodeInspection, imported lazily)
    """``PIX: NIC0-NIC3; PHB: NIC4-NIC31``: the GPU's NICs grouped by path type, nearest first."""
    return "; ".join(f"{path}: {name_ranges(nics)}" for path, nics in node.nics_by_path(gpu))


def _gpu_link_text(pcie: str | None, links: int, bytes_per_s: float) -> str:
    """The GPU's PCIe link(s) to its NICs in words, with what they carry: one x16 link, or ``links`` of them
    (a Rubin package's two ConnectX-9 chips, each on its own x16), or none the catalogue gives.

    >>> _gpu_link_text("gen4", 1, 28.8e9), _gpu_link_text("gen6", 2, 230.4e9)
    ("the GPU's PCIe Gen4 x16 link, 28.8 GB/s", "the GPU's 2 PCIe Gen6 x16 links, 230.4 GB/s")
    >>> _gpu_link_text(None, 1, float("inf"))
    "the GPU's link to its NICs, which the catalogue does not bound"
    """
    if pcie is None or not math.isfinite(bytes_per_s):
        return "the GPU's link to its NICs, which the catalogue does not bound"
    gen = pcie.capitalize()
    many = f"{links} PCIe {gen} x16 links" if links > 1 else f"PCIe {gen} x16 link"
    return f"the GPU's {many}, {bytes_per_s / 1e9:.1f} GB/s"


def _across_node_note(node) -> str:  # noqa: ANN001  (a NodeInspection; the module is imported lazily)
    """Which bound sets the across-node figure, with its numbers: the NICs' share per GPU (a shared NIC,
    the host staging without GPUDirect RDMA) against the GPU's own PCIe link, then the layout's other
    losses (:attr:`~aifabric.discovery.node.NodeInspection.across_node_bound`), and the node's own ring
    when it is slower than the NICs of the node together."""
    per_gpu, bound, figures = node.across_node_bound
    f, spec = dict(figures), node.spec
    shared = spec.scale_out.gpus_per_nic
    nic = f"{f['nic_payload'] / 1e9:.1f} GB/s of NIC per GPU" + (
        f" ({shared} GPUs per NIC)" if shared > 1 else ""
    )
    if f["host_staging"] < 1:
        nic += f" x {f['host_staging']:.3g} staged in host memory"
    side = f["nic_payload"] * f["host_staging"] / 1e9
    acc = spec.accelerator_spec
    link = _gpu_link_text(acc.pcie, acc.nic_pcie_links, f["gpu_pcie_link"])
    losses = (
        f", then x {f['layout']:.3g} (the layout's GPUDirect and PCIe path losses)" if f["layout"] < 1 else ""
    )
    share = f"the NICs give {node.nic_share_per_gpu:.0%} of one GPU-local NIC per GPU"
    if bound == "gpu_pcie_link":
        text = f"{share}, {nic} = {side:.1f} GB/s, above what {link}, carries: the PCIe link sets it"
    else:
        text = f"{share}, {nic} = {side:.1f} GB/s, below {link}: the NIC share sets it"
    text += f"{losses}: {per_gpu / 1e9:.1f} GB/s per GPU"
    if bound == "gpu_pcie_link":
        text += ", as with GPUDirect RDMA"
    own = min((e.busbw_bytes_per_s for e in node.expected if e.n_nodes == 1), default=None)
    nics = per_gpu * spec.gpus_per_node
    if own is not None and own < nics:
        text += (
            f"; the node's own ring, {own / 1e9:.2f} GB/s, is below its NICs' {nics / 1e9:.1f} GB/s together "
            "and sets the across-node figure"
        )
    return text


def _render_expected(node) -> None:  # noqa: ANN001  (a NodeInspection; the module is imported lazily)
    """Expected all_reduce busbw on the node and across nodes, with what caps or assumes it."""
    console.print(f"Expected all_reduce busbw at {size_text(node.expected[0].message_bytes)}:")
    for e in node.expected:
        console.print(f"  {e.label}: {gbps_text(e.busbw_bytes_per_s)} GB/s ({e.algorithm}/{e.protocol})")
    if node.rail_cap_bytes_per_s is not None:
        console.print(
            f"  (across nodes: each rail is capped at {node.rail_cap_bytes_per_s / 1e9:.0f} GB/s by its "
            f"GPU-NIC PCIe path, {node.rail_cap_link}; line rate x DMA payload efficiency)"
        )
    if node.nic_share_per_gpu < 1.0:
        console.print(f"  (across nodes: {_across_node_note(node)})")
    if node.nic_speed_assumed and len(node.expected) > 1:
        console.print(
            f"  (the across-node figures assume {node.nic_speed_bytes_per_s * 8 / 1e9:g} Gb/s NICs: the "
            "input does not give their speed; use --nic-speed)"
        )

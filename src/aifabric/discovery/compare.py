"""Measured nccl-tests tables against the formula engine: what the log says, what the model says, and why they
differ.

For every table of a log, :func:`compare_nccl_tests` works out

* the collective, ranks and nodes (the parser, :mod:`aifabric.discovery.nccl_tests`);
* the NCCL settings the run used and what they mean for the engine (:mod:`aifabric.discovery.nccl_env`:
  ``NCCL_ALGO=Ring`` -> ``algorithm="ring"``, ``NCCL_NVLS_ENABLE=0`` -> NVLS excluded, ...);
* a cluster: the one given, resized to the log's nodes, or one inferred from the log
  (:mod:`aifabric.discovery.inference`), every guess listed in :attr:`TableComparison.assumptions`;
* the NCCL (or RCCL) release the run printed, or the one the caller states: its tuning tables price every
  prediction of the table (:mod:`aifabric.discovery.release`), named in the assumptions;

then predicts each row with :func:`aifabric.engines.formula.formula_collective` and flags the rows whose
measured bus bandwidth is more than ``threshold`` below the prediction, with the likely causes our sources
name (:data:`CAUSES`, from ``reference/nccl-cost-model.md`` sections 6-7 and the case files).

The deviation of a row is ``measured busbw / predicted busbw - 1``, which equals ``predicted time / measured
time - 1``; it is computed from the times, so rows whose busbw prints as 0.00 still compare. Which cause a
flagged row gets (:func:`_causes`): a one-off outlier (out-of-place and in-place more than 1.5x apart) or an
isolated dip first; then by regime -- latency-bound rows (latency over half the model time), mid-size rows
(below 1 GiB and latency over 1 %), and the large-message plateau, where one node points at NVLS or NVLink
and several nodes at the causes the log shows (NCCL's INFO lines, :mod:`aifabric.discovery.evidence`, or a
known NCCL regression) or, without such lines, the one cause whose reported shortfall alone fits the row's
(:func:`_network_causes`: network settings for up to 20 % below the model; GDR/ACS problems beyond 40 %, a VM
beyond 65 %, which the numbers alone do not tell apart). A shortfall nothing in the log explains is an
``unexplained_shortfall``: its text gives the fraction of the model's ceiling measured and the evidence that
would tell the causes apart (:func:`describe_cause`).

Rows whose time is 0 (or not finite) cannot be compared; they are kept in
:attr:`TableComparison.dropped` and the CLI says so.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aifabric.catalog.nccl import check_release_has_arch, nccl_release, version_tuple
from aifabric.catalog.transport import TransportSpec
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.algorithms import Algorithm
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.ops import Collective, busbw_factor
from aifabric.discovery._text import line_count, nonempty_text, read_log
from aifabric.discovery.calibrate import Calibration, for_path
from aifabric.discovery.contradiction import Contradiction, find_contradiction
from aifabric.discovery.counts import resolve_counts
from aifabric.discovery.evidence import (
    apply_to_settings,
    contradicted_causes,
    evidence_causes,
    mtu_payload_factor,
    net_transport,
    transport_devices,
    with_transport,
)
from aifabric.discovery.inference import gpu_unmodelled, infer_cluster
from aifabric.discovery.line_rate import LinkBound, link_bound
from aifabric.discovery.nccl_env import NcclSettings, nccl_settings, setting_lines
from aifabric.discovery.nccl_info import Evidence, NcclInfo, parse_nccl_info
from aifabric.discovery.nccl_tests import PerfTable
from aifabric.discovery.nvsmi import TopoMatrix
from aifabric.discovery.paste import parse_pasted
from aifabric.discovery.perf_collective import fitting_collectives, odd_size_row
from aifabric.discovery.perf_json import json_log_text, looks_like_json
from aifabric.discovery.perf_records import PerfResult, PerfRow
from aifabric.discovery.regressions import Regression, regression_for
from aifabric.discovery.release import check_stated_version, priced_release
from aifabric.engines.formula import PROTOCOLS, formula_collective
from aifabric.engines.result import CollectiveResult
from aifabric.errors import ParseError
from aifabric.units import format_bytes

__all__ = [
    "CAUSES",
    "NOTES",
    "Finding",
    "NcclTestsComparison",
    "RowComparison",
    "TableComparison",
    "compare_nccl_tests",
    "compare_table",
    "describe_cause",
    "error_tolerance",
    "read_log",
]

_BANNER = re.compile(r"NCCL version \d{1,4}\.\d{1,6}")
_TITLE_VERSION = re.compile(r"\bNCCL[ :]+v?(\d{1,2}\.\d{1,3}\.\d{1,3})\b")
#: Size from which a row counts as "large" whatever its latency share (nccl-tests' plateau region).
LARGE_BYTES = 1 << 30
#: Rows of one table modelled at most: nccl-tests' default sweep (factor 2, 8 B .. 16 GiB) prints 32 rows and
#: a fine ``-i`` step a few hundred; the rows beyond are not worth a prediction each and are noted as skipped.
MAX_ROWS_MODELLED = 2048
#: Tables of one log compared at most without ``--table`` (a sweep log of a few dozen runs stays whole); the
#: tables beyond are listed as skipped, with the option that picks them.
MAX_TABLES_COMPARED = 256
#: out-of-place / in-place time ratio above which a row is a one-off outlier rather than a measurement.
OUTLIER_RATIO = 1.5
#: The old layout's per-type tolerance of its ``error`` column (largest element error): nccl-tests counts a
#: half as wrong when ``maxDelta > DeltaMaxValue(type) * (nranks - 1)`` (``src/common.cu`` of v1.0.0 to
#: v2.11.0: half and bfloat16 1e-2, float 1e-5, double 1e-12, integer types 1e-200).
_ERROR_TOLERANCE = {"half": 1e-2, "bfloat16": 1e-2, "float": 1e-5, "double": 1e-12}
_ERROR_TOLERANCE_INTEGER = 1e-200
#: NCCL 1's own tests (NVIDIA/nccl v1.3.4-1 ``test/include/test_utilities.h`` ``deltaMaxValue``, checked as
#: ``maxDelta > deltaMaxValue(type, is_reduction)`` in ``test/single/*_test.cu``, no ranks factor): a
#: reduction's half 5e-2, float 1e-5, double 1e-12; every other type, and every type of a copy, 1e-200.
_NCCL1_TOLERANCE = {"half": 5e-2, "float": 1e-5, "double": 1e-12}
#: The collectives NCCL 1's tests check as reductions (``is_reduction = true``).
_NCCL1_REDUCTIONS = frozenset({"all_reduce", "reduce", "reduce_scatter"})

# nccl-tests binary names -> the engine's collective names (None: the engine has no model of it).
_OPS: dict[str, str | None] = {
    "all_reduce": "all_reduce",
    "all_gather": "all_gather",
    "reduce_scatter": "reduce_scatter",
    "alltoall": "all_to_all",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "sendrecv": "send_recv",
    "hypercube": None,
    "gather": None,
    "scatter": None,
}

#: The unexplained shortfall's last ask, left out when the log's own file holds the matrix
#: (:attr:`TableComparison.topology_line`).
_ASK_TOPOLOGY = " and the GPU-NIC paths with nvidia-smi topo -m"
#: Likely causes of a row far below the prediction, as our sources name them. Keys are stable (tests and
#: JSON use them); texts cite the source.
CAUSES: dict[str, str] = {
    "wrong_results": (
        "nccl-tests' own check failed: the collective returned wrong elements (a non-zero #wrong column or "
        "'Out of bounds values : N FAILED', NVIDIA/nccl-tests src/common.cu), so the run is faulty whatever "
        "its bandwidth; suspect the GPUs, NVLink or the network corrupting data (dmesg Xid, NIC counters) "
        "and rerun the size that failed"
    ),
    "outlier": (
        "one-off outlier: out-of-place and in-place times differ by more than 1.5x at this size; a warm-up "
        "or first-call artefact, not the fabric (seen at 8 B and 256 B in NVIDIA/nccl-tests #309)"
    ),
    "dip": (
        "isolated mid-size dip: the sizes on both sides agree with the model far better; NCCL's tuner "
        "switching algorithm or protocol at this size, or a warm-up artefact (8 MB rows in "
        "NVIDIA/nccl-tests #309); do not fit it"
    ),
    "type_bound": (
        "data-type bound: the same size in another data type of this run (nccl-tests -d all) is within the "
        "model, so the links carried those bytes at the model's rate and do not hold this row back; the "
        "GPU's reduction of this type is slower, and the model has no per-type cost (2 x 8 H200, NCCL "
        "2.30.4: all_reduce at 10 GiB 389 GB/s busbw in int8, uint8 and fp8, 485 GB/s in float)"
    ),
    "latency_net": (
        "per-operation latency above NCCL's model: a network plugin or socket transport (GCP TCPXO ~123 us "
        "for an 8 B all_reduce, dstackai/dstack GCP example; one GKE A4 run through gIB at ~250-300 us at "
        "1-64 KB, kubernetes-sigs/dranet GKE RDMA guide, where Google's own A4 guide runs 35-41 us), "
        "proxy-thread or CPU placement, or launch overhead"
    ),
    "latency_model": (
        "small-message time above NCCL's latency model by less than 2x: launch, protocol and proxy costs its "
        "constants leave out; the model is within 15 % only at the smallest sizes (2-4 H100 nodes, "
        "NVIDIA/nccl-tests #309)"
    ),
    "latency_local": (
        "per-operation overhead above NCCL's latency constants: launch and synchronisation cost, or an older "
        "NCCL whose constants were larger (reference note, header)"
    ),
    "nccl_default": (
        "NCCL's default algorithm: within the threshold of the model's prediction for an algorithm NCCL's "
        "default runs at these sizes; the model predicts the fastest, and which one NCCL's tuner picks at a "
        "size depends on its release (4 H100 nodes with defaults: ~320-366 GB/s against 390 for the ring, "
        "NVIDIA/nccl-tests #309); not a fault of the fabric"
    ),
    "ramp": (
        "mid-size row: NCCL runs fewer channels or another protocol than at its peak and busbw ramps up to "
        "the plateau only near 1 GB (one H100 node: 383 GB/s at 128 MB vs 474 at 4 GB, NVIDIA/nccl-tests "
        "#290); a bandwidth model is optimistic here; too few channels (NCCL_MIN_CTAS) makes it worse"
    ),
    "network_settings": (
        "network settings: adaptive routing off, too few QPs per connection (NCCL_IB_QPS_PER_CONNECTION=2) "
        "or too few channels (NCCL_MIN_CTAS=24): on 8 H100 nodes these took busbw from 320 to 391 GB/s "
        "(NCCL maintainer, NVIDIA/nccl-tests #309)"
    ),
    "no_gdr": (
        "no GPUDirect RDMA or a NIC behind the CPU (path PHB/NODE/SYS, nvidia-peermem not loaded, "
        "NCCL_NET_GDR_LEVEL too low): traffic is staged in host memory and network busbw drops 2-8x, "
        "more than a 40 % shortfall (NVIDIA/nccl #412, #489)"
    ),
    "acs_iommu": (
        "PCIe ACS redirect with the IOMMU in translated mode sends GPU-NIC traffic through the root complex "
        "(NVIDIA/nccl #2409: 456 GB/s on 2 H100 nodes once fixed)"
    ),
    "vm_pcie": (
        "a VM that hides the PCIe switches, so NCCL cannot see which NIC is local to which GPU "
        "(NVIDIA/nccl-tests #256: H200 VMs ~55 GB/s, ~105 with a topology file, 459-489 bare metal); "
        "give NCCL_TOPO_FILE"
    ),
    "nvls_off": (
        "NVLink SHARP not in use (NCCL_NVLS_ENABLE=0, fabric manager not running, or an NCCL without NVLS): "
        "the measured busbw is the ring figure (~370 GB/s on H100), not NVLS (~480) "
        "(NCCL maintainer, NVIDIA/nccl-tests #212, #309)"
    ),
    "nvlink_degraded": (
        "scale-up below the ring figure: a GPU with NVLinks down (nvidia-smi nvlink -s), P2P disabled "
        "(NCCL_P2P_DISABLE/NCCL_P2P_LEVEL, or a VM without GPU peer-to-peer: H200 VMs ~55 GB/s against "
        "459-489 on bare metal, NVIDIA/nccl-tests #256), or NVLink traffic sharing the GPUs with other work"
    ),
    "net_socket": (
        "the network ran over NCCL's socket transport (NET/Socket: TCP through host memory, no RDMA): "
        "~0.55 of line rate and ~39 us per step (NVIDIA/nccl-tests #82, #83; NVIDIA/nccl #209); check that "
        "the RDMA NICs are visible (NCCL_IB_DISABLE, NCCL_NET, the IB/EFA driver and plugin)"
    ),
    "pxn_off": (
        "PXN off (NCCL_PXN_DISABLE=1 or a plugin without it): inter-node sends leave from the GPU's own NIC "
        "instead of the rail-aligned one through NVLink, so rail-optimised fabrics cross the spine "
        "(NCCL 2.12 release notes, PXN; NVIDIA/nccl graph/paths.cc)"
    ),
    "one_nic": (
        "fewer NICs used than the node has (an NCCL_IB_HCA subset, a NIC down, or one NIC shared by the "
        "GPUs): the network busbw is bounded by the NICs the connections used"
    ),
    "no_p2p": (
        "GPUs of a node exchange data through host shared memory (NCCL SHM), not P2P: NCCL found peer access "
        "unusable (NCCL_P2P_DISABLE/NCCL_P2P_LEVEL, a VM without P2P between GPUs, or PCIe ACS redirecting "
        "peer traffic); every intra-node hop is staged through the CPU (NVIDIA/nccl transport/p2p.cc; "
        "H200 VMs ~55 GB/s vs 459-489 bare metal, NVIDIA/nccl-tests #256)"
    ),
    "small_mtu": (
        "an active IB/RoCE MTU below 4096 B: every packet's headers take a larger share of the wire; the "
        "cost is bounded by the payload efficiency (m / (m + h) against 4096 B: RoCEv2's 82 B of framing "
        "cost ~1.9 % at 2048 B and ~5.6 % at 1024 B, a 1500 B Ethernet MTU; ~1.7 % at 2048 B on "
        "InfiniBand); raise the port and switch MTU (ibv_devinfo active_mtu)"
    ),
    "above_links": (
        "measured faster than the links the collective crosses can carry: each rank sends at least "
        "2(n-1)/n of the buffer in an all_reduce without in-network reduction (Patarasuk & Yuan 2009), and "
        "receives at least its result (all_reduce, broadcast, reduce, send_recv) or the others' share "
        "(all_gather, reduce_scatter, all_to_all), at no more than its scale-up and NIC line rates "
        "(aifabric.discovery.line_rate); the row is a broken measurement (a timer, -c 0 with few "
        "iterations, a size or rank count other than the header's, a row from another run), not a fast "
        "fabric: measure it again with -c 1"
    ),
    "log_contradiction": (
        "the log contradicts itself: the run measured far above what a setting or NCCL INFO line of the log "
        "allows, so the setting did not take effect (exported where NCCL did not read it, overridden by a "
        "config file or container) or the line is not this run's; check the environment NCCL printed with "
        "NCCL_DEBUG=INFO (NCCL_X set by environment) and measure again"
    ),
    "unexplained_shortfall": (
        "a large-message shortfall the log does not explain: no NCCL INFO line, setting or topology fact in "
        "it accounts for it (network settings recover up to ~20 %, 320 -> 391 GB/s, NVIDIA/nccl-tests #309, "
        "but nothing in the log shows them off). To tell the causes apart, rerun with NCCL_DEBUG=INFO "
        "NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH (the network plugin and transport of each connection, GPUDirect "
        "RDMA on or off, the channels and NICs used), read the active MTU with ibv_devinfo" + _ASK_TOPOLOGY
    ),
    "nccl_regression": (
        "an NCCL release known for a bandwidth regression on this collective, algorithm and scale "
        "(catalog/data/nccl_regressions.yaml): upgrade to the release that fixes it"
    ),
    "pcie_root": (
        "PCIe-only node: busbw is bounded by what the CPU root complex forwards (9-11 GB/s for 4 x V100 "
        "Gen3, rcgsheffield/sheffield_hpc Bessemer CUDA page; NCCL maintainer in NVIDIA/nccl #1639) and by "
        "P2P settings (NCCL_P2P_LEVEL, NCCL_P2P_DISABLE, ACS)"
    ),
}
#: Measured/predicted busbw ratios our sources report for each multi-node plateau cause: (lowest, highest,
#: typical). Network settings: 320 of 391-400 GB/s on 8 H100 nodes, lifted to 391 by NCCL_MIN_CTAS,
#: NCCL_IB_QPS_PER_CONNECTION and adaptive routing (NVIDIA/nccl-tests #309): the largest shortfall they were
#: shown to recover is 320/400 = 0.80 of the ceiling; no GPUDirect RDMA and ACS/IOMMU redirection: 2-8x
#: lower (NVIDIA/nccl #412, #489, #2409), so not offered for a shortfall under 40 %; a VM hiding the PCIe
#: layout: ~55-105 of 459-489 GB/s (NVIDIA/nccl-tests #256).
_SHORTFALL: dict[str, tuple[float, float, float]] = {
    "network_settings": (0.80, 1.0, 0.82),
    "no_gdr": (0.0, 0.6, 0.3),
    "acs_iommu": (0.0, 0.6, 0.3),
    "vm_pcie": (0.0, 0.35, 0.15),
}
#: Measured/predicted busbw below which a plateau is a collapse rather than a shortfall: the smallest loss our
#: sources report for GDR off, sockets or a VM, 2x (2-8x, NVIDIA/nccl #412, #489; NVIDIA/nccl-tests #256).
_COLLAPSE = 0.5
#: Notes on rows that are not faults.
NOTES: dict[str, str] = {
    "two_node_tree": (
        "exactly 2 nodes: Tree/NVLSTree busbw can exceed the network limit ({limit:.0f} GB/s here); it is "
        "the ideal case for trees, not the fabric's figure; use NCCL_ALGO=Ring to measure the fabric (NCCL "
        "maintainer, NVIDIA/nccl-tests #309, #196)"
    ),
    "above": "measured above the model by more than the threshold",
    "above_links": "measured above what the links can carry ({bound}): not a possible measurement",
    "default_range": ("the model's range for NCCL's default at this size: {span}"),
}


def describe_cause(key: str, comparison: TableComparison | None = None) -> str:
    """The text of cause ``key`` (:data:`CAUSES`), adjusted to what the run already did.

    A run that already sets ``NCCL_MIN_CTAS`` and ``NCCL_IB_QPS_PER_CONNECTION`` is told so, leaving adaptive
    routing and the fabric as the suspects.

    Raises
    ------
    KeyError
        If ``key`` is not a cause.
    """
    text = CAUSES[key]
    if comparison is not None and key == "wrong_results":
        text += " [" + "; ".join(str(e) for e in comparison.wrong_evidence) + "]"
    if comparison is not None and key == "above_links" and comparison.bound is not None:
        text += f" [the links allow {comparison.bound.describe()}{_assumed_gpu(comparison)}]"
    if comparison is not None and key == "log_contradiction" and comparison.contradiction is not None:
        text += f" [{comparison.contradiction.describe()}]"
    if comparison is not None and key == "unexplained_shortfall":
        if comparison.topology_line is not None:
            where = f"nvidia-smi topo -m at line {comparison.topology_line}"
            text = text.removesuffix(_ASK_TOPOLOGY) + (
                f" (the GPU-NIC paths are in this file: {where}, read by aifabric inspect)"
            )
        text += f" [{_shortfall_facts(comparison)}]"
    if comparison is not None and key == "nccl_regression":
        found = comparison.regression
        if found is not None:
            text += f" [{found.describe()}]"
    if comparison is not None and key == "net_socket" and comparison.net is not None:
        text += f" [{_socket_facts(comparison)}]"
    if comparison is not None and key == "small_mtu":
        share = comparison.bounded_share(key)
        if share is not None:
            text += f" [MTU {comparison.info.mtu_bytes} B here: {share:.1%} of the NIC's payload rate]"
    if comparison is not None and key in ("network_settings", "ramp"):
        done = [f"{k}={v}" for k, v in comparison.settings.env.items()
                if k in ("NCCL_MIN_CTAS", "NCCL_IB_QPS_PER_CONNECTION", "NCCL_MIN_NCHANNELS")]  # fmt: skip
        if done:
            text += f" [this run already sets {', '.join(done)}]"
    return text


def _assumed_gpu(comparison: TableComparison) -> str:
    """``"; on an assumed GPU: give --gpu"`` when the log names no GPU model, else ``""``."""
    assumed = any(a.startswith("GPU model not in the log") for a in comparison.assumptions)
    return f" on the assumed {comparison.spec.accelerator}; give --gpu if it ran elsewhere" if assumed else ""


def _socket_facts(comparison: TableComparison) -> str:
    """The figures of a socket run at its largest size: the model over the cluster's NICs, over the sockets
    NCCL used, and the measurement (below the socket model: the interfaces carry less than the NIC line
    rate the socket model assumes for them)."""
    big = max(comparison.large_rows, key=lambda r: r.size_bytes)
    ib, sock = comparison.without_transport(big.size_bytes), big.predicted_busbw_bytes_per_s
    return (f"at {format_bytes(big.size_bytes)} the model gives {ib / 1e9:.0f} GB/s busbw over the cluster's "
            f"NICs and {sock / 1e9:.0f} over {comparison.net.nccl_name if comparison.net else 'sockets'}; "
            f"measured {big.measured_busbw_bytes_per_s / 1e9:.0f}")  # fmt: skip


def _shortfall_facts(comparison: TableComparison) -> str:
    """What the log does show about a shortfall it does not explain: the measured fraction of the model at
    the largest size (its ceiling there, or its figure at 1 GiB beside it: :func:`_model_reference`), and
    how far above the model the small messages are when they point at another network path
    (``latency_net`` rows)."""
    big = max(comparison.large_rows, key=lambda r: r.size_bytes)
    fraction = big.measured_busbw_bytes_per_s / big.predicted_busbw_bytes_per_s
    measured = big.measured_busbw_bytes_per_s / 1e9
    at = format_bytes(big.size_bytes)
    out = f"measured {measured:.0f} GB/s busbw at {at}: {fraction:.0%} of {_model_reference(comparison, big)}"
    rows = comparison.rows
    slow = sorted(r.measured_time_s / r.predicted.time_s for r in rows if r.causes[:1] == ("latency_net",))
    if slow:
        out += (
            f"; {len(slow)} small-message row(s) take {slow[len(slow) // 2]:.0f}x the model's latency: "
            "another network path than NCCL's NET/IB (a plugin or sockets) may carry the run"
        )
    return out


def _model_reference(comparison: TableComparison, big: RowComparison) -> str:
    """The model's figure ``big`` is measured against, named for what it is: the ceiling of the NICs where
    the row is bandwidth-bound (:func:`_bandwidth_bound`), else the model at that size with its latency
    share, and the model at :data:`LARGE_BYTES`, where the NICs' ceiling shows, beside it."""
    spec = comparison.spec
    nics = ""
    if comparison.n_nodes > 1 and spec.scale_out is not None and spec.nic_line_rate_bytes_per_s > 0:
        count = spec.gpus_per_node * spec.scale_out.nic_ports_per_gpu
        per_nic = spec.nic_line_rate_bytes_per_s / spec.scale_out.nic_ports_per_gpu
        nics = f"{count} x {per_nic * 8 / 1e9:.0f}G NICs per node"
    predicted = big.predicted_busbw_bytes_per_s / 1e9
    if _bandwidth_bound(big):
        return f"the model's {predicted:.0f} GB/s" + (f" ceiling of {nics}" if nics else "")
    plateau = comparison.predict(LARGE_BYTES).busbw_bytes_per_s / 1e9
    return (
        f"the model's {predicted:.0f} GB/s at that size, {big.latency_share:.0%} of its time latency (the "
        f"model gives {plateau:.0f} GB/s at {format_bytes(LARGE_BYTES)}" + (f" over {nics})" if nics else ")")
    )


def _bandwidth_bound(row: RowComparison) -> bool:
    """Whether ``row`` measures the network's bandwidth: at least :data:`LARGE_BYTES`, or latency under 1 %
    of its predicted time."""
    return row.size_bytes >= LARGE_BYTES or row.latency_share < 0.01


# -- one row -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RowComparison:
    """One size: measured against predicted.

    Attributes
    ----------
    size_bytes : int
        The ``size`` column (nccl-tests convention, :mod:`aifabric.collectives.ops`).
    line : int
        1-based line of the row in the log.
    measured_time_s : float
        The compared measurement (out-of-place unless asked otherwise), seconds.
    other_time_s : float or None
        The other half of the row (in-place by default), seconds; used to spot one-off outliers.
    measured_busbw_bytes_per_s : float
        busbw recomputed from ``measured_time_s`` (size / time x the collective's factor), bytes/s.
    predicted : CollectiveResult
        The engine's result at this size.
    deviation : float
        ``measured busbw / predicted busbw - 1``: -0.2 is 20 % below the model.
    flagged : bool
        More than the threshold below the prediction with a fault as first cause that the verdict stands
        on (:func:`_is_fault`); a row below the threshold for an artefact or a model limit gets a note.
    causes : tuple of str
        Keys of :data:`CAUSES`, most likely first (rows more than the threshold below the model only).
    notes : tuple of str
        Rendered notes that are not faults (e.g. the 2-node tree aberration).
    """

    size_bytes: int
    line: int
    measured_time_s: float
    other_time_s: float | None
    measured_busbw_bytes_per_s: float
    predicted: CollectiveResult
    deviation: float
    flagged: bool = False
    causes: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def predicted_busbw_bytes_per_s(self) -> float:
        """The engine's busbw at this size, bytes/s."""
        return self.predicted.busbw_bytes_per_s

    @property
    def latency_share(self) -> float:
        """Fraction of the predicted time that does not depend on the size."""
        return self.predicted.latency_s / self.predicted.time_s if self.predicted.time_s > 0 else 0.0

    @property
    def outlier_ratio(self) -> float:
        """max/min of the two halves' times (1.0 when only one half was printed)."""
        if not self.other_time_s or self.other_time_s <= 0 or self.measured_time_s <= 0:
            return 1.0
        return max(self.measured_time_s, self.other_time_s) / min(self.measured_time_s, self.other_time_s)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict, SI units."""
        return {
            "size_bytes": self.size_bytes,
            "line": self.line,
            "measured_time_s": self.measured_time_s,
            "measured_busbw_bytes_per_s": self.measured_busbw_bytes_per_s,
            "predicted_time_s": self.predicted.time_s,
            "predicted_busbw_bytes_per_s": self.predicted.busbw_bytes_per_s,
            "algorithm": self.predicted.algorithm,
            "protocol": self.predicted.protocol,
            "deviation": self.deviation,
            "flagged": self.flagged,
            "causes": list(self.causes),
            "notes": list(self.notes),
        }


#: First causes that are not faults of the machine: measurement artefacts and the model's own limits (the
#: mid-size ramp and per-call overheads its constants leave out).
NOT_FAULTS = frozenset(
    {"outlier", "dip", "latency_model", "latency_local", "ramp", "nccl_default", "type_bound"}
)


@dataclass(frozen=True)
class Finding:
    """One cause of a run's shortfall (or the log's contradiction), with the busbw gap it stands for and the
    log lines behind it.

    Attributes
    ----------
    cause : str
        Key of :data:`CAUSES`.
    gap_bytes_per_s : float
        Mean busbw gap over the rows it stands on, bytes/s, >= 0: predicted minus measured over the rows it
        is the first cause of (a cause of known size, the MTU, its share of it), the bandwidth it explains;
        ``unexplained_shortfall`` explains nothing, the gap is the shortfall left; for ``log_contradiction``
        measured minus predicted over the large rows (:attr:`side` ``"above"``).
    rows : int
        Rows it stands on.
    evidence : tuple of Evidence
        ``NCCL INFO`` lines that show it (empty when the cause is inferred from the numbers alone).
    reference : str
        What the bandwidth is measured against, in words: the model, or for a socket run (predicted over
        its sockets) the model over the cluster's NICs.
    """

    cause: str
    gap_bytes_per_s: float
    rows: int
    evidence: tuple[Evidence, ...] = ()
    reference: str = "the model"

    @property
    def side(self) -> str:
        """Where the measurement is against the model: ``"above"`` for ``log_contradiction`` and
        ``above_links``, else ``"below"``."""
        return "above" if self.cause in ("log_contradiction", "above_links") else "below"

    def to_dict(self, text: str) -> dict[str, Any]:
        """JSON-ready dict, SI units; ``text`` is the cause's text for its table (:func:`describe_cause`)."""
        return {"cause": self.cause, "gap_bytes_per_s": self.gap_bytes_per_s, "side": self.side,
                "rows": self.rows, "reference": self.reference, "text": text,
                "evidence": [{"line": e.line, "text": e.text} for e in self.evidence]}  # fmt: skip


# -- one table -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TableComparison:
    """A table of a log compared with the model.

    Attributes
    ----------
    index : int
        1-based position of the table in the log.
    table : PerfTable
    op : str
        The engine's collective name (``all_reduce``, ``all_to_all``...).
    spec : ClusterSpec
        The cluster predicted on.
    comm : Communicator
    settings : NcclSettings
    assumptions : tuple of str
        Guesses made about the cluster, in words.
    rows : tuple of RowComparison
    place : str
        ``out_of_place`` or ``in_place``: which half was compared.
    threshold : float
        A row is flagged when its deviation is below ``-threshold``.
    calibration : object or None
        The calibration profile applied, if any.
    dropped : tuple of (int, int)
        ``(size_bytes, line)`` of the rows left out because their compared time is 0 or not a number.
    info : NcclInfo
        What the run's ``NCCL INFO`` lines say (empty without them).
    net : TransportSpec or None
        The network transport the INFO lines say ran, when it is not the NIC's own NET/IB (predicted with it).
    version_lines : tuple of Evidence
        The log lines that give the NCCL version.
    contradiction : Contradiction or None
        The fact of the log the measured plateau disproves (:mod:`aifabric.discovery.contradiction`).
    topology_line : int or None
        Line of the ``nvidia-smi topo -m`` matrix the log's file also holds (a job that printed its node's
        topology), None without one: the advice then does not ask for it.
    """

    index: int
    table: PerfTable
    op: str
    spec: ClusterSpec
    comm: Communicator
    settings: NcclSettings
    assumptions: tuple[str, ...]
    rows: tuple[RowComparison, ...]
    place: str = "out_of_place"
    threshold: float = 0.15
    calibration: Any | None = None
    dropped: tuple[tuple[int, int], ...] = ()
    info: NcclInfo = field(default_factory=NcclInfo)
    net: TransportSpec | None = None
    version_lines: tuple[Evidence, ...] = ()
    contradiction: Contradiction | None = None
    topology_line: int | None = None

    @property
    def possible_algorithms(self) -> frozenset[str]:
        """The algorithms NCCL may have run: the one ``NCCL_ALGO`` forces, else all but those excluded
        (``NCCL_NVLS_ENABLE=0``, NVLS unavailable in the INFO lines) and NVLS on a GPU without it."""
        if self.settings.algorithm is not None:
            return frozenset({str(self.settings.algorithm)})
        out = {a.value for a in Algorithm} - {str(a) for a in self.settings.exclude}
        if not self.spec.accelerator_spec.nvls:
            out -= {Algorithm.NVLS.value, Algorithm.NVLS_TREE.value}
        return frozenset(out)

    @property
    def regression(self) -> Regression | None:
        """The known NCCL regression (:mod:`aifabric.discovery.regressions`) this run can have, if any: its
        NCCL version is affected and nothing in the log rules out the algorithm it hits."""
        return regression_for(self.nccl_version, self.op, self.n_nodes, self.possible_algorithms)

    def bounded_share(self, key: str) -> float | None:
        """Share of the predicted busbw a cause with a known size explains (the MTU: 1 - its payload factor,
        :func:`~aifabric.discovery.evidence.mtu_payload_factor`, with the framing of the transport the log
        names, RoCEv2's 82 B on ``/RoCE`` ports); None for the others."""
        nic = self.spec.nic_spec
        if key == "small_mtu" and self.info.mtu_bytes is not None and self.n_nodes > 1 and nic is not None:
            return 1.0 - mtu_payload_factor(self.info.mtu_bytes, nic.payload_efficiency, framing=self.net)
        return None

    @property
    def evidence(self) -> tuple[Evidence, ...]:
        """The INFO lines the comparison used (version, network, connections, NVLS, multi-node NVLink, PXN,
        communicator)."""
        return self.info.lines("version", "network", "net_devices", "gdr_off", "gdr_on", "pxn",
                               "pxn_disabled", "ring_flags", "nvls", "mnnvl", "comm")  # fmt: skip

    @property
    def nccl_version(self) -> str | None:
        """NCCL version: the one the run's tables are priced with (:attr:`NcclSettings.nccl_version`: the
        log's, else the one the user stated), else the log's (:func:`_log_version`)."""
        return self.settings.nccl_version or _log_version(self.table, self.info)

    @property
    def shown_causes(self) -> tuple[tuple[str, tuple[Evidence, ...]], ...]:
        """Causes the INFO lines show, with their lines (:func:`evidence_causes`), on this run's ranks per
        node and the modelled node's NICs."""
        per_node = self.n_ranks // self.n_nodes if self.n_nodes > 1 else None
        out = self.spec.scale_out
        nics = round(self.spec.gpus_per_node * out.nic_ports_per_gpu) if out is not None else None
        return evidence_causes(self.info, self.n_nodes, per_node, nics)

    @property
    def n_ranks(self) -> int:
        """Ranks of the run: the table's (a sendrecv of 8 ranks is modelled as its slowest pair, and still
        ran on 8), else the communicator's."""
        return self.table.n_ranks or self.comm.n_ranks

    @property
    def n_nodes(self) -> int:
        """Nodes (scale-up domains) the run spanned: the table's, else the communicator's."""
        return self.table.n_nodes or self.comm.n_domains

    @property
    def large_rows(self) -> tuple[RowComparison, ...]:
        """Rows of at least 1 GiB, else the largest quarter of the sizes (at least one row)."""
        big = tuple(r for r in self.rows if r.size_bytes >= LARGE_BYTES)
        if big:
            return big
        k = max(1, len(self.rows) // 4)
        return tuple(sorted(self.rows, key=lambda r: r.size_bytes)[-k:])

    @property
    def large_deviation(self) -> float:
        """Median deviation over :attr:`large_rows` (robust to one outlier)."""
        devs = sorted(r.deviation for r in self.large_rows)
        mid = len(devs) // 2
        return devs[mid] if len(devs) % 2 else 0.5 * (devs[mid - 1] + devs[mid])

    def predict(self, size_bytes: float, calibration: Any | None = None) -> CollectiveResult:
        """The engine's result at ``size_bytes`` for this run (its cluster, ranks and NCCL settings).

        ``calibration`` replaces the table's own profile (None keeps it).
        """
        chosen = self.calibration if calibration is None else calibration
        devices = transport_devices(self.info, self.net)
        return _calibrated(
            self.op, size_bytes, self.spec, self.comm, self.settings, chosen, self.net, devices
        )

    def without_transport(self, size_bytes: float) -> float:
        """Predicted busbw at ``size_bytes`` over the cluster's own NICs (NET/IB), without the transport the
        INFO lines name (:attr:`net`), bytes/s."""
        return dataclasses.replace(self, net=None).predict(size_bytes).busbw_bytes_per_s

    @property
    def out_of_order(self) -> tuple[tuple[RowComparison, RowComparison, RowComparison | None], ...]:
        """``(row, row before it, first earlier row of its size or None)`` for each row not larger than the
        row printed before it. nccl-tests prints one run's sizes in increasing order (``-b`` to ``-e`` by
        ``-f`` or ``-i``), so such a row is a second run pasted under the first or a line repeated; it is
        compared as printed, and said. A row whose data type or operation differs from the row before starts
        the next sweep of ``-d all`` / ``-o all`` (nccl-tests loops types, then operations, around the size
        sweep: ``AllReduceRunTest`` in ``src/all_reduce.cu``), and is in order; a size seen again is looked up
        within its own sweep."""
        sweep = {row.line: (row.dtype, row.redop) for row in self.table.rows}
        out = []
        first: dict[tuple[object, int], RowComparison] = {}
        for before, row in zip(self.rows, self.rows[1:], strict=False):
            first.setdefault((sweep.get(before.line), before.size_bytes), before)
            if sweep.get(row.line) != sweep.get(before.line):
                continue
            if row.size_bytes <= before.size_bytes:
                out.append((row, before, first.get((sweep.get(row.line), row.size_bytes))))
        return tuple(out)

    @property
    def flagged_rows(self) -> tuple[RowComparison, ...]:
        """Rows more than the threshold below the model that carry a fault the verdict stands on."""
        return tuple(r for r in self.rows if r.flagged)

    @property
    def findings(self) -> tuple[Finding, ...]:
        """The faults the flagged large-message rows (:attr:`large_rows`) point at, most bandwidth explained
        first.

        The plateau is what a fabric is judged on; smaller rows keep their flags and causes but make no
        finding. Artefacts and model limits (:data:`NOT_FAULTS`) are left out, so a healthy run has none.
        A plateau far above what the log allows (:attr:`contradiction`) is the ``log_contradiction`` finding,
        its bandwidth the mean measured busbw above the model over the large rows. A socket run
        (``net_socket`` first) is predicted over its sockets already: the cause explains the shortfall
        against the cluster's NICs (:meth:`without_transport` minus measured), not against its own
        prediction. A run whose own check failed (:attr:`wrong_evidence`) has the ``wrong_results`` finding
        first, whatever its bandwidth (gap 0: it explains no bandwidth, it voids the measurement)."""
        wrong = self.wrong_evidence
        failed = (Finding("wrong_results", 0.0, len(wrong), wrong),) if wrong else ()
        if self.gpu_unmodelled:  # a fault read off another GPU than the log names is no finding
            return failed
        return failed + self._above_links() + self._bandwidth_findings()

    @property
    def gpu_unmodelled(self) -> bool:
        """Whether the machine predicted on is not known to be the log's: a GPU assumed or the catalogue
        lacks, or an NCCL release older than every recorded one
        (:func:`~aifabric.discovery.inference.gpu_unmodelled`): the rows are compared, but no fault is read
        off a machine the log does not describe."""
        return gpu_unmodelled(self.assumptions)

    @property
    def bound(self) -> LinkBound | None:
        """The busbw no row of this run can exceed on the cluster's links (:func:`link_bound`)."""
        return link_bound(self.op, self.n_ranks, self.spec)

    def _above_links(self) -> tuple[Finding, ...]:
        """The ``above_links`` finding: the rows measured above :attr:`bound`, its bandwidth the mean busbw
        above the bound, each row's line as evidence; none when every row is within it."""
        bound = self.bound
        if bound is None:
            return ()
        limit = bound.busbw_bytes_per_s
        above = [r for r in self.rows if r.measured_busbw_bytes_per_s > limit]
        if not above:
            return ()
        gap = sum(r.measured_busbw_bytes_per_s - limit for r in above) / len(above)
        evidence = tuple(
            Evidence(r.line, f"{r.size_bytes} B: busbw {r.measured_busbw_bytes_per_s / 1e9:.2f} "
                     f"GB/s, above the links' {limit / 1e9:.0f} GB/s")
            for r in above
        )  # fmt: skip
        return (Finding("above_links", gap, len(above), evidence, self._reference("above_links")),)

    @property
    def wrong_evidence(self) -> tuple[Evidence, ...]:
        """The lines where nccl-tests' own check failed: each row half with a non-zero ``#wrong`` count,
        then an ``# Out of bounds values : N FAILED`` footer with N > 0 (NVIDIA/nccl-tests src/common.cu)."""
        out = []
        for row in self.table.rows:
            for place, half in (("out-of-place", row.out_of_place), ("in-place", row.in_place)):
                if half is not None and half.wrong:
                    out.append(Evidence(row.line, f"#wrong {half.wrong} ({place}, {row.size_bytes} B)"))
        t = self.table
        if t.out_of_bounds and t.out_of_bounds_line is not None:
            out.append(Evidence(t.out_of_bounds_line, f"Out of bounds values : {t.out_of_bounds} FAILED"))
        return tuple(out)

    def _bandwidth_findings(self) -> tuple[Finding, ...]:
        """The findings of the bandwidth alone (see :attr:`findings`)."""
        if self.contradiction is not None:
            above = [r.measured_busbw_bytes_per_s - r.predicted_busbw_bytes_per_s for r in self.large_rows]
            return (Finding("log_contradiction", sum(above) / len(above), len(above),
                            self.contradiction.evidence),)  # fmt: skip
        explained: dict[str, float] = {}
        count: dict[str, int] = {}
        large = {r.size_bytes for r in self.large_rows}
        for r in self.flagged_rows:
            if r.size_bytes not in large or r.causes[0] in NOT_FAULTS:
                continue
            gap = max(0.0, r.predicted_busbw_bytes_per_s - r.measured_busbw_bytes_per_s)
            # A cause of known size (the MTU) explains its share; the first other cause the rest.
            for key in r.causes:
                share = self.bounded_share(key)
                if share is not None:
                    part = min(gap, share * r.predicted_busbw_bytes_per_s)
                    explained[key] = explained.get(key, 0.0) + part
                    count[key] = count.get(key, 0) + 1
                    gap -= part
            primary = next((k for k in r.causes if self.bounded_share(k) is None), None)
            if primary == "net_socket" and self.net is not None:  # sockets already in the model: the whole
                gap = self.without_transport(r.size_bytes) - r.measured_busbw_bytes_per_s  # NET/IB shortfall
            if primary is not None and gap > 0:
                explained[primary] = explained.get(primary, 0.0) + gap
                count[primary] = count.get(primary, 0) + 1
        shown = dict(self.shown_causes)
        if self.version_lines:
            shown["nccl_regression"] = self.version_lines
        order = sorted(explained, key=lambda k: (-explained[k] / count[k], list(CAUSES).index(k)))
        return tuple(Finding(k, explained[k] / count[k], count[k], shown.get(k, ()), self._reference(k))
                     for k in order)  # fmt: skip

    def _reference(self, cause: str) -> str:
        """What a finding's bandwidth is measured against (:attr:`Finding.reference`)."""
        socket = cause == "net_socket" and self.net is not None
        if cause == "above_links":
            return "the links' line rate"
        return "the model over the cluster's NICs" if socket else "the model"

    def describe(self, cause: str) -> str:
        """The text of ``cause`` for this run (:func:`describe_cause`)."""
        return describe_cause(cause, self)

    @property
    def latency_only(self) -> bool:
        """Whether no row could show the network's bandwidth: halving the bandwidth part of a row's
        predicted time (a collapse, :data:`_COLLAPSE`) moves it by ``s + (1 - s) / _COLLAPSE``, ``s`` the
        row's latency share, and a row shows it only when that takes its busbw more than the threshold below
        the model. A table of such rows alone meets the model whatever the network carries (16 H100 nodes,
        8 B .. 4 KiB: latency over 99 % of each row's time, NVIDIA/nccl#1469)."""
        slowest = 1.0 / (1.0 - self.threshold)
        return all(r.latency_share + (1.0 - r.latency_share) / _COLLAPSE <= slowest for r in self.rows)

    @property
    def verdict(self) -> str:
        """``"healthy"``, the cause of the first :attr:`findings`, or ``"inconclusive"`` on a machine not
        known to be the log's (:attr:`gpu_unmodelled`) or for a table no row of which could show the
        network's bandwidth (:attr:`latency_only`), whose run passed its own check."""
        found = self.findings
        if found:
            return found[0].cause
        return "inconclusive" if self.gpu_unmodelled or self.latency_only else "healthy"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict, SI units."""
        t = self.table
        return {
            "index": self.index,
            "title": t.title,
            "line": t.line,
            "collective": self.op,
            "n_ranks": self.n_ranks,
            "n_nodes": self.n_nodes,
            "gpu_name": t.gpu_name,
            "nccl_version": self.nccl_version,
            "network": self.info.network,
            "mnnvl": self.info.mnnvl,
            "mnnvl_clique": self.info.mnnvl_clique,
            "net_transport": self.net.key if self.net is not None else None,
            "evidence": [{"line": e.line, "text": e.text} for e in self.evidence],
            "cluster": self.spec.name,
            "settings": dict(self.settings.env),
            "algorithm": self.settings.algorithm,
            "exclude": list(self.settings.exclude),
            "assumptions": list(self.assumptions),
            "place": self.place,
            "threshold": self.threshold,
            "calibration": getattr(self.calibration, "name", None),
            "large_deviation": self.large_deviation,
            "verdict": self.verdict,
            "findings": [f.to_dict(self.describe(f.cause)) for f in self.findings],
            "rows": [r.to_dict() for r in self.rows],
            "dropped_rows": [{"size_bytes": size, "line": line} for size, line in self.dropped],
            "topology_line": self.topology_line,
            "out_of_order_rows": [
                {
                    "size_bytes": r.size_bytes,
                    "line": r.line,
                    "after_line": b.line,
                    "repeats_line": f.line if f is not None else None,
                }
                for r, b, f in self.out_of_order
            ],  # fmt: skip
        }


@dataclass(frozen=True)
class NcclTestsComparison:
    """Every compared table of one log, and the tables that could not be compared."""

    source: str | None
    tables: tuple[TableComparison, ...]
    skipped: tuple[tuple[int, int, str], ...] = ()  # (index, line, reason)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "source": self.source,
            "tables": [t.to_dict() for t in self.tables],
            "skipped": [{"index": i, "line": line, "reason": why} for i, line, why in self.skipped],
        }


def _log_version(table: PerfTable, info: NcclInfo) -> str | None:
    """The release a table's log carries: the banner, else the INFO lines, else one the title names
    (``NCCL 2.8.3``)."""
    return _printed_version(table, info) or _title_version(table)


def _printed_version(table: PerfTable, info: NcclInfo) -> str | None:
    """The release the run itself printed (nccl-tests' or rccl-tests' banner, the INFO lines): the one its
    tables are priced with. A title's version is a person's heading above the run, not read as the run's."""
    return table.nccl_version or info.version


def _title_version(table: PerfTable) -> str | None:
    found = _TITLE_VERSION.search(table.title or "")
    return found.group(1) if found else None


def _measure(row: PerfRow, place: str) -> tuple[PerfResult | None, PerfResult | None]:
    """The half of ``row`` to compare and the other one. The in-place half, asked for, is None where the row
    has none (never the out-of-place one in its stead); the out-of-place default falls back to the
    in-place half of a row printing only that."""
    if place == "in_place":
        return row.in_place, row.out_of_place
    if row.out_of_place is None:
        return row.in_place, None
    return row.out_of_place, row.in_place


def _failed_check(half: PerfResult | None, dtype: str, n_ranks: int, table: PerfTable | None = None) -> bool:
    """Whether the log's own check failed for ``half`` of a row of ``dtype`` on ``n_ranks`` ranks: a
    non-zero ``#wrong``, or an old-layout ``error`` above the tolerance of the tool that printed ``table``
    (:func:`error_tolerance`). Such a half timed a collective that did not do its work (an in-place alltoall
    msccl's nccl-tests fork never filled: ``1e+00`` beside thousands of GB/s, microsoft/msccl#48), so it is
    no measurement to judge the other by.

    >>> _failed_check(PerfResult(1e-6, 1.0, 1.0, error=1.0), "float", 16)
    True
    >>> _failed_check(PerfResult(1e-6, 1.0, 1.0, error=2e-6), "float", 16), _failed_check(None, "float", 2)
    (False, False)
    """
    if half is None:
        return False
    if half.wrong:
        return True
    return half.error is not None and half.error > error_tolerance(table, dtype, n_ranks)


def error_tolerance(table: PerfTable | None, dtype: str, n_ranks: int) -> float:
    """The largest ``error`` (``res``) the tool that printed ``table`` passes for a row of ``dtype``.

    NCCL 1's own tests print a ``bytes N ... res`` header and no ``# nThread`` parameter line
    (:data:`_NCCL1_TOLERANCE`: a reduction's half 5e-2, no ranks factor); nccl-tests 1.0.0 to 2.11.0
    (its ``bytes`` header has the parameter line) pass :data:`_ERROR_TOLERANCE` x (ranks - 1). A cut
    nccl-tests 1.0.0 log without its parameter line reads as NCCL 1's.

    >>> error_tolerance(None, "half", 8)
    0.07
    """
    if table is not None and table.bytes_header and table.parameters is None:
        per_type = _NCCL1_TOLERANCE if table.collective in _NCCL1_REDUCTIONS else {}
        return per_type.get(dtype, _ERROR_TOLERANCE_INTEGER)
    return _ERROR_TOLERANCE.get(dtype, _ERROR_TOLERANCE_INTEGER) * max(n_ranks - 1, 1)


def _communicator(op: str, spec: ClusterSpec, n_ranks: int, n_nodes: int) -> tuple[Communicator, str | None]:
    if n_nodes > 1 and n_ranks == n_nodes * spec.gpus_per_node:
        return Communicator.contiguous(spec, n_ranks), None
    if n_nodes > 1 and n_ranks % n_nodes == 0 and n_ranks // n_nodes < spec.gpus_per_node:
        per = n_ranks // n_nodes
        gpus = [node * spec.gpus_per_node + k for node in range(n_nodes) for k in range(per)]
        return Communicator.from_gpus(spec, gpus), f"{per} ranks on each of {n_nodes} nodes"
    return Communicator.contiguous(spec, n_ranks), None


def _engine(
    op: str, size: float, spec: ClusterSpec, comm: Communicator, settings: NcclSettings, **options: Any
) -> CollectiveResult:
    """:func:`formula_collective` for this run, priced with the tuning tables of the release it ran
    (:attr:`NcclSettings.nccl_version`, :func:`~aifabric.discovery.release.priced_release`). Every prediction
    of a comparison goes through here."""
    release = priced_release(settings.nccl_version, spec.accelerator_spec.collective_library)
    return formula_collective(op, size, spec, comm, nccl_version=release.version, **options)


def _predict(
    op: str,
    size: float,
    spec: ClusterSpec,
    comm: Communicator,
    settings: NcclSettings,
    calibration: Any | None,
) -> CollectiveResult:
    protocols = settings.protocols if set(settings.protocols) != set(PROTOCOLS) else (None,)
    best: CollectiveResult | None = None
    for protocol in protocols:
        result = _engine(
            op, size, spec, comm, settings, algorithm=settings.algorithm, protocol=protocol,
            exclude=settings.exclude, calibration=calibration, env=settings.engine_env or None,
        )  # fmt: skip
        if best is None or result.time_s < best.time_s:
            best = result
    assert best is not None
    return best


def _calibrated(
    op: str,
    size: float,
    spec: ClusterSpec,
    comm: Communicator,
    settings: NcclSettings,
    calibration: Any | None,
    net: TransportSpec | None,
    devices: int | None = None,
) -> CollectiveResult:
    """The prediction at ``size`` with ``calibration`` applied only to the path it was fitted on, and the
    network transport ``net`` over ``devices`` interfaces (:func:`with_transport`).

    A profile that records the algorithm/protocol of each knob (:attr:`Calibration.fitted_paths`) moves a
    prediction only where NCCL's model, without the profile, runs one of them (:func:`for_path`), and then
    on that same path: a Ring-fitted ``intra_scale`` leaves NVLS rows as the model has them. Other profiles
    apply to every prediction.
    """
    if not isinstance(calibration, Calibration) or not calibration.fitted_paths:
        return _predict(op, size, spec, comm, settings, with_transport(calibration, net, spec, devices))
    base = _predict(op, size, spec, comm, settings, with_transport(None, net, spec, devices))
    own = for_path(calibration, f"{base.algorithm}/{base.protocol}")
    if own is None:
        return base
    pinned = dataclasses.replace(settings, algorithm=base.algorithm, protocols=(base.protocol,))
    return _predict(op, size, spec, comm, pinned, with_transport(own, net, spec, devices))


def _check_algorithm(op: str, spec: ClusterSpec, comm: Communicator, settings: NcclSettings) -> NcclSettings:
    """Drop a forced algorithm the collective cannot use (NCCL falls back the same way)."""
    if settings.algorithm is None:
        return settings
    try:
        _engine(op, 1 << 20, spec, comm, settings, algorithm=settings.algorithm)
    except ValueError:
        note = (
            f"{settings.algorithm} does not apply to {op}: NCCL falls back to its default; so does the model"
        )
        return dataclasses.replace(settings, algorithm=None, notes=(*settings.notes, note))
    return settings


def _engine_env(op: str, spec: ClusterSpec, comm: Communicator, settings: NcclSettings) -> NcclSettings:
    """``settings`` whose engine variables (:attr:`NcclSettings.engine_env`: ``NCCL_P2P_DISABLE``,
    ``NCCL_COLLNET_ENABLE``...) the engine takes on this cluster, one by one; a variable it refuses (CollNet
    without SHARP switches, a bad value) is left out with the engine's reason in a note."""
    env = {name: value for name, value in settings.env.items() if name not in settings.engine_env}
    notes = list(settings.notes)
    for name, value in settings.engine_env.items():
        trial = {**{k: v for k, v in env.items() if k in settings.engine_env}, name: value}
        try:
            _engine(op, 1 << 20, spec, comm, settings, algorithm=settings.algorithm, exclude=settings.exclude,
                    env=trial)  # fmt: skip
        except ValueError as err:  # ConfigError included: one line naming the variable
            notes.append(f"{name}={value}: not applied to the prediction ({err})")
            continue
        env[name] = value
        notes.append(f"{name}={value}: predicted with it")
    return dataclasses.replace(settings, env=env, notes=tuple(notes))


def _with_sources(settings: NcclSettings, sources: dict[str, Evidence]) -> NcclSettings:
    """``settings`` with a note naming the line each variable that changes the prediction was read from."""
    if not sources:
        return settings
    read = ", ".join(
        f"{name} line {ev.line}" for name, ev in sorted(sources.items(), key=lambda i: i[1].line)
    )
    note = f"read from the log: {read}"
    return dataclasses.replace(settings, notes=(*settings.notes, note))


def _causes(
    row: RowComparison, prev: RowComparison | None, nxt: RowComparison | None, ctx: TableComparison
) -> tuple[str, ...]:
    """Likely causes of a flagged row, most likely first (see :data:`CAUSES`)."""
    if row.outlier_ratio > OUTLIER_RATIO:
        return ("outlier",)
    if prev is not None and nxt is not None and min(prev.deviation, nxt.deviation) - row.deviation > 0.25:
        return ("dip",)
    multi = ctx.n_nodes > 1
    if row.latency_share > 0.5:
        if row.deviation > -0.5:
            return ("latency_model",)
        return ("latency_net",) if multi else ("latency_local",)
    large = _bandwidth_bound(row)
    # A mid-size row ramps up to the plateau the run reaches at larger sizes. A run whose largest rows are
    # themselves mid-size shows no plateau to ramp to: one of those rows as far below the model as a
    # collapse (_COLLAPSE: 2x, beyond the tens of per cent the ramp explains, 383 of 474 GB/s at 128 MB,
    # NVIDIA/nccl-tests #290) gets a plateau's causes, as the verdict stands on it.
    collapsed = 1.0 + row.deviation < _COLLAPSE and row.size_bytes in {r.size_bytes for r in ctx.large_rows}
    if not large and not collapsed:
        settings = (
            ("network_settings",)
            if multi and 1.0 + row.deviation >= _SHORTFALL["network_settings"][0]
            else ()
        )
        return ("ramp", *settings)
    known = ("nccl_regression",) if ctx.regression is not None else ()
    if not multi:
        return (*known, *_node_causes(row, ctx))
    return _plateau_network_causes(row, ctx, known)


def _plateau_network_causes(
    row: RowComparison, ctx: TableComparison, known: tuple[str, ...]
) -> tuple[str, ...]:
    """Causes of a multi-node plateau row the log supports, most likely first.

    The causes NCCL's INFO lines show and a known regression (``known``) come first; then the causes the
    shortfall alone points at (:func:`_network_causes`, less those the log contradicts), but only when the
    numbers single one out -- or a VM is named in the title or by ``NCCL_TOPO_FILE`` -- since several
    candidates that fit equally are a guess the log does not support; a cause of bounded size (the MTU)
    comes last, explaining its share. With nothing supported, ``unexplained_shortfall``; network settings
    (adaptive routing, QPs per connection, CTAs), which no log line shows, are never named on the numbers
    alone: they follow ``unexplained_shortfall`` as an alternative where the shortfall fits them.
    """
    found = tuple(key for key, _ in ctx.shown_causes)
    bounded = tuple(k for k in found if ctx.bounded_share(k) is not None)
    found = (*known, *(k for k in found if k not in bounded))
    vm_hint = bool("NCCL_TOPO_FILE" in ctx.settings.env or re.search(r"\bVMs?\b", ctx.table.title or ""))
    ruled_out = contradicted_causes(ctx.info)
    fits = tuple(k for k in _network_causes(1.0 + row.deviation, vm_hint) if k not in ruled_out)
    supported: tuple[str, ...] = (
        ("vm_pcie",) if vm_hint and "vm_pcie" in fits else fits if len(fits) == 1 else ()
    )
    # no log line shows network settings (adaptive routing, QPs, CTAs) off: they stay an alternative only
    settings = tuple(k for k in supported if k == "network_settings")
    supported = tuple(k for k in supported if k != "network_settings")
    named = (*found, *(k for k in supported if k not in found))
    return (*(named or ("unexplained_shortfall", *settings)), *bounded)


def _node_causes(row: RowComparison, ctx: TableComparison) -> tuple[str, ...]:
    """Single-node plateau causes (PCIe root, NVLS off, NVLink degraded), less those the log rules out."""
    if any(key == "no_p2p" for key, _ in evidence_causes(ctx.info, 1)):
        return ("no_p2p",)
    if ctx.spec.scale_up.kind == "pcie":
        return ("pcie_root",)
    if (
        ctx.op == "all_reduce"
        and row.predicted.algorithm == Algorithm.NVLS
        and "nvls_off" not in contradicted_causes(ctx.info)
    ):
        ring = _engine(ctx.op, row.size_bytes, ctx.spec, ctx.comm, ctx.settings, algorithm=Algorithm.RING,
                       calibration=ctx.calibration)  # fmt: skip
        # NVLS off leaves the ring figure: it explains a row at that figure (within the comparison's
        # threshold), not one far below it (NCCL maintainer: ~370 GB/s ring vs ~480 NVLS on H100, #212, #309)
        ring_bw = ring.busbw_bytes_per_s
        if (1.0 - ctx.threshold) * ring_bw <= row.measured_busbw_bytes_per_s <= 1.08 * ring_bw:
            return ("nvls_off", "nvlink_degraded")
    return ("nvlink_degraded",)


def _network_causes(ratio: float, vm_hint: bool = False) -> tuple[str, ...]:
    """Multi-node plateau causes that fit a measured/predicted busbw ``ratio``, best fit first.

    Each cause is offered only inside the range of shortfalls our sources report for it
    (:data:`_SHORTFALL`) and ranked by how far ``ratio`` is from its typical value (log scale); a VM in the
    title or an ``NCCL_TOPO_FILE`` makes the VM cause count as the better fit. Outside every range, none:
    a shortfall no source reports for any of them (between 0.6 and 0.8 of the model) is not blamed on the
    nearest.

    >>> _network_causes(0.82), _network_causes(0.4), _network_causes(0.15, vm_hint=True)[0]
    (('network_settings',), ('no_gdr', 'acs_iommu'), 'vm_pcie')
    >>> _network_causes(0.67)
    ()
    """
    ratio = max(ratio, 1e-6)

    def distance(key: str) -> float:
        typical = _SHORTFALL[key][2]
        penalty = 0.0 if key != "vm_pcie" or vm_hint else math.log(2.0)
        return abs(math.log(ratio / typical)) + penalty

    order = list(_SHORTFALL)
    inside = [k for k in order if _SHORTFALL[k][0] <= ratio <= _SHORTFALL[k][1]]
    return tuple(sorted(inside, key=lambda k: (distance(k), order.index(k))))


def _row_notes(row: RowComparison, ctx: TableComparison) -> tuple[str, ...]:
    notes = []
    if ctx.n_nodes == 2 and ctx.op == "all_reduce" and ctx.settings.algorithm != Algorithm.RING:
        limit = ctx.comm.min_nic_gpus_per_domain * ctx.spec.nic_effective_bytes_per_s  # the node's NICs
        if row.measured_busbw_bytes_per_s > 1.02 * limit:
            notes.append(NOTES["two_node_tree"].format(limit=limit / 1e9))
    bound = ctx.bound
    if bound is not None and row.measured_busbw_bytes_per_s > bound.busbw_bytes_per_s:
        notes.append(NOTES["above_links"].format(bound=bound.describe()))
    elif row.deviation > ctx.threshold and row.outlier_ratio <= OUTLIER_RATIO:
        notes.append(NOTES["above"])
    return tuple(notes)


def compare_table(
    table: PerfTable,
    *,
    index: int = 1,
    spec: ClusterSpec | None = None,
    settings: NcclSettings | None = None,
    assumptions: Sequence[str] = (),
    calibration: Any | None = None,
    threshold: float = 0.15,
    place: str = "out_of_place",
    info: NcclInfo | None = None,
    version_lines: tuple[Evidence, ...] = (),
) -> TableComparison:
    """Predict every row of ``table`` and compare (see the module docstring).

    Parameters
    ----------
    table : PerfTable
        A parsed table with rows, a collective and a rank count.
    index : int
        1-based position of the table in its log (for messages).
    spec : ClusterSpec, optional
        The cluster, sized for the run (default: :func:`infer_cluster`).
    settings : NcclSettings, optional
        The run's NCCL settings (default: none). Its transport, CollNet, channel and QP variables
        (:attr:`NcclSettings.engine_env`: ``NCCL_P2P_DISABLE``, ``NCCL_COLLNET_ENABLE``...) go to the engine
        as ``env=``; one the engine refuses on this cluster is left out, with its reason in the notes. Its
        ``nccl_version`` (default: the one ``table`` or ``info`` carries) chooses the tuning tables
        (:func:`~aifabric.discovery.release.priced_release`), said in the assumptions.
    assumptions : sequence of str
        Notes on how ``spec`` was chosen, kept on the result.
    calibration : Calibration, optional
        Applied to every prediction (:mod:`aifabric.discovery.calibrate`).
    threshold : float
        Flag rows more than this fraction below the prediction (0.15 = 15 %). Must be in (0, 1).
    place : {"out_of_place", "in_place"}
        Which half of each row to compare.
    info : NcclInfo, optional
        The run's ``NCCL INFO`` lines (:func:`parse_nccl_info`): NVLS unavailable rules NVLS out, a network
        other than NET/IB is predicted with its transport (:mod:`aifabric.discovery.evidence`), and the
        causes follow the evidence.
    version_lines : tuple of Evidence
        The log lines that give the NCCL version (the evidence of a known regression).

    Returns
    -------
    TableComparison

    Raises
    ------
    ParseError
        If the table has no rows, its collective cannot be told or is not modelled.
    ValueError
        If ``threshold`` or ``place`` is invalid.
    """
    if not 0 < threshold < 1:
        raise ValueError(f"threshold: must be between 0 and 1 (a fraction), got {threshold!r}")
    if place not in ("out_of_place", "in_place"):
        raise ValueError(f"place: use out_of_place or in_place, got {place!r}")
    op = _engine_op(table)
    if not table.rows:
        raise ParseError("the table has no rows to compare", line=table.line, source=table.source)
    table, capped = _capped(table)
    spec, comm, settings, info, net, notes = _prepare(
        table, op, spec, settings, info, (*assumptions, *capped)
    )
    devices = transport_devices(info, net)
    rows, dropped = _measured_rows(table, op, spec, comm, settings, calibration, net, devices, place)
    ctx = TableComparison(index, table, op, spec, comm, settings, tuple(notes), tuple(rows), place, threshold,
                          calibration, tuple(dropped), info, net, version_lines)  # fmt: skip
    return dataclasses.replace(ctx, rows=_diagnosed_rows(ctx))


def _capped(table: PerfTable) -> tuple[PerfTable, tuple[str, ...]]:
    """``table`` cut to its first :data:`MAX_ROWS_MODELLED` rows, and a note naming the rows left out."""
    if len(table.rows) <= MAX_ROWS_MODELLED:
        return table, ()
    rest = table.rows[MAX_ROWS_MODELLED:]
    note = (
        f"{len(table.rows):,} rows: the first {MAX_ROWS_MODELLED:,} modelled, the other {len(rest):,} "
        f"(lines {rest[0].line}-{rest[-1].line}) skipped (more than a sweep prints)"
    )
    return dataclasses.replace(table, rows=table.rows[:MAX_ROWS_MODELLED]), (note,)


def _prepare(
    table: PerfTable,
    op: str,
    spec: ClusterSpec | None,
    settings: NcclSettings | None,
    info: NcclInfo | None,
    assumptions: Sequence[str],
) -> tuple[ClusterSpec, Communicator, NcclSettings, NcclInfo, TransportSpec | None, list[str]]:
    """The cluster (inferred when not given), communicator, settings the engine takes (with the release
    whose tables price the table: the one ``settings`` states, else the log's), INFO lines and network
    transport a table is predicted with, and the notes on each choice."""
    notes = list(assumptions)
    if spec is None:
        spec, inferred = infer_cluster(table, intra=info.lines("intra") if info is not None else ())
        notes.extend(inferred)
    n_ranks = table.n_ranks or spec.n_gpus
    n_nodes = table.n_nodes or max(1, -(-n_ranks // spec.gpus_per_node))
    comm, comm_note = _communicator(op, spec, n_ranks, n_nodes)
    if table.ranks_per_process is not None:  # MSCCL needs a process per rank (collectives.msccl)
        comm = comm.in_processes_of(table.ranks_per_process)  # a process runs on one host: <= ranks_per_node
    if comm_note:
        notes.append(comm_note)
    info = info if info is not None else NcclInfo()
    settings = settings or NcclSettings()
    settings = dataclasses.replace(
        settings, nccl_version=settings.nccl_version or _printed_version(table, info)
    )
    release = _release_note(settings.nccl_version, spec, table)
    notes.extend((release,) if release else ())
    settings = _check_algorithm(op, spec, comm, apply_to_settings(settings, info))
    settings = _engine_env(op, spec, comm, settings)
    net = net_transport(info) if n_nodes > 1 else None
    if net is not None:
        notes.append(_transport_note(net, info, spec))
    notes.extend(note for note in (info.nvlink_domain_note,) if note is not None)
    return spec, comm, settings, info, net, notes


def _release_note(version: str | None, spec: ClusterSpec, table: PerfTable) -> str | None:
    """Which tuning tables price the table (:func:`priced_release`); None for a run that states no release
    and whose title names none (the newest recorded tables, the engine's default, are no guess about it).
    A release only the title names is said, and not read as the run's."""
    titled = _title_version(table) if version is None else None
    if version is None and titled is None:
        return None
    note = priced_release(version, spec.accelerator_spec.collective_library).note
    return note if titled is None else f"{note}; its title names NCCL {titled}, a heading, not the run's"


def _transport_note(net: TransportSpec, info: NcclInfo, spec: ClusterSpec) -> str:
    """How the network transport the INFO lines name is predicted, in words."""
    note = (f"the network ran over {net.nccl_name} ({info.lines('network')[0]}): predicted with {net.name}, "
            f"{net.payload_share:.2f} of line rate")  # fmt: skip
    devices = transport_devices(info, net)
    if devices is not None and devices < spec.nics_per_node:
        names = ", ".join(info.net_devices)
        note += (f", over the {devices} interface(s) NCCL listed ({names}, {info.lines('net_devices')[0]}) "
                 f"instead of the node's {spec.nics_per_node} NICs, each at the NIC's line rate (an upper "
                 "bound: the log does not give the interface's speed)")  # fmt: skip
    return note


def _measured_rows(
    table: PerfTable,
    op: str,
    spec: ClusterSpec,
    comm: Communicator,
    settings: NcclSettings,
    calibration: Any | None,
    net: TransportSpec | None,
    devices: int | None,
    place: str,
) -> tuple[list[RowComparison], list[tuple[int, int]]]:
    """Each row with a positive, finite time, predicted and compared (not yet diagnosed), and the
    ``(size_bytes, line)`` of the rows dropped.

    The measured busbw is ``size / time * busbw_factor(op, n_ranks)`` and the deviation
    ``predicted time / measured time - 1``.

    Raises
    ------
    ParseError
        If no row has a positive time.
    """
    rows: list[RowComparison] = []
    dropped: list[tuple[int, int]] = []
    predictions: dict[int, CollectiveResult] = {}
    ranks = table.n_ranks or spec.n_gpus
    factor = busbw_factor(op, ranks)
    for row in table.rows:
        measured, other = _measure(row, place)
        if (
            row.size_bytes == 0
            or measured is None
            or not measured.time_s > 0
            or not math.isfinite(measured.time_s)
        ):
            dropped.append((row.size_bytes, row.line))
            continue
        predicted = predictions.get(row.size_bytes)
        if predicted is None:  # one model evaluation per size: a log may repeat a size many times
            predicted = predictions[row.size_bytes] = _calibrated(op, row.size_bytes, spec, comm, settings,
                                                                  calibration, net, devices)  # fmt: skip
        reference = None if other is None or _failed_check(other, row.dtype, ranks, table) else other.time_s
        rows.append(
            RowComparison(
                size_bytes=row.size_bytes,
                line=row.line,
                measured_time_s=measured.time_s,
                other_time_s=reference,
                measured_busbw_bytes_per_s=row.size_bytes / measured.time_s * factor,
                predicted=predicted,
                deviation=predicted.time_s / measured.time_s - 1.0,
            )
        )
    if place == "in_place" and all(row.in_place is None for row in table.rows):
        raise ParseError(
            "--place in-place: no row of the table prints an in-place time (use --place out-of-place)",
            line=table.line,
            source=table.source,
        )
    if not rows:
        raise ParseError("no row has a positive time to compare", line=table.line, source=table.source)
    return rows, dropped


def _diagnosed_rows(ctx: TableComparison) -> tuple[RowComparison, ...]:
    """The rows of ``ctx`` with their causes, FLAG and notes.

    A row more than the threshold below the model gets its causes (:func:`_causes`); a mid-size row as far
    below the model as a collapsed plateau (:func:`_plateau_fault`) gets the plateau's fault first.
    """
    rows, threshold = ctx.rows, ctx.threshold
    algorithms = _default_algorithms(ctx)
    below = {r.size_bytes: r for r in rows if r.deviation < -threshold}  # one row per size: -d all repeats
    ranges = {size: _default_range(r, ctx, algorithms) for size, r in below.items()}
    inside = {size for size, span in ranges.items() if span is not None}
    all_causes = [
        _causes(r, rows[i - 1] if i > 0 else None, rows[i + 1] if i + 1 < len(rows) else None, ctx)
        if r.deviation < -threshold
        else ()
        for i, r in enumerate(rows)
    ]
    all_causes = [  # a figure NCCL's default explains: that first, the other suspects after it
        ("nccl_default", *c[1:]) if r.size_bytes in inside and c[0] not in NOT_FAULTS else c
        for r, c in zip(rows, all_causes, strict=True)
    ]
    all_causes = _type_bound(rows, all_causes, ctx)
    plateau = _plateau_fault(list(rows), all_causes, ctx)
    large = {r.size_bytes for r in ctx.large_rows}
    final = []
    for i, cmp_row in enumerate(rows):
        causes = all_causes[i]
        if plateau is not None and causes[:1] == ("ramp",) and cmp_row.deviation <= plateau[1] + threshold:
            causes = (plateau[0], *causes)  # as far below the model as the plateau: the plateau's fault
        # FLAG only a row that carries a diagnosis the verdict stands on (see :func:`_is_fault`).
        flagged = _is_fault(cmp_row.size_bytes in large, causes, plateau is not None)
        row_notes = _row_notes(cmp_row, ctx)
        if causes[:1] == ("nccl_default",):
            row_notes = (*row_notes, NOTES["default_range"].format(span=ranges[cmp_row.size_bytes]))
        if causes and not flagged:
            row_notes = (*row_notes, _below_note(causes[0], ctx))
        final.append(
            RowComparison(
                cmp_row.size_bytes,
                cmp_row.line,
                cmp_row.measured_time_s,
                cmp_row.other_time_s,
                cmp_row.measured_busbw_bytes_per_s,
                cmp_row.predicted,
                cmp_row.deviation,
                flagged,
                causes,
                row_notes,
            )  # fmt: skip
        )
    return tuple(final)


def _type_bound(
    rows: tuple[RowComparison, ...], causes: list[tuple[str, ...]], ctx: TableComparison
) -> list[tuple[str, ...]]:
    """``causes`` with ``type_bound`` first for each row below the model whose size another data type of
    the table (``-d all``) moved within the threshold: the same run, links and size, so the bytes on the
    wire are not what is slow (:data:`CAUSES`). Artefacts and model limits keep their own cause."""
    dtype = {row.line: row.dtype for row in ctx.table.rows}
    fine: dict[int, set[str | None]] = {}  # size -> the data types that moved it within the threshold
    for r in rows:
        if r.deviation >= -ctx.threshold:
            fine.setdefault(r.size_bytes, set()).add(dtype.get(r.line))
    out = []
    for r, c in zip(rows, causes, strict=True):
        other = bool(fine.get(r.size_bytes, set()) - {dtype.get(r.line)})
        out.append(("type_bound", *c) if c and c[0] not in NOT_FAULTS and other else c)
    return out


def _default_algorithms(ctx: TableComparison) -> set[str]:
    """The algorithms the model picks for ``ctx``'s bandwidth-bound rows (Simple protocol, latency at most
    half the time), those between which NCCL's tuner switches (see :func:`_default_range`)."""
    return {
        r.predicted.algorithm for r in ctx.rows if r.latency_share <= 0.5 and r.predicted.protocol == "Simple"
    }


def _default_range(row: RowComparison, ctx: TableComparison, algorithms: set[str]) -> str | None:
    """The model's range for NCCL's default at ``row``'s size, as text, when the measured busbw lies in it
    (within the threshold below its low end); None otherwise or when ``NCCL_ALGO`` forces one algorithm.

    With NCCL's defaults the model predicts the fastest algorithm; the algorithms it picks for the table's
    bandwidth-bound rows (Simple protocol, latency at most half the time: :func:`_causes` calls a row with
    more latency-bound) are those NCCL's tuner switches between there, and the
    size at which it switches depends on the NCCL release's tuning (case_03 T5, NCCL 2.26.2 on 4 H100 nodes:
    325 GB/s where the case's expected default range is ~320-366 GB/s and the model's ring gives 390,
    NVLSTree 362; NVIDIA/nccl-tests #309). A figure within that range is not a fault of the fabric.
    """
    if ctx.settings.algorithm is not None:
        return None
    if len(algorithms) < 2 or row.predicted.algorithm not in algorithms:
        return None
    busbw = {str(row.predicted.algorithm): row.predicted_busbw_bytes_per_s}
    for algorithm in algorithms - {row.predicted.algorithm}:
        forced = dataclasses.replace(ctx.settings, algorithm=algorithm)
        busbw[str(algorithm)] = (
            dataclasses.replace(ctx, settings=forced).predict(row.size_bytes).busbw_bytes_per_s
        )
    low = min(busbw.values())
    if row.measured_busbw_bytes_per_s < (1.0 - ctx.threshold) * low:
        return None
    return " .. ".join(f"{a} {b / 1e9:.0f}" for a, b in sorted(busbw.items(), key=lambda i: i[1])) + " GB/s"


def _is_fault(large: bool, causes: tuple[str, ...], collapse: bool) -> bool:
    """Whether a row below the threshold is FLAGged: its first cause is a fault, not an artefact or a model
    limit (:data:`NOT_FAULTS`), and the verdict stands on it -- a large-message row (what
    :attr:`TableComparison.findings` counts) or any row of a run whose plateau collapsed. So a healthy
    verdict has no FLAG row and a FLAG row always comes with a finding."""
    return bool(causes) and causes[0] not in NOT_FAULTS and (large or collapse)


def _below_note(cause: str, ctx: TableComparison) -> str:
    """The note of a row below the threshold that is not a fault of the verdict (see :func:`_is_fault`)."""
    return f"below the model, not a finding: {describe_cause(cause, ctx)}"


def _plateau_fault(
    rows: list[RowComparison], causes: list[tuple[str, ...]], ctx: TableComparison
) -> tuple[str, float] | None:
    """The fault the flagged large-message rows point at when it is a collapse, and their median deviation;
    None otherwise (healthy, only artefacts and model limits, or a plateau within the network-settings
    range).

    A collapse is a plateau below :data:`_COLLAPSE` of the model: the 2-8x losses of GDR off, sockets or a
    VM, far beyond the ~20 % network settings explain (:data:`_SHORTFALL`).
    A mid-size row as far below the model as such a plateau (within the threshold) is given its fault
    first: the ramp explains mid-size rows some tens of per cent below a bandwidth model (383 of 474 GB/s at
    128 MB on one DGX H100, NVIDIA/nccl-tests #290), not the collapse the plateau shows.
    """
    large = {r.size_bytes for r in ctx.large_rows}
    faults = [
        (c[0], r.deviation)
        for r, c in zip(rows, causes, strict=True)
        if r.size_bytes in large and c and c[0] not in NOT_FAULTS
    ]
    if not faults:
        return None
    devs = sorted(d for _, d in faults)
    median = devs[len(devs) // 2]
    if 1.0 + median >= _COLLAPSE:
        return None
    return _most_rows_fault(rows, causes, large), median


def _most_rows_fault(rows: list[RowComparison], causes: list[tuple[str, ...]], large: set[int]) -> str:
    """The fault first among the most large-message rows; a tie goes to the fault of the largest such row,
    the most bandwidth-bound one (its latency share is the least), so the same table gives the same fault
    in every process."""
    votes: dict[str, tuple[int, int]] = {}  # fault -> (rows, largest size)
    for r, c in zip(rows, causes, strict=True):
        if r.size_bytes in large and c and c[0] not in NOT_FAULTS:
            n, size = votes.get(c[0], (0, 0))
            votes[c[0]] = (n + 1, max(size, r.size_bytes))
    return max(votes, key=lambda k: votes[k])


def _engine_op(table: PerfTable) -> str:
    odd = odd_size_row(list(table.rows)) if table.collective is None else None
    if odd is not None:
        row, ratio, common = odd
        raise ParseError(
            f"size {row.size_bytes} and count {row.count} ({row.dtype}): size / (count x type size) is "
            f"{ratio:g} where every other row gives {common} (a repeated or mistyped size or count?)",
            line=row.line,
            source=table.source,
        )
    if table.collective is None:
        params = tuple(name for name in table.columns if name in ("size", "count", "type", "redop", "root"))
        fits = fitting_collectives(list(table.rows), params, old_layout="error" in table.columns)
        which = (
            f"its columns fit {', '.join(fits[:-1])} and {fits[-1]}" if len(fits) > 1 else "no binary named"
        )
        raise ParseError(
            f"cannot tell the collective of this table from the log ({which}); give --collective",
            line=table.line,
            source=table.source,
        )
    op = _OPS.get(table.collective)
    if op is None:
        known = ", ".join(k for k, v in _OPS.items() if v)
        raise ParseError(
            f"the model has no {table.collective} collective (it compares {known})",
            line=table.line,
            source=table.source,
        )
    return Collective.parse(op).value


# -- the front door ------------------------------------------------------------------------------------------


def _regions(lines: list[str], tables: Sequence[PerfTable]) -> list[tuple[int, int]]:
    """``[start, stop)`` line indices between the previous table and each table's header."""
    out = []
    start = 0
    for t in tables:
        out.append((start, max(start, t.line - 1)))
        start = t.rows[-1].line if t.rows else t.line  # 1-based line of the last row = index after it
    return out


def compare_nccl_tests(
    text: str | bytes,
    *,
    source: str | None = None,
    cluster: ClusterSpec | str | Path | None = None,
    gpu: str | None = None,
    nic_speed: str | None = None,
    tables: Sequence[int] | None = None,
    collective: str | None = None,
    algorithm: str | None = None,
    protocol: str | None = None,
    no_nvls: bool = False,
    calibration: Any | None = None,
    threshold: float = 0.15,
    place: str = "out_of_place",
    ranks: int | None = None,
    nodes: int | None = None,
    gpus_per_node: int | None = None,
    nccl_version: str | None = None,
) -> NcclTestsComparison:
    """Compare every table of an nccl-tests log (or the ``tables`` asked for) with the formula engine.

    Parameters
    ----------
    text : str or bytes
        The log, possibly several runs inside commentary.
    source : str, optional
        File name, used in messages.
    cluster : ClusterSpec, str or Path, optional
        The cluster (resized to each table's nodes); default: inferred from each table
        (:func:`infer_cluster`).
    gpu, nic_speed : str, optional
        For the inferred cluster: accelerator catalogue key and NIC speed per GPU.
    tables : sequence of int, optional
        1-based table numbers to compare (default: every table with rows).
    collective : str, optional
        The collective, for logs that do not say (overrides the log).
    algorithm, protocol : str, optional
        Force an engine algorithm / protocol (override the log's ``NCCL_ALGO`` / ``NCCL_PROTO``).
    no_nvls : bool
        Exclude NVLS and NVLSTree (as ``NCCL_NVLS_ENABLE=0``) whatever the log says.
    calibration : Calibration, optional
        Applied to every prediction.
    threshold : float
        Flag rows more than this fraction below the prediction.
    place : {"out_of_place", "in_place"}
        Which half of each row to compare.
    ranks, nodes, gpus_per_node : int, optional
        The rank and node counts where the log does not give them; refused where it gives others
        (:func:`~aifabric.discovery.counts.resolve_counts`).
    nccl_version : str, optional
        The NCCL (or RCCL) release the run used, for a log that carries none (``2.21.5``); refused where the
        log states another. Each table is priced with its release's tuning tables
        (:mod:`aifabric.discovery.release`); without one, the newest recorded.

    Returns
    -------
    NcclTestsComparison

    Raises
    ------
    ParseError
        If the log holds no table, a table asked for has no rows, or a compared table's collective cannot be
        told or is not modelled; the error names the line.
    ValueError
        If a table number is out of range or an option is invalid.
    ConfigError
        If the cluster is invalid or too small for a table's ranks.

    Examples
    --------
    >>> log = '''$ ./all_reduce_perf -b 4G -e 4G -g 2
    ... NCCL version 2.26.2+cuda12.8
    ... #  Rank  0 Group  0 Pid 1 on host-a device  0 [0x18] NVIDIA H100 80GB HBM3
    ... #  Rank  1 Group  0 Pid 1 on host-a device  1 [0x6d] NVIDIA H100 80GB HBM3
    ... #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
    ...   4294967296    1073741824     float     sum      -1    11800  363.98  363.98      0    11790  364.29  364.29      0
    ... '''
    >>> t = compare_nccl_tests(log, no_nvls=True).tables[0]
    >>> t.op, t.n_ranks, t.rows[0].predicted.algorithm, round(t.rows[0].deviation, 3)
    ('all_reduce', 2, 'ring', -0.017)
    """  # noqa: E501  (verbatim nccl-tests rows in the doctest)
    _check_options(cluster, gpu, nic_speed, gpus_per_node, algorithm, no_nvls)
    if nccl_version is not None:
        check_stated_version(nccl_version)
    text = nonempty_text(text, source, "the log is empty")
    if looks_like_json(text):  # nccl-tests -J: its settings and tables are those of the text it stands for
        text = json_log_text(text, source)
    parsed = _parse_tables(text, source, collective)
    options = _TableOptions(cluster, gpu, nic_speed, algorithm, protocol, no_nvls, calibration, threshold,
                            place, ranks, nodes, gpus_per_node, nccl_version)  # fmt: skip
    compared, skipped = _compare_tables(parsed, text.split("\n"), tables, options, source)
    _check_used(nic_speed, compared)
    topology = _topology_line(text, source)
    if topology is not None:
        compared = [dataclasses.replace(c, topology_line=topology) for c in compared]
    return NcclTestsComparison(source, tuple(compared), tuple(skipped))


def _topology_line(text: str, source: str | None) -> int | None:
    """Line of the first ``nvidia-smi topo -m`` matrix in the log's text (:meth:`TopoMatrix.from_text`), or
    None when there is none or it cannot be read."""
    if "GPU0" not in text:  # every matrix header starts with it
        return None
    try:
        return TopoMatrix.from_text(text, source).line
    except ParseError:
        return None


@dataclass(frozen=True)
class _TableOptions:
    """The options of :func:`compare_nccl_tests` that apply to each table it compares."""

    cluster: ClusterSpec | str | Path | None
    gpu: str | None
    nic_speed: str | None
    algorithm: str | None
    protocol: str | None
    no_nvls: bool
    calibration: Any | None
    threshold: float
    place: str
    ranks: int | None
    nodes: int | None
    gpus_per_node: int | None
    nccl_version: str | None = None


def _parse_tables(text: str, source: str | None, collective: str | None) -> list[PerfTable]:
    """The tables of a log; when none is found, the error says how far the parser read."""
    try:
        return parse_pasted(text, source, collective=collective)
    except ParseError as err:
        if err.line is None:  # nothing found: say how far the parser read
            n = line_count(text)
            raise ParseError(f"{_bare(err)} (read to the end, {n} lines)", line=n, source=source) from err
        raise


def _compare_tables(
    parsed: Sequence[PerfTable],
    lines: list[str],
    tables: Sequence[int] | None,
    options: _TableOptions,
    source: str | None,
) -> tuple[list[TableComparison], list[tuple[int, int, str]]]:
    """Compare the tables asked for (default: all), and list the footer-only tables skipped.

    Raises
    ------
    ValueError
        If a table number is out of range.
    ParseError
        If a table asked for has no rows, or no table has rows.
    """
    regions = _regions(lines, parsed)
    wanted = list(range(1, len(parsed) + 1)) if not tables else list(dict.fromkeys(tables))  # once each
    for k in wanted:
        if not 1 <= k <= len(parsed):
            raise ValueError(f"--table: {k} is out of range; the log has {len(parsed)} table(s)")
    compared: list[TableComparison] = []
    skipped: list[tuple[int, int, str]] = []
    for k in wanted:
        table = parsed[k - 1]
        if not tables and len(compared) >= MAX_TABLES_COMPARED:
            skipped.append(
                (k, table.line, f"beyond the first {MAX_TABLES_COMPARED} tables compared (--table {k})")
            )
            continue
        reason = _not_comparable(table, options)
        if reason is not None:
            if tables:
                raise ParseError(f"table {k}: {reason}", line=table.line, source=source)
            skipped.append((k, table.line, reason))
            continue
        compared.append(_compare_one(k, table, lines, regions[k - 1], options))
    if not compared:
        first = skipped[0][1] if skipped else None
        reasons = "; ".join(dict.fromkeys(reason for _, _, reason in skipped))
        raise ParseError(f"no table to compare ({reasons})", line=first, source=source)
    return compared, skipped


def _not_comparable(table: PerfTable, options: _TableOptions) -> str | None:
    """Why a table cannot be compared (no rows; one rank), or None."""
    if not table.rows and table.cut_line is not None:
        return f"no rows (its only row was cut mid-line at line {table.cut_line})"
    if not table.rows:
        return "no rows (only its footer was published)"
    if (options.ranks or table.n_ranks) == 1:
        return "one rank: nothing crosses a link, busbw is 0 by definition (nccl-tests doc/PERFORMANCE.md)"
    return None


def _compare_one(
    k: int, table: PerfTable, lines: list[str], region: tuple[int, int], options: _TableOptions
) -> TableComparison:
    """Compare table number ``k`` with what the log says before it (``lines[region[0]:region[1]]``: its
    settings, INFO lines and counts) and the cluster given or inferred from the log up to it; a plateau far
    above what those allow is marked with the fact it disproves (:func:`find_contradiction`)."""
    start, stop = region
    op = _engine_op(table)
    settings = nccl_settings(lines[start:stop], table.title, op)
    settings = _override(settings, options.algorithm, options.protocol, options.no_nvls)
    sources = setting_lines(lines[start:stop], settings.env, first_line=start + 1)
    settings = _with_sources(settings, sources)
    info = parse_nccl_info(lines[start:stop], first_line=start + 1)
    counts = resolve_counts(table, lines[start:stop], info, ranks=options.ranks, nodes=options.nodes,
                            gpus_per_node=options.gpus_per_node, first_line=start + 1)  # fmt: skip
    table = dataclasses.replace(table, n_ranks=counts.n_ranks, n_nodes=counts.n_nodes)
    spec, inferred = infer_cluster(
        table, cluster=options.cluster, gpu=options.gpu, nic_speed=options.nic_speed,
        text_before=lambda: _prose_above(lines, stop), intra=info.lines("intra"),
    )  # fmt: skip
    _check_forced_nvls(options.algorithm, spec, table)
    versions = info.lines("version") or _version_lines(lines, start, stop)
    settings = _stated_release(settings, _printed_version(table, info), options.nccl_version, versions, spec)
    notes = (*table.notes, *counts.notes, *inferred)
    comp = compare_table(table, index=k, spec=spec, settings=settings, assumptions=notes,
                         calibration=options.calibration, threshold=options.threshold, place=options.place,
                         info=info, version_lines=versions)  # fmt: skip
    return dataclasses.replace(comp, contradiction=find_contradiction(comp, sources))


def _stated_release(
    settings: NcclSettings,
    logged: str | None,
    stated: str | None,
    versions: tuple[Evidence, ...],
    spec: ClusterSpec,
) -> NcclSettings:
    """``settings`` with the release the table ran: the log's, else the one ``--nccl-version`` states.

    Raises
    ------
    ValueError
        ``--nccl-version`` names a release the log's disagrees with (``2.21`` agrees with ``2.21.5``).
    ConfigError
        ``--nccl-version`` names a release older than the GPU
        (:func:`~aifabric.catalog.nccl.check_release_has_arch`).
    """
    if stated is None:
        return dataclasses.replace(settings, nccl_version=logged)
    if logged is not None:
        want = version_tuple(stated)
        if version_tuple(logged)[: len(want)] != want:
            where = f" (line {versions[0].line})" if versions else ""
            raise ValueError(f"--nccl-version: {stated!r} conflicts with the log's NCCL {logged}{where}; the "
                             "log's release prices the table (drop the option)")  # fmt: skip
        return dataclasses.replace(settings, nccl_version=logged)
    check_release_has_arch(stated, nccl_release(stated), spec.accelerator_spec.arch, spec.accelerator,
                           field="--nccl-version")  # fmt: skip
    return dataclasses.replace(settings, nccl_version=stated)


def _check_forced_nvls(algorithm: str | None, spec: ClusterSpec, table: PerfTable) -> None:
    """Refuse ``--algo nvls``/``nvls_tree`` on GPUs without NVLink SHARP: NCCL never runs it there, so the
    option would be unused (a log's own ``NCCL_ALGO`` falls back instead, as NCCL does).

    Raises
    ------
    ValueError
        Naming the option and the GPU.
    """
    if algorithm in (Algorithm.NVLS, Algorithm.NVLS_TREE) and not spec.accelerator_spec.nvls:
        raise ValueError(
            f"--algo {algorithm}: unusable: {spec.accelerator} has no NVLink SHARP (NVLS), so NCCL never "
            f"runs {algorithm} on the table at line {table.line}"
        )


def _prose_above(lines: list[str], stop: int) -> str:
    """``lines[:stop]`` joined without NCCL's own log lines (they name no GPU model; a debug log is mostly
    them), the text searched for a GPU name when the rank lines give none."""
    return "\n".join(line for line in lines[:stop] if "NCCL INFO" not in line and "NCCL WARN" not in line)


def _check_used(nic_speed: str | None, compared: list[TableComparison]) -> None:
    """Refuse ``--nic-speed`` when no compared table crosses a network (every one ran on one node).

    Raises
    ------
    ValueError
        Naming the option, its value and the tables' lines.
    """
    if nic_speed is not None and all(t.table.n_nodes == 1 for t in compared):
        lines = ", ".join(str(t.table.line) for t in compared)
        raise ValueError(
            f"--nic-speed: {nic_speed!r} is unused: every table compared ran on one node (line {lines}), "
            "over NVLink only"
        )


def _check_options(
    cluster: object | None,
    gpu: str | None,
    nic_speed: str | None,
    gpus_per_node: int | None,
    algorithm: str | None,
    no_nvls: bool,
) -> None:
    """Refuse option combinations one of which would be silently dropped.

    ``gpu``, ``nic_speed`` and ``gpus_per_node`` describe the inferred cluster; a given ``cluster`` already
    fixes them. Forcing NVLS or NVLSTree while excluding them asks for two opposite things.

    Raises
    ------
    ValueError
        Naming the two options that conflict.
    """
    if cluster is not None:
        given = {"--gpu": gpu, "--nic-speed": nic_speed, "--gpus-per-node": gpus_per_node}
        for flag, value in given.items():
            if value is not None:
                raise ValueError(
                    f"{flag}: {value!r} describes the inferred cluster; it conflicts with --cluster "
                    f"{cluster}, which fixes it (give one or the other)"
                )
    if no_nvls and algorithm in (Algorithm.NVLS, Algorithm.NVLS_TREE):
        raise ValueError(f"--algo {algorithm} conflicts with --no-nvls")


def _version_lines(lines: list[str], start: int, stop: int) -> tuple[Evidence, ...]:
    """The last nccl-tests banner ``NCCL version 2.19.3+cuda12.2`` in ``lines[start:stop]``, as evidence."""
    for index in range(stop - 1, start - 1, -1):
        if _BANNER.search(lines[index][:400]):
            return (Evidence(index + 1, lines[index].strip()[:200]),)
    return ()


def _bare(err: ParseError) -> str:
    text = str(err)
    return text.split(": ", 1)[1] if err.source and text.startswith(f"{err.source}") else text


def _override(
    settings: NcclSettings, algorithm: str | None, protocol: str | None, no_nvls: bool
) -> NcclSettings:
    if algorithm is None and protocol is None and not no_nvls:
        return settings
    notes = list(settings.notes)
    alg, exclude, protocols = settings.algorithm, list(settings.exclude), settings.protocols
    if algorithm is not None:
        alg, exclude = algorithm, []
        notes.append(f"--algo {algorithm}: overrides the log")
    if protocol is not None:
        if protocol not in PROTOCOLS:
            raise ValueError(f"--proto: unknown protocol {protocol!r}; known: {', '.join(PROTOCOLS)}")
        protocols = (protocol,)
        notes.append(f"--proto {protocol}: overrides the log")
    if no_nvls:
        exclude.extend(a for a in (Algorithm.NVLS.value, Algorithm.NVLS_TREE.value) if a not in exclude)
        notes.append("--no-nvls: NVLS and NVLSTree excluded")
    return dataclasses.replace(settings, algorithm=alg, exclude=tuple(exclude), protocols=protocols,
                               notes=tuple(notes))  # fmt: skip

"""Checkpoints: size from the model and optimizer, write and restore time, asynchronous checkpointing.

Size (ZeRO, Rajbhandari et al. SC'20, arXiv:1910.02054; reference/storage-optics-scale-across.md sec. 1.1):

    S = P x (w + m)      w = 2 (bf16 weights), m = 12 (fp32 master + Adam m + v): 14 B/param

gradients are not saved (16 B/param with them; 12 without the bf16 copy). Megatron's 1T-parameter
checkpoint is 13.8 TB = 13.8 B/param (Narayanan et al. SC'21).

Who writes (sharded by the layout): with ZeRO >= 1 (distributed optimizer) every GPU holds a 1/N shard of the
optimizer state and, with a fully parallel save (Megatron ``--ckpt-fully-parallel-save``), writes 1/N of the
checkpoint, so every node writes ``S / nodes``. Without ZeRO one data-parallel replica (TP x PP GPUs) holds
and writes everything: ``S / ceil(TP PP / gpus_per_node)`` per node, the other replicas idle.

Restore: every GPU reads the state it holds (weights: 1/(TP PP); optimizer: 1/(TP PP), or 1/(TP PP DP) with
ZeRO >= 1); all nodes read at once, so state the DP replicas share (the weights below ZeRO-3, the optimizer
without ZeRO) is read from storage DP times. A fully parallel load (Megatron-Core distributed checkpointing,
``--ckpt-fully-parallel-load``: the load is split across the data-parallel group; MegaScale NSDI'24 reads
once per DP group and broadcasts) reads each replicated byte once: a GPU reads 1/DP of the replicated part and
receives the other (DP - 1)/DP from its peers, over its node's scale-out NICs (the scale-up links on one node)
at their payload rate, after the read. Node-local drives (catalogue kind ``local``) hold only what their
node wrote: a node reads at most that and receives the rest from its peers by the same exchange.

Write time = bytes per node / the slowest stage of :func:`aifabric.storage.paths.node_path`.
Asynchronous checkpointing (ByteDance MegaScale NSDI'24; PyTorch DCP async save): training stops only for
the copy GPU -> host memory, ``bytes per GPU / PCIe per GPU``; the drain host -> storage runs in the
background during the next steps (PCIe to the GPU is out of its path).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aifabric import catalog
from aifabric.cluster.spec import ClusterSpec
from aifabric.errors import ConfigError
from aifabric.storage.paths import LOCAL_KIND, Transfer, node_path, transfer_time
from aifabric.units import format_bytes

__all__ = ["CheckpointResult", "CheckpointSize", "check_state_fits", "checkpoint_size", "checkpoint_time"]


@dataclass(frozen=True)
class CheckpointSize:
    """Bytes of one checkpoint and how they are sharded.

    Attributes
    ----------
    n_params : float
        Parameters.
    weight_bytes_per_param, optimizer_bytes_per_param : float
        Saved bytes per parameter (default 2 and 12).
    total_bytes : float
        P x (weights + optimizer), bytes.
    writer_gpus : int
        GPUs that write a part (N with ZeRO >= 1, TP x PP without).
    held_bytes_per_gpu : float
        State one GPU holds and reads back on restore, bytes.
    job_gpus : int
        TP x PP x DP.
    replicated_bytes_per_gpu : float
        The part of ``held_bytes_per_gpu`` the GPU's DP peers hold too (weights below ZeRO-3, the optimizer
        without ZeRO); 0 with DP = 1.
    dp : int
        Data-parallel degree.
    """

    n_params: float
    weight_bytes_per_param: float
    optimizer_bytes_per_param: float
    total_bytes: float
    writer_gpus: int
    held_bytes_per_gpu: float
    job_gpus: int
    replicated_bytes_per_gpu: float = 0.0
    dp: int = 1

    @property
    def parallel_load_bytes_per_gpu(self) -> float:
        """Bytes one GPU reads in a fully parallel load: its own shards and 1/DP of the replicated part."""
        return self.held_bytes_per_gpu - self.replicated_bytes_per_gpu * (self.dp - 1) / self.dp

    @property
    def bytes_per_param(self) -> float:
        """Saved bytes per parameter."""
        return self.weight_bytes_per_param + self.optimizer_bytes_per_param


def checkpoint_size(
    n_params: float,
    *,
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    zero_stage: int = 1,
    weight_bytes_per_param: float = 2.0,
    optimizer_bytes_per_param: float = 12.0,
) -> CheckpointSize:
    """Size and sharding of one checkpoint (formulas in the module docstring).

    Raises
    ------
    ValueError
        If a count is < 1, ``n_params`` <= 0 or a byte figure < 0.

    Examples
    --------
    70 B parameters at 14 B/param is 980 GB; with TP 8, PP 2, DP 8 and ZeRO-1 each of 128 GPUs writes 1/128:

    >>> s = checkpoint_size(70e9, tp=8, pp=2, dp=8)
    >>> s.total_bytes / 1e9, s.writer_gpus
    (980.0, 128)
    """
    for name, v in (("tp", tp), ("pp", pp), ("dp", dp)):
        if v < 1:
            raise ValueError(f"{name} must be >= 1, got {v!r}")
    if not n_params > 0:
        raise ValueError(f"n_params must be > 0, got {n_params!r}")
    if weight_bytes_per_param < 0 or optimizer_bytes_per_param < 0:
        raise ValueError("bytes per parameter must be >= 0")
    if zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"zero_stage must be 0..3, got {zero_stage!r}")
    total = n_params * (weight_bytes_per_param + optimizer_bytes_per_param)
    mp = tp * pp
    opt_shard = dp if zero_stage >= 1 else 1
    weight_shard = dp if zero_stage >= 3 else 1
    held = n_params / mp * (weight_bytes_per_param / weight_shard + optimizer_bytes_per_param / opt_shard)
    shared = (weight_shard == 1) * weight_bytes_per_param + (opt_shard == 1) * optimizer_bytes_per_param
    replicated = n_params / mp * shared if dp > 1 else 0.0
    writers = mp * dp if zero_stage >= 1 else mp
    return CheckpointSize(
        n_params,
        weight_bytes_per_param,
        optimizer_bytes_per_param,
        total,
        writers,
        held,
        mp * dp,
        replicated,
        dp,
    )


@dataclass(frozen=True)
class CheckpointResult:
    """Write, restore and asynchronous-checkpoint times of one checkpoint on a cluster.

    Attributes
    ----------
    size : CheckpointSize
    writer_nodes : int
        Nodes writing at once.
    write : Transfer
        Synchronous write (GPU memory -> storage), bytes per node, seconds, bottleneck.
    restore : Transfer
        Every node reading its GPUs' state back.
    async_copy_s : float
        Asynchronous checkpoint: seconds training stops (GPU -> host copy over each GPU's PCIe).
    async_drain : Transfer
        The background drain host memory -> storage.
    restore_exchange_s : float
        The exchange among peers after the read: a fully parallel load's, or the state on other nodes'
        node-local drives (0 otherwise).
    """

    size: CheckpointSize
    writer_nodes: int
    write: Transfer
    restore: Transfer
    async_copy_s: float
    async_drain: Transfer
    restore_exchange_s: float = 0.0

    @property
    def restore_s(self) -> float:
        """Seconds to restore: the read, then the exchange among peers."""
        return self.restore.seconds + self.restore_exchange_s

    def drain_steps(self, step_time_s: float) -> float:
        """Training steps the background drain spans (it overlaps them), ``drain / step time``."""
        if not step_time_s > 0:
            raise ValueError(f"step_time_s must be > 0, got {step_time_s!r}")
        return self.async_drain.seconds / step_time_s


def check_state_fits(
    spec: ClusterSpec,
    size: CheckpointSize,
    field: str = "n_params",
    *,
    host_bytes_per_node: float = 0.0,
    host_field: str = "host_bytes_per_node",
) -> None:
    """Refuse a checkpoint of more state than the job's memory can hold: ConfigError naming ``field``.

    The state a checkpoint saves (weights and optimizer, ``S = P (w + m)`` bytes) is the state the job
    trains, held in its GPUs' memory and, when it offloads (ZeRO-Offload: optimizer state in host memory,
    Ren et al. USENIX ATC'21, arXiv:2101.06840), in its nodes' host memory. Whatever the sharding (ZeRO-3
    holds ``S / N`` per GPU, the least), ``N`` GPUs on ``ceil(N / g)`` nodes hold at most::

        S <= N x hbm_capacity + ceil(N / g) x host_bytes_per_node

    128 H100 x 80 GB = 10.24 TB without offload (731 B params at 14 B/param); with the 2 TB of host memory
    of each of their 16 DGX H100 nodes (DGX H100 datasheet: 2 TB system memory) 42.24 TB (3.0 T params).

    ``collective`` refuses a message above one GPU's HBM by the same rule
    (:func:`aifabric.collectives.buffers.check_fits_hbm`). A ``size`` that is not finite is left to the
    caller, which names the inputs it overflows from.

    Raises
    ------
    ConfigError
        Naming ``field`` (and ``host_field`` when host memory is counted) and the memory that holds the state.
    ValueError
        If ``host_bytes_per_node`` is negative or not finite.
    """
    if not (math.isfinite(host_bytes_per_node) and host_bytes_per_node >= 0):
        raise ValueError(f"host_bytes_per_node must be a finite size >= 0, got {host_bytes_per_node!r}")
    hbm = spec.accelerator_spec.hbm_capacity_bytes
    nodes = math.ceil(size.job_gpus / spec.gpus_per_node)
    held = size.job_gpus * hbm + nodes * host_bytes_per_node
    if not (math.isfinite(size.total_bytes) and size.total_bytes > held):
        return
    where = f"{format_bytes(hbm)} of HBM each {spec.accelerator}"
    if host_bytes_per_node > 0:
        where += f", and {host_field} {format_bytes(host_bytes_per_node)} on each of their {nodes} nodes"
    raise ConfigError(
        f"{field}: {size.n_params:g} parameters x {size.bytes_per_param:g} B/param = "
        f"{format_bytes(size.total_bytes)} of weights and optimizer state is more than the "
        f"{format_bytes(held)} the job's {size.job_gpus} GPUs ({where}) hold while they train and write it"
    )


def checkpoint_time(
    spec: ClusterSpec,
    size: CheckpointSize,
    *,
    gds: bool | None = None,
    offloaded: bool = False,
    parallel_load: bool = False,
) -> CheckpointResult:
    """Write/restore/async times of ``size`` on ``spec`` (formulas in the module docstring).

    ``gds``: GPUDirect Storage (None: the storage system's own, :func:`aifabric.storage.paths.node_path`).
    ``offloaded``: the state beyond a GPU's HBM lives in its node's host memory (ZeRO-Offload, Ren et al.
    USENIX ATC'21, arXiv:2101.06840): the asynchronous GPU -> host copy moves only the part in HBM (at most
    its capacity); the host-resident part is already where the drain reads it (the node's front-end /
    storage NICs, :func:`aifabric.storage.paths.node_path` with no GPU in the path).
    ``parallel_load``: restore with a fully parallel load (module docstring).

    Raises
    ------
    ValueError
        If the layout needs more GPUs than the cluster has.
    ConfigError
        If the cluster has no front-end NICs or storage (see :func:`aifabric.storage.paths.node_path`).
    """
    g = spec.gpus_per_node
    if size.job_gpus > spec.n_gpus:
        raise ValueError(f"the layout needs {size.job_gpus} GPUs but the cluster has {spec.n_gpus}")
    writer_nodes = math.ceil(size.writer_gpus / g)
    gpus_writing = min(g, size.writer_gpus)
    per_node = size.total_bytes / writer_nodes
    write = transfer_time(
        node_path(spec, direction="write", active_nodes=writer_nodes, gpus=gpus_writing, gds=gds), per_node
    )
    restore, exchange_s = _restore(spec, size, gds, parallel_load)
    host_link = spec.host_link_bytes_per_s
    per_gpu_bytes = per_node / gpus_writing
    if offloaded:
        per_gpu_bytes = min(per_gpu_bytes, spec.accelerator_spec.hbm_capacity_bytes)
    copy_s = per_gpu_bytes / host_link if host_link is not None else 0.0
    drain = transfer_time(node_path(spec, direction="write", active_nodes=writer_nodes, gpus=0), per_node)
    return CheckpointResult(size, writer_nodes, write, restore, copy_s, drain, exchange_s)


def _restore(
    spec: ClusterSpec, size: CheckpointSize, gds: bool | None, parallel_load: bool
) -> tuple[Transfer, float]:
    """Every node's read of its GPUs' state and the seconds of the exchange that follows: the bytes a GPU
    holds but does not read (:func:`_read_per_node`) reach it from its peers through its node's scale-out
    NICs at the rate every engine reads, :attr:`~aifabric.cluster.spec.ClusterSpec.nic_effective_bytes_per_s`
    per NIC (payload on the transport in use, at most the GPU's PCIe link), so ``received / (nics_per_node
    x B_o)``, a pipelined broadcast or all-gather receiving each byte once; one node: its GPUs' scale-up
    links."""
    g = spec.gpus_per_node
    read_nodes = math.ceil(size.job_gpus / g)
    gpus_reading = min(g, size.job_gpus)
    read, least_read = _read_per_node(spec, size, parallel_load, read_nodes, gpus_reading)
    restore = transfer_time(
        node_path(spec, direction="read", active_nodes=read_nodes, gpus=gpus_reading, gds=gds), read
    )
    received = size.held_bytes_per_gpu * gpus_reading - least_read
    if not received > 0:
        return restore, 0.0
    if read_nodes > 1 and spec.nic_spec is not None:
        rate = spec.nics_per_node * spec.nic_effective_bytes_per_s
    else:
        rate = gpus_reading * spec.scaleup_link.per_gpu_per_direction_bytes_per_s
    return restore, received / rate


def _read_per_node(
    spec: ClusterSpec, size: CheckpointSize, parallel_load: bool, read_nodes: int, gpus_reading: int
) -> tuple[float, float]:
    """Bytes the busiest node reads from storage, and the fewest any reading node reads (what it cannot read
    it receives from its peers).

    Shared storage serves every node what its GPUs read: all they hold, or in a fully parallel load their
    own shards and 1/DP of the replicated part. Node-local drives (catalogue kind ``local``) hold only what
    their node wrote, ``S / writer nodes`` on each writer node and nothing on the others; restored with the
    layout that saved it, that is the node's own part of its state (ZeRO >= 1: its optimizer shards and
    1/DP of its replicated weights, the fully parallel load's share), so a node reads at most that and
    receives the rest from the peers whose drives hold it (Megatron-Core's exchange of a fully parallel
    load), whether or not ``--parallel-load`` is asked for."""
    per_gpu = size.parallel_load_bytes_per_gpu if parallel_load else size.held_bytes_per_gpu
    need = per_gpu * gpus_reading
    if spec.storage is None or catalog.storage(spec.storage.system).kind != LOCAL_KIND:
        return need, need
    writer_nodes = math.ceil(size.writer_gpus / spec.gpus_per_node)
    read = min(need, size.total_bytes / writer_nodes)
    return read, read if writer_nodes >= read_nodes else 0.0

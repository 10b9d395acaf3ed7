"""Scale-across: an all-reduce over sites kilometres apart, and the step cost of data parallelism across them.

Hierarchical over three levels (the seed's scheme, one level up): reduce-scatter inside each site, an
all-reduce of each GPU's shard with its counterparts in the other sites over the data-centre interconnect
(DCI), all-gather inside each site. With ``k`` sites of ``N_s`` GPUs and ``S`` bytes per GPU:

    T_site  = RS(S, N_s) + AG(S, N_s) = AR_formula(S, N_s)               (one site's all-reduce)
    B_x     = min(B_nic, e x B_dci / N_s)                              (every GPU crosses at once)
    alpha_x = d x t_fibre                                              (one-way fibre delay, 5 us/km)
    T_cross = 2 (k - 1) alpha_x + 2 (k - 1) / k x (S / N_s) / B_x        (ring over the k sites)

The in-site reduce-scatter and all-gather together cost what one all-reduce over the site's ``N_s`` GPUs
costs (a ring all-reduce is exactly its reduce-scatter then its all-gather), so ``T_site`` is the formula
engine's all-reduce over site 0's GPUs, the call ``aifabric collective all_reduce`` makes: NCCL's choice of
algorithm and protocol with its latencies (tuning.cc), not bandwidth terms alone, which would let a 1 KB
all-reduce over 512 GPUs finish in 10 ns. B_nic is the NIC payload bandwidth per GPU, per direction;
B_dci the site's DCI line rate per direction and e its transport's efficiency (catalogue ``dci``).
The latency term 2 (k - 1) alpha_x is what distance adds: 500 us for two sites 50 km apart.

Pipeline parallelism across sites instead: only the GPUs at the stage boundary cross, each sending its
1/TP of a microbatch's activations ``A`` once per microbatch and direction (forward activations,
backward gradients):

    T_pp = alpha_x + (A / TP) / min(B_nic, e x B_dci / TP)      per microbatch and direction
"""

from __future__ import annotations

from dataclasses import dataclass

from aifabric import catalog
from aifabric.cluster.spec import ClusterSpec, SitesSpec
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.costs import ring_all_reduce_time
from aifabric.collectives.ops import Collective
from aifabric.engines.formula import formula_collective
from aifabric.errors import ConfigError

__all__ = ["CrossSiteAllReduce", "cross_site_all_reduce", "fibre_delay_s", "pp_boundary_time"]


def fibre_delay_s(distance_km: float, *, s_per_km: float | None = None) -> float:
    """One-way propagation delay over ``distance_km`` of fibre, seconds.

    ``s_per_km`` defaults to the catalogue's figure for the default DCI transport (``catalog/data/dci.yaml``
    ``fibre_delay``: 5 us/km, group index ~1.47 at 1550 nm, with its source there).

    Raises
    ------
    ValueError
        If ``distance_km`` < 0.

    >>> round(fibre_delay_s(50) * 1e6, 1)
    250.0
    """
    if distance_km < 0:
        raise ValueError(f"distance_km must be >= 0, got {distance_km!r}")
    if s_per_km is None:
        s_per_km = catalog.dci(SitesSpec.model_fields["transport"].default).fibre_delay_s_per_km
    return distance_km * s_per_km


@dataclass(frozen=True)
class CrossSiteAllReduce:
    """Times of one all-reduce across sites, seconds; ``cross_bytes_per_s`` is B_x per GPU per direction.

    ``single_site_s`` is the same all-reduce with every GPU in one site (the formula engine's all-reduce
    over all of them), so ``total_s - single_site_s`` is what spreading DP over the sites costs per step.
    """

    sites: int
    in_site_s: float
    cross_s: float
    cross_latency_s: float
    cross_bytes_per_s: float
    dci_oversubscription: float
    single_site_s: float

    @property
    def total_s(self) -> float:
        """In-site RS + cross-site all-reduce + in-site AG."""
        return self.in_site_s + self.cross_s

    @property
    def dp_step_cost_s(self) -> float:
        """Extra seconds per step from putting DP across the sites instead of in one."""
        return self.total_s - self.single_site_s


def _in_site(spec: ClusterSpec, message_bytes: float, gpus: int) -> float:
    """Seconds of the formula engine's all-reduce of ``message_bytes`` over the first ``gpus`` GPUs of one
    site (``spec`` without its sites). A gradient larger than HBM is timed as one logical message, as the
    training model does (frameworks all-reduce it in buckets)."""
    if gpus > spec.domain_gpus and not spec.nic_effective_bytes_per_s > 0:
        raise ConfigError("scale_out: the GPUs of a site span domains but have no NIC")
    site = spec.with_changes(sites=None)
    comm = Communicator.contiguous(site, gpus)
    return formula_collective(Collective.ALL_REDUCE, message_bytes, site, comm, hbm_check=False).time_s


def cross_site_all_reduce(spec: ClusterSpec, message_bytes: float) -> CrossSiteAllReduce:
    """All-reduce of ``message_bytes`` per GPU over every GPU of ``spec``, split over ``spec.sites``.

    Raises
    ------
    ConfigError
        If the spec has no ``sites`` or no scale-out NIC.
    ValueError
        If ``message_bytes`` < 0.

    Examples
    --------
    Two sites 50 km apart: the distance adds 2 x 250 us.

    >>> from aifabric.cluster.presets import preset
    >>> spec = preset("dgx-h100-superpod", nodes=64, sites={"distance_km": 50, "dci_bandwidth": "100 Tb/s"})
    >>> round(cross_site_all_reduce(spec, 1e9).cross_latency_s * 1e6, 1)
    500.0
    """
    st = spec.sites
    if st is None:
        raise ConfigError(
            "sites: this cluster is in one site (add sites: {distance_km: ..., dci_bandwidth: ...})"
        )
    if message_bytes < 0:
        raise ValueError(f"message_bytes must be >= 0, got {message_bytes!r}")
    dci = catalog.dci(st.transport)
    k = st.count
    per_site = spec.n_gpus // k
    nic = spec.nic_effective_bytes_per_s
    cross_bw = min(nic, dci.efficiency * st.dci_bandwidth_bytes_per_s / per_site)
    alpha = fibre_delay_s(st.distance_km, s_per_km=dci.fibre_delay_s_per_km)
    shard = message_bytes / per_site
    cross = ring_all_reduce_time(shard, k, cross_bw, hop_latency_s=alpha)
    return CrossSiteAllReduce(
        sites=k,
        in_site_s=_in_site(spec, message_bytes, per_site),
        cross_s=cross,
        cross_latency_s=2 * (k - 1) * alpha,
        cross_bytes_per_s=cross_bw,
        dci_oversubscription=per_site * spec.nic_line_rate_bytes_per_s / st.dci_bandwidth_bytes_per_s,
        single_site_s=_in_site(spec, message_bytes, spec.n_gpus),
    )


def pp_boundary_time(spec: ClusterSpec, activation_bytes: float, *, tp: int = 1) -> float:
    """Seconds to send one microbatch's activations across the site boundary (module docstring formula).

    Raises
    ------
    ConfigError
        If the spec has no ``sites``.
    ValueError
        If ``activation_bytes`` < 0 or ``tp`` < 1.

    Examples
    --------
    >>> from aifabric.cluster.presets import preset
    >>> spec = preset("dgx-h100-superpod", nodes=64, sites={"distance_km": 50, "dci_bandwidth": "100 Tb/s"})
    >>> round(pp_boundary_time(spec, 64e6, tp=8) * 1e6, 1)  # 250 us of fibre + 8 MB at 49.15 GB/s
    412.8
    """
    st = spec.sites
    if st is None:
        raise ConfigError("sites: this cluster is in one site")
    if activation_bytes < 0 or tp < 1:
        raise ValueError(f"need activation_bytes >= 0 and tp >= 1, got {activation_bytes!r}, {tp!r}")
    dci = catalog.dci(st.transport)
    bw = min(spec.nic_effective_bytes_per_s, dci.efficiency * st.dci_bandwidth_bytes_per_s / tp)
    return fibre_delay_s(st.distance_km, s_per_km=dci.fibre_delay_s_per_km) + activation_bytes / tp / bw

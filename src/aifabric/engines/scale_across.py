"""Scale-across: an all-reduce over sites kilometres apart, and the step cost of data parallelism across them.

Hierarchical over three levels (the seed's scheme, one level up): reduce-scatter inside each site, an
all-reduce of each GPU's shard with its counterparts in the other sites over the data-centre interconnect
(DCI), all-gather inside each site [1]_ [2]_. With ``k`` sites of ``N_s`` GPUs and ``S`` bytes per GPU:

    T_site  = RS(S, N_s) + AG(S, N_s) = AR_formula(S, N_s)               (one site's all-reduce)
    B_x     = min(B_nic, e x B_dci / N_s)                              (every GPU crosses at once)
    alpha_x = a_net + d x t_fibre                   (a network step, plus the one-way fibre delay, 5 us/km)
    T_cross = 2 (k - 1) alpha_x + 2 (k - 1) / k x (S / N_s) / B_x        (ring over the k sites)

The in-site reduce-scatter and all-gather together cost what one all-reduce over the site's ``N_s`` GPUs
costs (a ring all-reduce is exactly its reduce-scatter then its all-gather [1]_), so ``T_site`` is the
formula engine's all-reduce over site 0's GPUs, the call ``aifabric collective all_reduce`` makes: NCCL's
choice of algorithm and protocol with its latencies (tuning.cc), not bandwidth terms alone, which would let
a 1 KB all-reduce over 512 GPUs finish in 10 ns. B_nic is the NIC payload bandwidth per GPU, per direction;
B_dci the site's DCI line rate per direction and e its transport's efficiency (catalogue ``dci``). Each ring
step across sites leaves through a NIC and the site's switches before the fibre: ``a_net`` is NCCL's
``hwLat[NET][RING][SIMPLE]`` (14 us in every recorded release, tuning.cc), the latency
:mod:`aifabric.collectives.hierarchical` charges its steps across domains. The fibre's share,
2 (k - 1) d t_fibre, is what distance adds: 500 us for two sites 50 km apart.

The same GPUs in one site can run NCCL's all-reduce over all ``N = k N_s`` of them, or the same three
stages over any ``j`` groups of ``N / j`` (whole domains: ``j`` divides the domains, as ``k`` does) with the
middle one on the site's own fabric (``B_nic``, ``a_net``, no fibre); the one site takes the fastest, a
figure of the site alone, whatever ``k`` the split has::

    T_one = min( AR_formula(S, N),  min_j [ AR_formula(S, N / j) + 2 (j - 1) a_net
                                            + 2 (j - 1) / j x (S j / N) / B_nic ] )

The split's own ``k`` is one of the ``j``, and since ``B_x <= B_nic`` and ``alpha_x >= a_net``, ``T_site +
T_cross >= T_one`` whatever ``k``, ``d`` and ``B_dci``: spreading the GPUs over sites never saves time.
(NCCL's own algorithms over 16,384 GPUs pay 2 (N - 1) ring steps or a tree's lower bandwidth, which the
grouped schedule avoids: comparing the split's grouped schedule with NCCL's flat one credited the sites with
the schedule's gain.) Both middle stages take the NICs' rate: the site fabric's own oversubscription is left
out on both sides.

Local SGD across sites instead of data parallelism (DiLoCo [3]_; INTELLECT-1 [4]_): each site trains its own
replica for ``H`` inner steps on its own fabric, then the sites all-reduce the pseudo-gradient (the change of
the weights over those steps), of the gradient's size ``S``, sent in a narrower type when quantised
(INTELLECT-1: int8 against fp32). With ``r`` = bytes sent per byte of gradient (1/4 for int8 over fp32), the
outer all-reduce is the one above on ``r S`` bytes, once per ``H`` steps::

    T_outer = T_site(r S) + T_cross(r S)       (every H inner steps)
    bytes over the DCI per step, against DP's:  r / H

Its cost per step is priced on DP's basis, like with like: what the sites add to the outer all-reduce over
the same all-reduce in one site (``T_outer - T_one(r S)``, as DP's ``T_site + T_cross - T_one``), spread
over its ``H`` steps. The in-site phases of either are what one site running the same GPUs pays too, so
neither side is charged them: at H = 1 and r = 1 local SGD is data parallelism (DiLoCo [3]_ Sec. 2) and
costs what DP does, and each step costs at most DP's extra for any H >= 1 and r <= 1.

INTELLECT-1's ``H`` = 100 inner steps with int8 pseudo-gradients over fp32 gradients: 1/400 of the bytes
DP sends, the "400x reduction in communication bandwidth" its report gives.

Pipeline parallelism across sites instead: only the GPUs at the stage boundary cross, each sending its
1/TP of a microbatch's activations ``A`` once per microbatch and direction (forward activations,
backward gradients):

    T_pp = a_net + d x t_fibre + (A / TP) / min(B_nic, e x B_dci / TP)      per microbatch and direction

(the send leaves through a NIC and the site's switches before the fibre, one network step ``a_net`` as in
``alpha_x``).

References
----------
.. [1] Thakur, Rabenseifner and Gropp, "Optimization of collective communication operations in MPICH",
   IJHPCA 19(1):49-66, 2005, doi:10.1177/1094342005051521 (all-reduce as reduce-scatter then all-gather).
.. [2] Jia et al., "Highly scalable deep learning training system with mixed-precision: training ImageNet in
   four minutes", arXiv:1807.11205, 2018 (hierarchical all-reduce: reduce in groups, all-reduce across
   groups, broadcast in groups).
.. [3] Douillard et al., "DiLoCo: distributed low-communication training of language models",
   arXiv:2311.08105, 2023 (inner steps with AdamW inside each worker, outer Nesterov step on the averaged
   pseudo-gradients every H steps).
.. [4] Jaghouar et al., "INTELLECT-1 technical report", arXiv:2412.01152, 2024 (DiLoCo with 100 inner
   steps, pseudo-gradients all-reduced in int8).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aifabric import catalog
from aifabric.cluster.spec import ClusterSpec, SitesSpec
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.costs import ring_all_reduce_time
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import Protocol, hw_latency_s, tier_model
from aifabric.engines.formula import formula_collective
from aifabric.errors import ConfigError

__all__ = [
    "CrossSiteAllReduce",
    "MAX_INNER_STEPS",
    "LocalSgdSync",
    "cross_site_all_reduce",
    "fibre_delay_s",
    "local_sgd_sync",
    "pp_boundary_time",
]

#: Most inner steps between two outer syncs of local SGD. DiLoCo syncs every H = 500 (Douillard et al. 2023,
#: arXiv:2311.08105, Sec. 3), INTELLECT-1 every 100; a whole pre-training run is about 1e6 steps (Llama 3
#: 405B, Dubey et al. 2024, Sec. 3.4.1: 15.6T tokens at 4M, then 8M after 252M tokens, then 16M after 2.87T:
#: 63 + 358,718 + 795,625 = 1.15e6 steps). 1e7, ten such runs, leaves room for longer runs at smaller
#: batches; an H above it is a run whose sites never sync, and its per-step cost no time a step can take.
MAX_INNER_STEPS = 10**7


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

    ``cross_latency_s`` is the fibre's share of the cross-site stage (what distance adds),
    ``cross_network_latency_s`` its NIC and switch steps (``2 (k - 1) a_net``). ``single_site_s`` is the
    same all-reduce with every GPU in one site, by the faster of NCCL's all-reduce over all of them and the
    same grouped schedule on the site's fabric (``single_site_schedule``: ``"nccl"`` or ``"grouped"``), so
    ``total_s - single_site_s`` is what spreading DP over the sites costs per step, never below 0.
    """

    sites: int
    in_site_s: float
    cross_s: float
    cross_latency_s: float
    cross_bytes_per_s: float
    dci_oversubscription: float
    single_site_s: float
    single_site_schedule: str = "nccl"
    cross_network_latency_s: float = 0.0

    @property
    def total_s(self) -> float:
        """In-site RS + cross-site all-reduce + in-site AG."""
        return self.in_site_s + self.cross_s

    @property
    def dp_step_cost_s(self) -> float:
        """Extra seconds per step from putting DP across the sites instead of in one."""
        return self.total_s - self.single_site_s


def _in_site(site: ClusterSpec, message_bytes: float, gpus: int) -> float:
    """Seconds of the formula engine's all-reduce of ``message_bytes`` over the first ``gpus`` GPUs of one
    site (``site``: the cluster without its sites). A gradient larger than HBM is timed as one logical
    message, as the training model does (frameworks all-reduce it in buckets).

    Raises ConfigError naming ``scale_out`` when the GPUs span domains without a NIC."""
    if gpus > site.domain_gpus and not site.nic_effective_bytes_per_s > 0:
        raise ConfigError("scale_out: the GPUs of a site span domains but have no NIC")
    comm = Communicator.contiguous(site, gpus)
    return formula_collective(Collective.ALL_REDUCE, message_bytes, site, comm, hbm_check=False).time_s


def _network_step_s(spec: ClusterSpec) -> float:
    """``a_net``: NCCL's latency of one ring step across nodes, ``hwLat[NET][RING][SIMPLE]`` of the
    cluster's release plus its transport's extra latency (tuning.cc; as :mod:`aifabric.collectives.
    hierarchical` charges a step across domains), seconds."""
    tm = tier_model(spec.with_changes(sites=None))
    return hw_latency_s(tm, "net", "ring", Protocol.SIMPLE) + tm.extra_inter_latency_s


def _single_site(site: ClusterSpec, message_bytes: float, a_net: float) -> tuple[float, str]:
    """``T_one`` of the module docstring and the schedule that gives it: NCCL's all-reduce over every GPU
    (``"nccl"``) or the fastest grouped one on the site's own fabric (``"grouped"``), over every grouping a
    split could make (``k`` groups of whole domains, ``k`` dividing the domains: :func:`_grouped_s`), so the
    one site's figure is one figure whatever ``sites.count`` the split has (``site``: the cluster without its
    sites)."""
    flat = _in_site(site, message_bytes, site.n_gpus)
    n_domains = site.n_domains
    counts = [k for k in range(2, n_domains + 1) if n_domains % k == 0]
    grouped = min((_grouped_s(site, message_bytes, k, a_net) for k in counts), default=math.inf)
    return (flat, "nccl") if flat <= grouped else (grouped, "grouped")


def _grouped_s(site: ClusterSpec, message_bytes: float, groups: int, a_net: float) -> float:
    """The grouped schedule in one site over ``groups`` groups of ``N / groups`` GPUs, seconds: the
    groups' all-reduce (:func:`_in_site`) plus a ring over the groups at the NICs' rate with a network
    step ``a_net`` per hop (the module docstring's ``T_one``, second term)."""
    per_group = site.n_gpus // groups
    in_group = _in_site(site, message_bytes, per_group)
    nic = site.nic_effective_bytes_per_s
    return in_group + ring_all_reduce_time(message_bytes / per_group, groups, nic, hop_latency_s=a_net)


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
    k, per_site = st.count, spec.n_gpus // st.count
    cross_bw = min(spec.nic_effective_bytes_per_s, dci.efficiency * st.dci_bandwidth_bytes_per_s / per_site)
    fibre = fibre_delay_s(st.distance_km, s_per_km=dci.fibre_delay_s_per_km)
    site = spec.with_changes(sites=None)
    a_net = _network_step_s(site)
    in_site = _in_site(site, message_bytes, per_site)
    single, schedule = _single_site(site, message_bytes, a_net)
    return CrossSiteAllReduce(
        sites=k,
        in_site_s=in_site,
        cross_s=ring_all_reduce_time(message_bytes / per_site, k, cross_bw, hop_latency_s=a_net + fibre),
        cross_latency_s=2 * (k - 1) * fibre,
        cross_bytes_per_s=cross_bw,
        dci_oversubscription=per_site * spec.nic_line_rate_bytes_per_s / st.dci_bandwidth_bytes_per_s,
        single_site_s=single,
        single_site_schedule=schedule,
        cross_network_latency_s=2 * (k - 1) * a_net,
    )


@dataclass(frozen=True)
class LocalSgdSync:
    """Local SGD across sites: the outer all-reduce of the pseudo-gradient every ``inner_steps`` steps.

    ``outer`` times that all-reduce (on ``sync_bytes_ratio`` x the gradient's bytes); ``dp`` the data-parallel
    all-reduce of the gradient itself every step, for comparison.
    """

    inner_steps: int
    sync_bytes_ratio: float
    outer: CrossSiteAllReduce
    dp: CrossSiteAllReduce

    @property
    def cross_site_bytes_ratio(self) -> float:
        """Bytes over the DCI per inner step against data parallelism's: ``r / H``."""
        return self.sync_bytes_ratio / self.inner_steps

    @property
    def step_cost_s(self) -> float:
        """What the sites add to the outer all-reduce (its ``dp_step_cost_s``: over the same all-reduce in
        one site, DP's basis) spread over its inner steps, seconds per step (blocking sync, as INTELLECT-1
        runs it)."""
        return self.outer.dp_step_cost_s / self.inner_steps


def local_sgd_sync(
    spec: ClusterSpec, message_bytes: float, *, inner_steps: int, sync_bytes_ratio: float = 1.0
) -> LocalSgdSync:
    """The outer all-reduce of local SGD over ``spec.sites`` (module docstring: DiLoCo, INTELLECT-1).

    ``message_bytes`` is the gradient per GPU as data parallelism would all-reduce it; ``sync_bytes_ratio``
    the bytes sent per byte of it (int8 pseudo-gradients against fp32 gradients: 0.25).

    Raises
    ------
    ValueError
        If ``inner_steps`` is not in 1 .. :data:`MAX_INNER_STEPS`, ``sync_bytes_ratio`` is not in (0, 1] or
        ``message_bytes`` < 0.
    ConfigError
        As :func:`cross_site_all_reduce`.

    Examples
    --------
    INTELLECT-1's settings, 100 inner steps and int8 over fp32: 1/400 of DP's bytes over the DCI.

    >>> from aifabric.cluster.presets import preset
    >>> spec = preset("dgx-h100-superpod", nodes=64, sites={"distance_km": 50, "dci_bandwidth": "100 Tb/s"})
    >>> r = local_sgd_sync(spec, 40e9, inner_steps=100, sync_bytes_ratio=0.25)
    >>> 1 / r.cross_site_bytes_ratio
    400.0
    """
    if not 1 <= inner_steps <= MAX_INNER_STEPS:
        raise ValueError(f"inner_steps must be in 1 .. {MAX_INNER_STEPS:.0e}, got {inner_steps!r}")
    if not 0 < sync_bytes_ratio <= 1:
        raise ValueError(f"sync_bytes_ratio must be in (0, 1], got {sync_bytes_ratio!r}")
    dp = cross_site_all_reduce(spec, message_bytes)
    outer = cross_site_all_reduce(spec, message_bytes * sync_bytes_ratio)
    return LocalSgdSync(inner_steps, sync_bytes_ratio, outer, dp)


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
    >>> round(pp_boundary_time(spec, 64e6, tp=8) * 1e6, 1)  # 14 us step + 250 us fibre + 8 MB at 49.15 GB/s
    426.8
    """
    st = spec.sites
    if st is None:
        raise ConfigError("sites: this cluster is in one site")
    if activation_bytes < 0 or tp < 1:
        raise ValueError(f"need activation_bytes >= 0 and tp >= 1, got {activation_bytes!r}, {tp!r}")
    dci = catalog.dci(st.transport)
    bw = min(spec.nic_effective_bytes_per_s, dci.efficiency * st.dci_bandwidth_bytes_per_s / tp)
    fibre = fibre_delay_s(st.distance_km, s_per_km=dci.fibre_delay_s_per_km)
    return _network_step_s(spec) + fibre + activation_bytes / tp / bw

"""What aws-ofi-nccl's own tuner makes NCCL run on an EFA cluster of more than two nodes.

The plugin's region tables (:mod:`aifabric.catalog.aws_ofi_tuner`) name an (algorithm, protocol) per
collective, ranks per node, message size and rank count on p5 / p5e, p5en, p6-b200 and p6-b300; NCCL runs
it in place of its own tuner's pick. :func:`ofi_tuner_pick` finds it once NCCL's own candidates are
costed: the first region holding the call whose pair is among them (what ``NCCL_ALGO`` / ``NCCL_PROTO``,
``--algo`` / ``--proto`` and the transports leave).

The formula engine names the plugin's pick in its explanation (:func:`ofi_tuner_note`) but times NCCL's
own: the model's LL128 across EFA runs faster than p5 logs show where the tables pick it. On 4 and 8 x
p5.48xlarge at 32 MiB (tree/LL128, tests/engines/test_cases_public_multi9) it prices 125.1 and 113.7 GB/s
busbw against 100.19 and 89.62 measured, and on 4 nodes ring/LL128 at 1 GiB is 0.95 of ring/Simple at 2
GiB where the log steps from 280 to 347 (0.81), so the plugin's choice would move two public rows the
model meets now out of their bar until that LL128 cost is sized.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from aifabric.catalog.aws_ofi_nccl import efa_instance
from aifabric.catalog.aws_ofi_tuner import TunerRelease, region_choices, tuner_default, tuner_release
from aifabric.catalog.nccl import version_tuple
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.algorithms import ALGORITHMS, Cost
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import TierModel, runs_efa_plugin

__all__ = ["TunerPick", "ofi_tuner_note", "ofi_tuner_pick"]


#: What :func:`ofi_tuner_pick` finds: the pair's cost, the tables read, the instance they are for.
TunerPick = tuple[Cost, TunerRelease, str | None]


def ofi_tuner_pick(
    spec: ClusterSpec,
    tm: TierModel,
    op: Collective,
    message_bytes: float,
    comm: Communicator,
    evals: list[Cost],
    user_env: Mapping[str, str] | None,
) -> TunerPick | None:
    """The cost among ``evals`` (NCCL's tuner order) of the pair aws-ofi-nccl's region tuner picks for
    this call, with the tables and the instance it read; None where the plugin leaves the choice to NCCL:
    not EFA, a release whose tuner NCCL does not load by default (plugin below v1.16.0, NCCL below 2.21.5;
    on 2.21 the plugin's tuner v2 stands down under ``NCCL_ALGO`` / ``NCCL_PROTO``), <= 2 nodes, no table
    for the instance, layout or collective, a point in no region, or no region's pair among ``evals``.
    """
    release = _release(spec, tm, user_env) if comm.n_domains > 2 else None
    if release is None or spec.scale_out is None:
        return None
    so = spec.scale_out
    instance = efa_instance(spec.accelerator, so.nic, so.instance_type)
    choices = region_choices(release, instance, comm.n_ranks, comm.n_domains, op.value, message_bytes)
    if not choices:
        return None
    costed: dict[tuple[str, str], Cost] = {}
    for e in evals:
        if ALGORITHMS[e.algorithm].nccl:
            costed.setdefault((e.algorithm.value, e.protocol.value), e)
    pair = next((c for c in choices if c in costed), None)
    return None if pair is None else (costed[pair], release, instance)


def ofi_tuner_note(tuned: TunerPick | None, comm: Communicator, best: Cost) -> str | None:
    """The explanation's sentence on aws-ofi-nccl's region tuner, given its pick ``tuned``
    (:func:`ofi_tuner_pick`) for ``comm``: the pair it runs, its table, how to turn it off, and, where it
    differs from ``best`` (NCCL's own pick, which the figure stays on: module docstring), its time in this
    model; None where the tuner leaves the call to NCCL (``tuned`` None).

    >>> from aifabric.cluster.spec import ClusterSpec
    >>> from aifabric.engines.formula import formula_collective
    >>> p5 = ClusterSpec.model_validate({"accelerator": "h100-sxm", "nodes": 4, "scale_out": {"nic": "efa-v2",
    ...     "nics_per_gpu": 4, "planes": 4, "transport": "efa-srd", "fabric": "ethernet",
    ...     "switch": "spectrum-4-sn5600-400g"}})
    >>> r = formula_collective("all_reduce", 2**30, p5, nccl_version="2.28.7")
    >>> r.algorithm, r.protocol, "region tuner runs ring/LL128" in r.explanation
    ('nvls_tree', 'Simple', True)
    """
    if tuned is None:
        return None
    cost, release, instance = tuned
    pair = f"{cost.algorithm.value}/{cost.protocol.value}"
    same = (cost.algorithm, cost.protocol) == (best.algorithm, best.protocol)
    timed = (
        "; NCCL's own tuner picks it too"
        if same
        else f"; it runs in {cost.time_s * 1e6:.1f} us here, but the figure stays on NCCL's own pick, as the "
        "model's LL128 across EFA runs faster than p5 logs show"
    )
    return (
        f"aws-ofi-nccl's region tuner runs {pair} for this call ({release.source}, the {instance} table for "
        f"{comm.n_ranks} ranks on {comm.n_domains} nodes; OFI_NCCL_TUNER_TYPE=Internal turns it off){timed}"
    )


def _release(spec: ClusterSpec, tm: TierModel, user_env: Mapping[str, str] | None) -> TunerRelease | None:
    """The tuner tables NCCL runs on ``spec`` by default, None where it runs none (see
    :func:`ofi_tuner_pick`)."""
    if not runs_efa_plugin(spec) or spec.scale_out is None:
        return None
    env = user_env or {}
    named = "NCCL_ALGO" in env or "NCCL_PROTO" in env
    return _loaded(tm.nccl_version or tm.release.version, named, spec.scale_out.ofi_nccl_version)


@lru_cache(maxsize=256)
def _loaded(nccl_version: str, algo_or_proto: bool, ofi_version: str | None) -> TunerRelease | None:
    """:func:`_release` by plain values: the plugin's tables where NCCL ``nccl_version`` loads its tuner
    (``nccl_loads_from``; before ``cost_table_from``, tuner v2, not under ``NCCL_ALGO`` / ``NCCL_PROTO``).
    Optimisation: the formula engine asks on every call across > 2 EFA nodes."""
    default = tuner_default()
    nccl = version_tuple(nccl_version)
    if nccl < version_tuple(default["nccl_loads_from"]):
        return None
    if algo_or_proto and nccl < version_tuple(default["cost_table_from"]):
        return None
    return tuner_release(ofi_version)

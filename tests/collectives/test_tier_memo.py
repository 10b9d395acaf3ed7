"""The formula engine's caches change no result (issue 8, Speed): a shared tier model whose memo was filled
by calls at other sizes gives exactly what a new model gives, over random clusters, communicators,
collectives, sizes and NCCL settings; the shared model follows the catalogue."""

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from aifabric.catalog.loader import catalog_generation, reload_catalog
from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import tier_model
from aifabric.engines.formula import formula_collective

CLUSTERS = ["h100-ib-2node", "dgx-h100-superpod", "megatron-a100", "gb200-nvl72", "v100-pcie-4gpu", "lesson"]
#: NCCL settings that leave the tier model's arguments alone (those that shape it cannot take tiers=)
ENVS = [
    None,
    {"NCCL_ALGO": "ring"},
    {"NCCL_PROTO": "LL,Simple"},
    {"NCCL_NVLS_ENABLE": "0"},
    {"NCCL_P2P_DISABLE": "1"},
]


@st.composite
def cases(draw):
    """A random cluster, communicator (contiguous, strided or explicit GPUs), collective, NCCL setting."""
    name = draw(st.sampled_from(CLUSTERS))
    base = preset(name)
    domains = draw(st.integers(1, 4)) if base.scale_out is not None else 1
    spec = preset(name, gpus=domains * base.domain_gpus)
    kind = draw(st.sampled_from(["all", "contiguous", "stride", "gpus"]))
    n = spec.n_gpus
    if kind == "all":
        comm = Communicator.contiguous(spec)
    elif kind == "contiguous":
        comm = Communicator.contiguous(spec, draw(st.integers(1, n)))
    elif kind == "stride":
        stride = draw(st.integers(1, max(1, n // 2)))
        comm = Communicator.contiguous(spec, draw(st.integers(1, (n - 1) // stride + 1)), stride=stride)
    else:
        comm = Communicator.from_gpus(
            spec, draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=40, unique=True))
        )
    op = draw(st.sampled_from(list(Collective)))
    return spec, comm, op, draw(st.sampled_from(ENVS)), draw(st.sampled_from([None, "2.21", "2.27", "2.30"]))


def _outcome(op, size, spec, comm, tiers, env):
    try:
        return formula_collective(op, size, spec, comm, tiers=tiers, env=env).to_dict()
    except (ValueError, LookupError) as err:  # ConfigError is a ValueError
        return f"{type(err).__name__}: {err}"


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    case=cases(),
    sizes=st.lists(st.floats(min_value=1.0, max_value=1e11), min_size=2, max_size=4),
    efficiency=st.sampled_from(["nccl", "line_rate"]),
)
def test_shared_tier_model_gives_what_a_new_one_gives(case, sizes, efficiency):
    spec, comm, op, env, version = case
    shared = tier_model(spec, efficiency=efficiency, nccl_version=version)
    for size in sizes:  # the memo, filled by the earlier sizes, holds nothing that depends on the size
        fresh = tier_model.__wrapped__(spec, efficiency=efficiency, nccl_version=version)
        assert _outcome(op, size, spec, comm, shared, env) == _outcome(op, size, spec, comm, fresh, env)


def test_tier_model_is_shared_per_arguments_and_rebuilt_when_the_catalogue_changes():
    spec = preset("h100-ib-2node")
    tm = tier_model(spec)
    assert tier_model(spec) is tm
    assert tier_model(spec, efficiency="line_rate") is not tm
    assert tier_model(spec) == tier_model.__wrapped__(spec)
    before = catalog_generation()
    reload_catalog()
    assert catalog_generation() != before
    assert tier_model(spec) is not tm  # a catalogue change may change every figure: built again
    assert tier_model(spec) == tm


def test_replace_starts_an_empty_memo():
    spec = preset("h100-ib-2node")
    tm = tier_model(spec)
    comm = Communicator.contiguous(spec)
    formula_collective("all_reduce", 2**30, spec, comm, tiers=tm)
    assert tm.memo("probe", lambda: 1) == 1 and tm.memo("probe", lambda: 2) == 1
    slower = dataclasses.replace(tm, nic_bytes_per_s=tm.nic_bytes_per_s / 2)
    assert slower.memo("probe", lambda: 2) == 2
    fast = formula_collective("all_reduce", 2**30, spec, comm, tiers=tm)
    slow = formula_collective("all_reduce", 2**30, spec, comm, tiers=slower)
    assert slow.time_s > fast.time_s  # nothing of the first model's memo leaks into the second


def test_a_call_without_environment_found_again_gives_what_the_first_gave():
    """A call without an NCCL environment is found again by its spec's identity (formula's plain
    transports): the answer is the first call's, for a spec built anew too, on an EFA cluster and after a
    catalogue change; where the cluster's aws-ofi-nccl sets NCCL_NVLS_ENABLE=0 (with NCCL 2.18.3,
    :func:`aifabric.collectives.nccl_env.plugin_env`) the call still runs without NVLS."""
    p5 = {"accelerator": "h100-sxm", "nodes": 2, "scale_out": {"nic": "efa-v2", "nics_per_gpu": 4,
          "planes": 4, "transport": "efa-srd", "fabric": "ethernet",
          "switch": "spectrum-4-sn5600-400g"}}  # fmt: skip
    makers = (lambda: preset("dgx-h100-superpod", nodes=4), lambda: ClusterSpec.model_validate(p5))
    for make, version in [(m, v) for m in makers for v in (None, "2.18.3")]:
        spec = make()
        reload_catalog()
        first = formula_collective("all_reduce", 2**30, spec, nccl_version=version).to_dict()
        assert formula_collective("all_reduce", 2**30, spec, nccl_version=version).to_dict() == first
        assert formula_collective("all_reduce", 2**30, make(), nccl_version=version).to_dict() == first
        assert formula_collective("all_reduce", 2**30, spec, env={}, nccl_version=version).to_dict() == first
    assert not first["algorithm"].startswith("nvls")  # the last: p5 with 2.18.3, NVLS off by the plugin

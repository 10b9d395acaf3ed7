"""The formula engine reads a stated NCCL environment once per distinct mapping (issue 8, Speed): the kept
reading gives exactly what a fresh one gives, errors included, over random environments, clusters and
collectives; values equal but of another type (``1``, ``True``, ``"1"``) are read apart."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aifabric.catalog.transport import NcclEnv
from aifabric.cluster.presets import preset
from aifabric.collectives import nccl_env
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.nccl_env import env_choice, parse_env
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import tier_model
from aifabric.engines.formula import formula_collective
from aifabric.errors import ConfigError

#: Values each variable may take here: valid ones, bad ones and other types than str.
VALUES = {
    "NCCL_ALGO": ["ring", "Tree", "nvls,ring", "^nvls", "allreduce:tree;ring", "bogus"],
    "NCCL_PROTO": ["Simple", "LL,LL128", "^LL", "ll7"],
    "NCCL_NVLS_ENABLE": ["0", "1", "2", 0, "3"],
    "NCCL_P2P_DISABLE": ["0", "1", 1, True],
    "NCCL_SHM_DISABLE": ["1", "0"],
    "NCCL_NET_GDR_LEVEL": ["LOC", "PHB", "SYS", "nowhere"],
    "NCCL_MAX_NCHANNELS": ["8", "32", "0"],
    "NCCL_IB_QPS_PER_CONNECTION": ["2", 4],
    "NCCL_COLLNET_ENABLE": ["0", "1"],
    "NCCL_SOCKET_IFNAME": ["eth0"],  # not modelled: refused
}
CLUSTERS = ["h100-ib-2node", "gb200-nvl72", "aws-p4d", "v100-pcie-4gpu", "tpu-v5p-pod"]

envs = st.dictionaries(st.sampled_from(sorted(VALUES)), st.none(), min_size=1, max_size=4).flatmap(
    lambda names: st.fixed_dictionaries({n: st.sampled_from(VALUES[n]) for n in names})
)


def _fresh(env):
    """The reading without the kept ones (what parse_env did before it kept them)."""
    nccl_env._check(env)
    return NcclEnv.from_mapping(env)


def _outcome(call):
    try:
        out = call()
    except (ValueError, LookupError, AttributeError) as err:  # ConfigError is a ValueError
        return f"{type(err).__name__}: {err}"
    return out.to_dict() if hasattr(out, "to_dict") else out


def _clear() -> None:
    nccl_env._read.cache_clear()
    nccl_env._choice.cache_clear()


@settings(max_examples=80, deadline=None, derandomize=True)
@given(env=envs, op=st.sampled_from(list(Collective)))
def test_kept_reading_is_the_fresh_reading(env, op):
    fresh = _outcome(lambda: _fresh(env))
    for _ in range(2):  # the second call reads the kept one
        assert _outcome(lambda: parse_env(env)) == fresh
        assert _outcome(lambda: env_choice(env, op)) == _outcome(
            lambda: nccl_env._choice.__wrapped__(_fresh(env), op)
        )


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    env=envs,
    name=st.sampled_from(CLUSTERS),
    op=st.sampled_from(list(Collective)),
    size=st.floats(min_value=1.0, max_value=1e10),
)
def test_formula_with_kept_readings_gives_what_fresh_readings_give(env, name, op, size):
    spec = preset(name)
    comm = Communicator.contiguous(spec)
    warm = [_outcome(lambda: formula_collective(op, size, spec, comm, env=env)) for _ in range(2)]
    _clear()
    cold = _outcome(lambda: formula_collective(op, size, spec, comm, env=env))
    assert warm[0] == warm[1] == cold


def test_values_equal_across_types_are_read_apart():
    # 1 == True, but NCCL reads the text: "True" is no flag (NcclEnv._flag), 1 and "1" are.
    assert parse_env({"NCCL_P2P_DISABLE": 1}).p2p_disable
    with pytest.raises(ConfigError, match="NCCL_P2P_DISABLE: expected 0 or 1, got 'True'"):
        parse_env({"NCCL_P2P_DISABLE": True})
    assert parse_env({"NCCL_P2P_DISABLE": "1"}).p2p_disable


def test_unknown_variable_named_first_as_given():
    with pytest.raises(ConfigError, match="^NCCL_B:"):
        parse_env({"NCCL_B": "1", "NCCL_A": "1"})
    with pytest.raises(ConfigError, match="^NCCL_A:"):
        parse_env({"NCCL_A": "1", "NCCL_B": "1"})


def test_tier_model_of_an_equal_spec_is_an_equal_model():
    # tier_model finds a recent spec's model by identity, another spec's by value: both give equal models
    spec = preset("h100-ib-2node")
    again = preset("h100-ib-2node")
    assert spec == again and spec is not again
    assert tier_model(spec) is tier_model(spec)
    assert tier_model(again) == tier_model(spec) == tier_model.__wrapped__(spec)

"""The formula engine keeps what a call's NCCL environment resolves to (``formula._env_options``): a call
found again gives exactly what reading its environment afresh gives, for the variables that restrict the
choice (NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE) and one that shapes the tier model (NCCL_MIN_NCHANNELS),
on clusters with and without NVLS and on EFA, where aws-ofi-nccl sets a variable beneath the user's; a
refused environment is refused again; the user's mapping is not kept, and a value is told from an equal
one of another type."""

import pytest

from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.tiers import tier_model
from aifabric.engines import formula
from aifabric.engines.formula import formula_collective

#: p5.48xlarge: aws-ofi-nccl on EFA sets NCCL_NVLS_ENABLE=0 beneath NCCL 2.18.3 (nccl_env.plugin_env).
P5 = {"accelerator": "h100-sxm", "nodes": 4, "scale_out": {"nic": "efa-v2", "nics_per_gpu": 4,
      "transport": "efa-srd", "fabric": "ethernet", "switch": "spectrum-4-sn5600-400g"}}  # fmt: skip
CLUSTERS = {
    "superpod": (lambda: preset("dgx-h100-superpod", nodes=4), None),
    "one-node": (lambda: preset("h100-ib-2node", nodes=1), None),
    "p5-2.18.3": (lambda: ClusterSpec.model_validate(P5), "2.18.3"),
}
ENVS = [
    None,
    {"NCCL_ALGO": "ring"},
    {"NCCL_ALGO": "ring,tree", "NCCL_PROTO": "Simple,LL128"},
    {"NCCL_PROTO": "Simple,LL128", "NCCL_ALGO": "ring,tree"},  # the same, in the other order
    {"NCCL_ALGO": "^nvls,nvlstree"},
    {"NCCL_ALGO": "nvls"},  # refused where there is no NVLS and the release runs no ring instead
    {"NCCL_PROTO": "LL"},
    {"NCCL_PROTO": "allreduce:LL"},  # per collective (NCCL >= 2.24): all_gather keeps every protocol
    {"NCCL_ALGO": "allgather:ring;allreduce:tree"},
    {"NCCL_NVLS_ENABLE": "0"},
    {"NCCL_NVLS_ENABLE": "1"},
    {"NCCL_MIN_NCHANNELS": "32"},
    {"NCCL_MIN_NCHANNELS": "4", "NCCL_MAX_NCHANNELS": "8", "NCCL_ALGO": "ring"},
    {"NCCL_MIN_NCHANNELS": "many"},  # refused: not an integer
]
OPS = [("all_reduce", 2**30), ("all_gather", 2**20), ("reduce_scatter", 4096)]


def _call(op, size, spec, env, version, tiers):
    """The result's fields, or the refusal's one line."""
    comm = Communicator.contiguous(spec)
    try:
        return formula_collective(op, size, spec, comm, env=env, nccl_version=version, tiers=tiers).to_dict()
    except (ValueError, LookupError) as err:  # ConfigError is a ValueError
        return f"{type(err).__name__}: {err}"


def _read_afresh(op, size, spec, env, version, tiers):
    """:func:`_call` with nothing kept: the environment read, checked and resolved anew."""
    formula._env_kept.clear()
    return _call(op, size, spec, env, version, tiers)


def _not_read(*args, **kwargs):
    raise AssertionError("the environment was read again: the call was not found")


@pytest.mark.parametrize("given_tiers", [False, True], ids=["cold", "tiers"])
@pytest.mark.parametrize("cluster", CLUSTERS)
@pytest.mark.parametrize("env", ENVS, ids=str)
def test_a_call_found_again_gives_what_reading_its_environment_afresh_gives(
    env, cluster, given_tiers, monkeypatch
):
    make, version = CLUSTERS[cluster]
    spec = make()
    tiers = (
        tier_model(spec, nccl_version=version) if given_tiers else None
    )  # with NCCL_MIN_NCHANNELS: refused
    fresh = [_read_afresh(op, size, spec, env, version, tiers) for op, size in OPS]
    formula._env_kept.clear()
    assert [_call(op, size, spec, env, version, tiers) for op, size in OPS] == fresh  # kept; refusals again
    monkeypatch.setattr(formula, "_read_options", _not_read)
    answered = [(op, size, f) for (op, size), f in zip(OPS, fresh, strict=True) if isinstance(f, dict)]
    assert [_call(op, size, spec, env, version, tiers) for op, size, _ in answered] == [
        f for *_, f in answered
    ]


def test_the_users_mapping_is_read_not_kept():
    """A mapping changed after a call gives the new setting's answer, and the old setting its own again."""
    spec = preset("dgx-h100-superpod", nodes=4)
    env = {"NCCL_ALGO": "ring"}
    ring = formula_collective("all_reduce", 2**30, spec, env=env).to_dict()
    env["NCCL_ALGO"] = "tree"
    tree = formula_collective("all_reduce", 2**30, spec, env=env).to_dict()
    assert (ring["algorithm"], tree["algorithm"]) == ("ring", "tree")
    assert formula_collective("all_reduce", 2**30, spec, env={"NCCL_ALGO": "ring"}).to_dict() == ring


def test_an_integer_flag_kept_does_not_answer_for_a_boolean():
    """``1 == True`` and they hash alike, but NCCL_NVLS_ENABLE reads 1 and refuses ``True`` (its str is
    no NCCL flag): the kept answer of 1 must not be returned for True."""
    spec = preset("h100-ib-2node", nodes=1)
    assert formula_collective("all_reduce", 2**30, spec, env={"NCCL_NVLS_ENABLE": 1}).algorithm == "nvls"
    with pytest.raises(ValueError, match="NCCL_NVLS_ENABLE: expected an integer"):
        formula_collective("all_reduce", 2**30, spec, env={"NCCL_NVLS_ENABLE": True})

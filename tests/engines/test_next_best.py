"""The explanation's "Next best" lists what NCCL runs; a faster algorithm NCCL does not run (hierarchical) is
named apart with the option that forces it, and the JSON candidates say ``nccl_runs`` (trial 8, defect 5)."""

import json

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.engines.formula import formula_collective

runner = CliRunner()


def _one_nic_p4d():
    # aws-p4d with one EFA NIC for the node's 8 GPUs instead of one per 2
    spec = preset("aws-p4d")
    assert spec.scale_out is not None
    return spec.model_copy(update={"scale_out": spec.scale_out.model_copy(update={"gpus_per_nic": 8})})


# 4 NICs: 3 nodes, where NCCL's pick is the ring; on 2 nodes its tree (S per direction through the NICs,
# NVIDIA/nccl #527: 35.2 ms at 1 GiB) beats hierarchical (44.3 ms) and there is no faster unrun algorithm
@pytest.mark.parametrize("spec", [preset("aws-p4d", nodes=3), _one_nic_p4d()], ids=["4-nics", "1-nic"])
def test_faster_hierarchical_is_not_called_next_best(spec):
    r = formula_collective("all_reduce", 2**30, spec)
    hier = next(c for c in r.candidates if c.algorithm == "hierarchical")
    picked = next(c for c in r.candidates if c.algorithm == r.algorithm and c.protocol == r.protocol)
    assert picked.nccl_runs and not hier.nccl_runs
    assert hier.time_s < r.time_s  # the case the trial found: faster, yet NCCL never runs it
    next_best, unrun = r.explanation.split(". Next best: ")[1].split(". Faster but not run by NCCL: ")
    assert "hierarchical" not in next_best
    assert unrun.startswith(
        f"hierarchical/Simple {hier.time_s * 1e6:.1f} us (force it with --algo hierarchical)"
    )


def test_json_candidates_say_whether_nccl_runs_them():
    r = runner.invoke(app, ["collective", "-c", "aws-p4d", "-s", "1GiB", "--json"])
    assert r.exit_code == 0, r.stderr
    runs = {c["algorithm"]: c["nccl_runs"] for c in json.loads(r.stdout)[0]["candidates"]}
    assert runs["ring"] is True and runs["tree"] is True and runs["hierarchical"] is False


def test_a_forced_hierarchical_lists_its_own_protocols():
    r = formula_collective("all_reduce", 2**30, preset("aws-p4d"), algorithm="hierarchical")
    assert r.algorithm == "hierarchical" and "not run by NCCL" not in r.explanation

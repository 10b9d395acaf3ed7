"""Training steps on the real fabric (aifabric.training.fabric_step): placement, routing, shared fabric."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.errors import ConfigError
from aifabric.training import ParallelLayout, get_model
from aifabric.training.fabric_step import fabric_step
from aifabric.training.step import StepOptions

LLAMA8 = get_model("llama3-8b")
# DP-heavy: TP inside the node, 16-way DP across nodes, the gradient reduction after the backward pass.
DP_HEAVY = ParallelLayout(
    tp=8, dp=16, microbatch_size=1, global_batch_size=16, recompute="selective", zero_stage=1
)
NO_OVERLAP = StepOptions(overlap_grad_reduce=False)


@pytest.fixture(scope="module")
def eight_jobs():
    """Eight 16-node jobs on 128 DGX H100 nodes (the Meta story of tests/engines/test_fabric.py)."""
    spec = preset("dgx-h100-superpod", nodes=128)
    return {
        (pl, ro): fabric_step(
            LLAMA8, DP_HEAVY, spec, jobs=8, placement=pl, routing=ro, seed=1, options=NO_OVERLAP
        )
        for pl, ro in (("packed", "ecmp"), ("fragmented", "ecmp"), ("fragmented", "spray"))
    }


def test_fragmented_ecmp_slows_the_dp_step_and_spraying_recovers_it(eight_jobs):
    packed, frag, spray = (
        eight_jobs[k] for k in [("packed", "ecmp"), ("fragmented", "ecmp"), ("fragmented", "spray")]
    )
    # Packed on whole leaves, each DP ring keeps to its rail: the formula engine's time.
    assert packed.dp_slowdowns == pytest.approx((1.0,) * 8, abs=0.01)
    assert all(st.step_s == pytest.approx(packed.formula.step_s, rel=0.01) for st in packed.steps)
    # Scattered over the leaves, flows hash onto the same spine links: every job's reduction is >= 1.5x
    # slower (model: 2-3x) and so is its step.
    assert min(frag.dp_slowdowns) > 1.5
    assert all(st.step_s > 1.2 * frag.formula.step_s for st in frag.steps)
    # Packet spraying spreads every flow over all spines: back to the formula engine's time.
    assert spray.dp_slowdowns == pytest.approx((1.0,) * 8, abs=0.01)


def test_two_jobs_on_an_oversubscribed_zone_slow_each_other():
    # 64 nodes behind 4:1 oversubscribed leaves, nodes spread over the leaves, packet spraying: one job's
    # reduction fits the uplinks; a second identical job doubles the load on them (model: 1.99x each).
    spec = preset("dgx-h100-superpod", nodes=64, **{"scale_out.oversubscription": [4]})
    kw = dict(placement="spread", routing="spray", seed=1, options=NO_OVERLAP)
    one = fabric_step(LLAMA8, DP_HEAVY, spec, jobs=1, **kw)  # type: ignore[arg-type]
    two = fabric_step(LLAMA8, DP_HEAVY, spec, jobs=2, **kw)  # type: ignore[arg-type]
    assert one.dp_slowdowns == pytest.approx((1.0,), abs=0.01)
    assert min(two.dp_slowdowns) > 1.8
    assert min(st.step_s for st in two.steps) > one.steps[0].step_s * 1.2


def test_fabric_step_bad_input():
    spec = preset("dgx-h100-superpod", nodes=16)
    with pytest.raises(ConfigError, match="jobs: 2 jobs x 16 nodes do not fit the 16 nodes"):
        fabric_step(LLAMA8, DP_HEAVY, spec, jobs=2)
    with pytest.raises(ConfigError, match="dp=1: a layout without data parallelism"):
        fabric_step(LLAMA8, ParallelLayout(tp=8, global_batch_size=1), preset("dgx-h100-superpod", nodes=1))
    with pytest.raises(ConfigError, match="engine: a fabric step runs on the flow or links engine"):
        fabric_step(LLAMA8, DP_HEAVY, spec, engine="formula")
    with pytest.raises(ConfigError, match="placement: unknown placement 'scattered'"):
        fabric_step(LLAMA8, DP_HEAVY, spec, placement="scattered")


runner = CliRunner()


def test_cli_train_on_the_flow_engine():
    args = ["train", "-m", "llama3-8b", "--nodes", "32", "--tp", "8", "--global-batch", "16",
            "--no-overlap-grad-reduce", "--engine", "flow", "--placement", "packed", "--routing", "spray",
            "--jobs", "2", "--json"]  # fmt: skip
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["layout"]["dp"] == 16 and data["n_gpus"] == 128  # one job: 32 nodes / 2 jobs
    fab = data["fabric"]
    assert fab["placement"] == "packed" and fab["routing"] == "spray" and len(fab["slowdowns"]) == 2
    r = runner.invoke(app, ["train", "-m", "llama3-8b", "--nodes", "2", "--tp", "8", "--placement", "packed"])
    assert r.exit_code == 2
    assert (
        r.stderr.strip()
        == "error: --placement: the formula engine does not take this option (use --engine flow or links)"
    )


def test_moe_step_ep_and_pp_traffic_on_the_fabric():
    # Mixtral 8x7B, EP 8 across nodes (order tp-cp-dp-ep-pp), PP 2, eight 16-node jobs on 128 nodes: the
    # expert all-to-all and the stage-to-stage sends share the spine like the gradients do. Packed or
    # sprayed: no slowdown; fragmented with ECMP: every dimension slower (model: DP x2.9, EP x1.6, PP x4.0).
    model, spec = get_model("mixtral-8x7b"), preset("dgx-h100-superpod", nodes=128)
    lay = ParallelLayout(tp=2, pp=2, dp=32, ep=8, sequence_parallel=True, microbatch_size=1,
                         global_batch_size=64, recompute="full", zero_stage=1,
                         order="tp-cp-dp-ep-pp")  # fmt: skip
    packed = fabric_step(model, lay, spec, jobs=8, placement="packed", routing="ecmp", seed=1)
    frag = fabric_step(model, lay, spec, jobs=8, placement="fragmented", routing="ecmp", seed=1)
    spray = fabric_step(model, lay, spec, jobs=8, placement="fragmented", routing="spray", seed=1)
    assert set(packed.slowdowns[0]) == {"dp", "ep", "pp"}
    for fs in (packed, spray):
        assert all(k == pytest.approx(1.0, abs=0.01) for slow in fs.slowdowns for k in slow.values())
    assert all(slow["ep"] > 1.2 and slow["pp"] > 1.2 for slow in frag.slowdowns)
    assert all(st.breakdown_s["ep"] > frag.formula.breakdown_s["ep"] for st in frag.steps)
    assert all(st.breakdown_s["pp"] > frag.formula.breakdown_s["pp"] for st in frag.steps)

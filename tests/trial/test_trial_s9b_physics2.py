"""Physics defects a trial of "the other half" found (scale-across, storage, transport): each test runs
one command; its docstring holds the command, what it printed and what the
physics (or the cited source) says it should do."""

import pytest
from tests.trial.commands import result_json
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py


def test_scale_across_charges_the_in_site_all_reduce_its_latency():
    """``aifabric scale-across --nodes 64 --distance "50 km" --dci "10 Tb/s" --message "1 KB" --json``
    printed in_site_s 9.6e-9 and single_site_s 9.7e-9: a 1 KB all-reduce over 512 GPUs in 64 nodes in
    10 ns (light covers 2 m in that time). ``collectives.scale_across._in_site`` sums ring bandwidth terms
    only, with no hop latency. The same all-reduce, ``aifabric collective all_reduce -c
    spectrum-xgs-2-sites --nodes 64 --size 1KB``, is 76.8 us (tree/LL, latency 75.2 us from NCCL's
    tuning.cc constants). The in-site part of a cross-site all-reduce cannot beat one NCCL network hop
    (NCCL's NET latency, several us)."""
    args = ["scale-across", "--nodes", "64", "--distance", "50 km", "--dci", "10 Tb/s", "--message", "1 KB"]
    out = result_json(args)
    assert out["single_site_s"] >= 5e-6, out
    assert out["in_site_s"] >= 5e-6, out


def test_dcqcn_phase_margin_only_falls_as_the_feedback_delay_grows():
    """``aifabric transport stability --delay "200 us" --delay "500 us" --flows 2 --json`` gave, for one flow
    (N = 1) under the paper's linearisation, a phase margin of -61.9 deg at 200 us and +153.2 deg at 500 us,
    and its summary read "500 us, paper: unstable for N = 2-50": one flow is called stable at 500 us of
    feedback delay though it is unstable at 100 and 200 us. A pure delay e^(-s tau) leaves the loop gain
    unchanged and subtracts omega tau of phase at the crossover (Zhu et al., "ECN or Delay", CoNEXT'16,
    Sec. 4: DCQCN's margin shrinks as the delay grows), so the margin is monotone non-increasing in tau; the
    +153 deg is -206.8 deg wrapped by 360 deg."""
    out = result_json(["transport", "stability", "--delay", "200 us", "--delay", "500 us", "--flows", "2"])
    for model in ("exact", "paper"):
        short, long_ = (d[model]["phase_margin_deg"] for d in out["delays"])
        for n, (m_short, m_long) in enumerate(zip(short, long_, strict=True), start=1):
            assert m_long <= m_short, (model, n, m_short, m_long)
        assert out["delays"][1][model]["unstable_flows"] == [[1, 2]], (model, out["delays"][1][model])


def test_young_daly_is_not_said_to_hold_when_the_interval_exceeds_the_mtbf():
    """``aifabric checkpoint --nodes 16 -m llama3-70b --tp 8 --pp 2 --storage ddn-ai400x2-turbo
    --storage-units 1 --mtbf "1 s" --json`` gave interval_async_s 12.35 (the async drain, 61.7 GB per node at
    5 GB/s), young_daly_holds_async true and goodput_lost_async 1.0: the model is said to hold for a
    checkpoint every 12 s when the job fails every second, and loses all its goodput. Young (CACM 1974) and
    Daly (FGCS 22, 2006) assume the checkpoint cost and the interval are small against the MTBF (Daly's
    estimate applies for a cost under 2 M, and gives an interval of M beyond), so "holds" cannot be true with
    an interval 12x the MTBF, nor next to a goodput loss of 100%."""
    args = ["checkpoint", "--nodes", "16", "-m", "llama3-70b", "--tp", "8", "--pp", "2"]
    args += ["--storage", "ddn-ai400x2-turbo", "--storage-units", "1", "--mtbf", "1 s"]
    out = result_json(args)
    assert out["interval_async_s"] > 1.0, out["interval_async_s"]
    assert out["young_daly_holds_async"] is False, out


def test_data_loading_beyond_the_storage_rate_is_flagged():
    """``aifabric checkpoint --nodes 16 -m llama3-70b --tp 8 --pp 2 --storage ddn-ai400x2-turbo
    --storage-units 4 --step-time "0.001 s" --data-per-step "10 TB"`` printed "data loading: 1e+07 GB/s
    needed of 320 GB/s (3125000.00%; limit: file system aggregate)" and nothing else about it, while the
    same command warns when the Young/Daly interval leaves its model ("warning: the sync interval is not
    longer than one checkpoint"). 10 TB per step read at 320 GB/s (4 x 80 GB/s, DDN's per-appliance figure
    in catalog/data/storage.yaml) takes 31 s, not 1 ms: the step time given cannot be met, and the async
    drain line beside it ("overlaps 3086.72 training steps") rests on that impossible step. A need above
    100% of the rate must come with a warning naming data loading."""
    args = ["checkpoint", "--nodes", "16", "-m", "llama3-70b", "--tp", "8", "--pp", "2"]
    args += ["--storage", "ddn-ai400x2-turbo", "--storage-units", "4"]
    args += ["--step-time", "0.001 s", "--data-per-step", "10 TB"]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.stdout + r.stderr
    warnings = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.startswith("warning")]
    assert any("data" in ln for ln in warnings), r.stdout + r.stderr

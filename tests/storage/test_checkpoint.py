"""Checkpoints on the front-end: size, write/restore time and bottleneck, async, Young/Daly, CLI."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.errors import ConfigError
from aifabric.storage import (
    checkpoint_size,
    checkpoint_time,
    goodput_lost_fraction,
    young_daly_interval_s,
    young_daly_outside,
)
from aifabric.storage.checkpoint import check_state_fits
from aifabric.storage.dataload import data_loading
from aifabric.storage.interval import series_mtbf_s
from aifabric.storage.paths import node_path


def _dgx(nodes: int, units: int = 4, **changes):
    return preset(
        "dgx-h100-superpod", nodes=nodes, storage={"system": "ddn-ai400x2-turbo", "units": units}, **changes
    )


def test_hand_derived_checkpoint_write():
    # 70e9 params x (2 bf16 + 12 fp32 master/m/v) = 980 GB. 16 DGX H100 nodes, TP 8 PP 2 DP 8, ZeRO-1:
    # all 128 GPUs write, 980 / 16 = 61.25 GB per node. Stages per node: PCIe Gen5 8 x 57.6 GB/s = 461 GB/s
    # (64 GB/s x DMA payload efficiency 128/130 x 256/280 = 0.9002, catalogue pcie-gen5);
    # 2 x BlueField-3 400 Gb/s x 0.96 = 96 GB/s; DDN per client 96 GB/s; 4 AI400X2-Turbo x 80 GB/s
    # = 320 GB/s / 16 nodes = 20 GB/s <- bottleneck. Time = 980 GB / 320 GB/s = 3.0625 s.
    size = checkpoint_size(70e9, tp=8, pp=2, dp=8)
    assert size.total_bytes == pytest.approx(980e9)
    res = checkpoint_time(_dgx(16), size)
    assert res.write.bottleneck == "file system aggregate"
    assert res.write.seconds == pytest.approx(3.0625, rel=0.01)
    # async: training stops for 61.25 GB / 8 GPUs = 7.66 GB per GPU over PCIe Gen5 (64 GB/s x 0.9002 of
    # 256-B TLPs = 57.6 GB/s) = 0.1329 s
    assert res.async_copy_s == pytest.approx(61.25e9 / 8 / (64e9 * 0.9002), rel=0.01)
    assert res.drain_steps(5.0) == pytest.approx(3.0625 / 5, rel=0.01)


def test_without_zero_one_replica_writes_and_nics_bind():
    # ZeRO-0, TP 8 PP 2: one DP replica = 16 GPUs = 2 nodes write 490 GB each; 40 appliances = 3.2 TB/s / 2
    # nodes -> the node's 2 x 400G front-end NICs (96 GB/s) bind: 490 / 96 = 5.104 s.
    size = checkpoint_size(70e9, tp=8, pp=2, dp=8, zero_stage=0)
    res = checkpoint_time(_dgx(16, units=40), size)
    assert res.writer_nodes == 2
    assert res.write.bottleneck == "node front-end NICs"
    assert res.write.seconds == pytest.approx(490e9 / 96e9, rel=0.01)


def test_bounce_buffer_without_gds():
    # Without GDS the data crosses host memory, 50 GB/s per node (NVIDIA GPUDirect Storage blog, DGX-2)
    size = checkpoint_size(70e9, tp=8, pp=2, dp=8, zero_stage=0)
    res = checkpoint_time(_dgx(16, units=40), size, gds=False)
    assert res.write.bottleneck == "host bounce buffer (no GDS)"
    assert res.write.seconds == pytest.approx(490e9 / 50e9, rel=0.01)


def test_front_end_oversubscription_is_a_stage():
    spec = _dgx(16, units=40, **{"front_end.oversubscription": 4})
    res = checkpoint_time(spec, checkpoint_size(70e9, tp=8, pp=2, dp=8, zero_stage=0))
    assert res.write.bottleneck == "front-end fabric (leaf uplinks)"
    assert res.write.rate_bytes_per_s == pytest.approx(96e9 / 4)


def test_ddn_dgx_b200_published_per_node_rate():
    # DDN blog (DGX B200 with several AI400X2-Turbo): "up to 96% network utilization per DGX-B200,
    # saturating nearly 100 GB/s (800 Gbps) ... in both read and write". The bottleneck it names is the
    # node's 2 x 400 Gb/s storage NICs; our model gives 2 x 50 GB/s x 0.96 (BlueField-3 payload efficiency).
    spec = _dgx(32, units=64)  # DGX nodes with 2 x BlueField-3 400G, like DGX B200's storage ports
    res = checkpoint_time(spec, checkpoint_size(70e9, tp=8, pp=1, dp=32))
    assert res.write.bottleneck == "node front-end NICs"
    assert res.write.rate_bytes_per_s == pytest.approx(96e9, rel=0.20)
    assert res.write.rate_bytes_per_s == pytest.approx(0.96 * 100e9, rel=0.01)


def test_megatron_checkpoint_size_is_in_the_published_range():
    # Narayanan et al. SC'21: the 1T-parameter checkpoint is 13.8 TB (13.8 B/param): between the 12 B/param
    # (no bf16 copy) and 14 B/param (default) rules.
    assert (
        checkpoint_size(1e12, weight_bytes_per_param=0).total_bytes
        < 13.8e12
        < checkpoint_size(1e12).total_bytes
    )


def test_young_daly_by_hand():
    # delta = 60 s, M = 4 h = 14,400 s: tau* = sqrt(2 x 60 x 14,400) = sqrt(1,728,000) = 1,314.5 s.
    tau = young_daly_interval_s(60.0, 14_400.0)
    assert tau == pytest.approx(1314.53, rel=1e-4)
    # lost = 60/1314.5 + 1314.5/28,800 + 120/14,400 = 0.04564 + 0.04564 + 0.00833 = 0.0996
    assert goodput_lost_fraction(tau, 60.0, 14_400.0, 120.0) == pytest.approx(0.0996, rel=1e-3)
    # it is the minimum
    for other in (0.5 * tau, 2 * tau):
        assert goodput_lost_fraction(other, 60.0, 14_400.0) > goodput_lost_fraction(tau, 60.0, 14_400.0)
    assert goodput_lost_fraction(tau, 60.0, 14_400.0) == pytest.approx(math.sqrt(2 * 60 / 14_400))
    # inside the model: 60 s < 1,314.5 s < 14,400 s, restart 120 s < 14,400 s
    assert young_daly_outside(tau, 60.0, 14_400.0, 120.0) is None


@pytest.mark.parametrize(
    ("interval_s", "checkpoint_s", "restart_s", "reason"),
    [
        (50.0, 60.0, 0.0, "not longer than one checkpoint"),  # tau <= delta
        (14_400.0, 60.0, 0.0, "not shorter than the MTBF"),  # tau = M: a failure in most intervals
        (1_314.5, 60.0, 14_400.0, "restart takes no less than the MTBF"),  # R = M
    ],
)
def test_young_daly_names_where_it_stops_holding(interval_s, checkpoint_s, restart_s, reason):
    # Young 1974 / Daly 2006: first order in delta / M and tau / M, with M = 4 h = 14,400 s
    assert reason in young_daly_outside(interval_s, checkpoint_s, 14_400.0, restart_s)


def test_data_loading_share():
    spec = _dgx(16)
    d = data_loading(spec, 320e9, 2.0)  # 160 GB/s needed of 16 x 20 GB/s = 320 GB/s
    assert d.share == pytest.approx(0.5)


def test_storage_needed():
    with pytest.raises(ConfigError, match="storage"):
        checkpoint_time(preset("dgx-h100-superpod", nodes=16), checkpoint_size(1e9))
    with pytest.raises(ConfigError, match="storage.units"):
        checkpoint_time(
            preset("dgx-h100-superpod", nodes=16, storage={"system": "weka", "units": 4}),
            checkpoint_size(1e9),
        )


def test_cli_checkpoint_json_and_errors():
    r = CliRunner().invoke(
        app,
        [
            "checkpoint",
            "--nodes",
            "16",
            "--params",
            "70e9",
            "--tp",
            "8",
            "--pp",
            "2",
            "--storage-units",
            "4",
            "--storage",
            "ddn-ai400x2-turbo",
            "--mtbf",
            "4 h",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["write"]["seconds"] == pytest.approx(3.0625, rel=0.01)
    assert out["interval_sync_s"] == pytest.approx(math.sqrt(2 * 3.0625 * 14_400), rel=0.01)
    bad = CliRunner().invoke(
        app, ["checkpoint", "--params", "70e9", "--storage", "nope", "--storage-units", "1"]
    )
    assert bad.exit_code == 2 and "storage" in bad.stderr
    both = CliRunner().invoke(app, ["checkpoint", "--params", "7e9", "--model", "llama3-8b"])
    assert both.exit_code == 2 and "exactly one" in both.stderr


@settings(max_examples=30, deadline=None)
@given(
    units=st.integers(min_value=1, max_value=200),
    nodes=st.sampled_from([4, 16, 64]),
    zero=st.sampled_from([0, 1, 3]),
    params=st.floats(min_value=1e9, max_value=1e12),
)
def test_property_more_storage_never_slower_and_gds_never_slower(units, nodes, zero, params):
    size = checkpoint_size(params, tp=8, dp=nodes, zero_stage=zero)
    a = checkpoint_time(_dgx(nodes, units=units), size)
    b = checkpoint_time(_dgx(nodes, units=units + 1), size)
    assert b.write.seconds <= a.write.seconds * (1 + 1e-12)
    assert a.write.seconds <= checkpoint_time(_dgx(nodes, units=units), size, gds=False).write.seconds
    # the time is the bytes over the slowest stage, and async stops training no longer than a sync write
    assert a.write.seconds == pytest.approx(a.write.bytes_per_node / min(a.write.stages.values()))
    assert a.async_copy_s <= a.write.seconds * (1 + 1e-12)


@settings(max_examples=40, deadline=None)
@given(
    delta=st.floats(min_value=0.1, max_value=600),
    mtbf=st.floats(min_value=3600, max_value=30 * 86400),
    factor=st.floats(min_value=0.1, max_value=10),
)
def test_property_young_interval_is_the_minimum(delta, mtbf, factor):
    tau = young_daly_interval_s(delta, mtbf)
    assert goodput_lost_fraction(tau, delta, mtbf) <= goodput_lost_fraction(tau * factor, delta, mtbf) + 1e-12


def _ckpt(*args: str):
    return CliRunner().invoke(app, ["checkpoint", *args])


def _one_error_line(r, field: str) -> None:
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0], r.stderr


def test_infinite_front_end_ratio_refused(tmp_path):
    # trial item 1: oversubscription .inf divided a NIC rate to 0 (ZeroDivisionError, rc 1)
    f = tmp_path / "feinf.yaml"
    f.write_text(
        "name: t\naccelerator: h100-sxm\ngpus_per_node: 8\nnodes: 32\nscale_up: {kind: nvswitch}\n"
        "scale_out: {nic: connectx-7, switch: quantum-2-qm9700, tiers: 2}\n"
        "front_end: {nic: bluefield-3, nics_per_node: 2, oversubscription: .inf}\n"
        "storage: {system: meta-tectonic}\n"
    )
    # refused where the YAML is read (line 7, key oversubscription) or where the spec is validated
    _one_error_line(_ckpt("-m", "llama3-70b", str(f)), "oversubscription")
    _one_error_line(CliRunner().invoke(app, ["cluster", "show", str(f)]), "oversubscription")
    _one_error_line(CliRunner().invoke(app, ["cluster", "mgmt", str(f)]), "oversubscription")
    # a spec built in code (no YAML loader) is refused by the spec itself
    with pytest.raises(ConfigError, match="front_end.oversubscription"):
        _dgx(4, **{"front_end.oversubscription": float("inf")})


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--params", "inf", "--storage", "meta-tectonic"], "--params"),  # trial item 6
        (["--params", "nan"], "--params"),
        (["-m", "llama3-70b", "--weight-bytes", "inf"], "--weight-bytes"),
        (["-m", "llama3-70b", "--weight-bytes", "0", "--optimizer-bytes", "0"], "--weight-bytes"),  # item 16
        (["-m", "llama3-70b", "--nodes", "32", "--dp", "7"], "--dp"),  # item 15: 7 does not divide 256
    ],
)
def test_bad_checkpoint_figures_refused(args, field):
    _one_error_line(_ckpt(*args), field)


def test_storage_errors_suggest_what_works_once():
    # trial item 14: WEKA publishes no per-unit figure, so storage.units is not suggested
    r = _ckpt("-m", "llama3-70b", "--storage", "weka")
    _one_error_line(r, "storage.aggregate_write")
    assert "storage.units" not in r.stderr
    # trial item 22: the field is named once, not "storage.system: storage: ..."
    r = _ckpt("-m", "llama3-70b", "--storage", "nope")
    _one_error_line(r, "storage.system: unknown storage 'nope'")
    r = _ckpt("-m", "llama3-70b", "--storage-read", "abc")
    _one_error_line(r, "storage.aggregate_read: cannot read a bandwidth")


@pytest.mark.parametrize(("option", "value"), [("--mtbf", "2.8"), ("--step-time", "5")])
def test_durations_need_a_unit(option, value):
    # trial item 9: a bare number is refused as spec fields refuse it (seconds or hours?)
    _one_error_line(_ckpt("-m", "llama3-70b", option, value), option)


def test_young_daly_outside_its_assumption_warns():
    # trial item 10: 16 DGX, 4 DDN units: write 3.0625 s (hand derivation above). MTBF 1 s:
    # sqrt(2 x 3.0625 x 1) = 2.475 s < 3.0625 s -> the interval is shorter than one write: warn on stderr
    args = ["--params", "70e9", "--tp", "8", "--pp", "2", "--storage", "ddn-ai400x2-turbo"]
    r = _ckpt(*args, "--storage-units", "4", "--nodes", "16", "--mtbf", "1 s", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["interval_sync_s"] == pytest.approx(math.sqrt(2 * 3.0625 * 1.0), rel=0.01)
    assert out["young_daly_holds_sync"] is False
    text = _ckpt(*args, "--storage-units", "4", "--nodes", "16", "--mtbf", "1 s")
    assert "Young/Daly assumes" in text.stderr
    ok = json.loads(_ckpt(*args, "--storage-units", "4", "--nodes", "16", "--mtbf", "4 h", "--json").stdout)
    assert ok["young_daly_holds_sync"] is True


_OFFLOAD = [
    "--nodes",
    "16",
    "--tp",
    "8",
    "--pp",
    "16",
    "--storage",
    "ddn-ai400x2-turbo",
    "--storage-units",
    "4",
]


def test_offloaded_state_counts_the_nodes_host_memory():
    # 1.5e12 params x 14 B/param = 21 TB: above 128 H100 x 85.52 GB (81,559 MiB, nvidia-smi, NVIDIA/nccl
    # #1264) = 10.95 TB of HBM, so refused on HBM alone; with ZeRO-Offload (optimizer state in host memory;
    # Ren et al. USENIX ATC'21, arXiv:2101.06840) and the 2 TB of system memory of each DGX H100 node (DGX
    # H100 datasheet), 10.95 + 16 x 2 = 42.95 TB hold it.
    hbm_only = _ckpt("--params", "1.5e12", *_OFFLOAD)
    _one_error_line(hbm_only, "--params")
    assert "10.95 TB" in hbm_only.stderr
    r = _ckpt("--params", "1.5e12", *_OFFLOAD, "--offload-memory", "2 TB", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["checkpoint_bytes"] == pytest.approx(21e12)
    # 3.1e12 x 14 = 43.4 TB > 42.95 TB: refused, naming both the size and the host memory counted
    over = _ckpt("--params", "3.1e12", *_OFFLOAD, "--offload-memory", "2 TB")
    _one_error_line(over, "--params")
    assert "42.95 TB" in over.stderr and "--offload-memory" in over.stderr


@pytest.mark.parametrize("value", ["-1 TB", "0", "nan TB"])
def test_offload_memory_must_be_a_size_above_zero(value):
    _one_error_line(_ckpt("--params", "70e9", *_OFFLOAD, "--offload-memory", value), "--offload-memory")


def test_check_state_fits_counts_host_memory_per_node():
    spec = preset("dgx-h100-superpod", nodes=16)
    size = checkpoint_size(1.5e12, tp=8, pp=16)
    with pytest.raises(ConfigError, match=r"^n_params: .* more than the 10\.95 TB"):
        check_state_fits(spec, size)
    check_state_fits(spec, size, host_bytes_per_node=2e12)  # 42.95 TB hold 21 TB


def test_a_tpu_host_reaches_storage_over_its_dcn():
    # Cloud TPU v5p docs: DCN 50 Gb/s per chip, 4 chips per host -> 4 x 6.25 GB/s = 25 GB/s per direction;
    # the TPU pod has no front-end in its description, so the DCN is the host's way to storage
    spec = preset("tpu-v5p-pod", storage={"system": "ddn-ai400x2-turbo", "units": 4000})
    path = node_path(spec, direction="write", active_nodes=1)
    assert path.stages["node DCN (data-centre network)"] == pytest.approx(25e9)
    assert path.bottleneck == "node DCN (data-centre network)"
    with pytest.raises(ConfigError, match="front_end: this cluster has no front-end NICs"):
        node_path(
            preset("v100-pcie-4gpu", storage={"system": "ddn-ai400x2-turbo", "units": 1}),
            direction="read",
            active_nodes=1,
        )


def test_offloaded_state_is_not_copied_from_the_gpus():
    # 3e12 params x 14 B = 42 TB on 128 H100: 328 GB per GPU, of which at most its 85.52 GB of HBM (81,559
    # MiB) is in the GPU; the rest already sits in host memory (ZeRO-Offload). The async GPU -> host copy
    # moves 85.52 GB over PCIe Gen5 x16 (64 GB/s per direction x DMA payload efficiency 0.9002 = 57.6 GB/s,
    # catalogue): 1.48 s, not 328 GB / 57.6 GB/s = 5.7 s.
    r = _ckpt("--params", "3e12", *_OFFLOAD, "--offload-memory", "2 TB", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["async_copy_s"] == pytest.approx(81559 * 2**20 / (64e9 * 0.9002), rel=1e-3)
    # without offload the whole per-GPU share is in HBM and copied, as before
    small = json.loads(_ckpt("--params", "70e9", *_OFFLOAD, "--json").stdout)
    assert small["async_copy_s"] == pytest.approx(70e9 * 14 / 128 / (64e9 * 0.9002), rel=1e-3)


def test_storage_servers_nics_are_a_stage_by_hand():
    # 4 appliances each behind one 400G ConnectX-7 (0.983 payload) serve 4 x 50 x 0.983 = 196.6 GB/s, under
    # their drives (4 x 80 GB/s) and shared by the 16 nodes reading at once: 12.29 GB/s each.
    spec = _dgx(16, units=4).with_changes(
        storage={"system": "ddn-ai400x2-turbo", "units": 4, "unit_nic": "connectx-7"}
    )
    path = node_path(spec, direction="read", active_nodes=16)
    assert path.bottleneck == "storage servers' NICs"
    assert path.rate_bytes_per_s == pytest.approx(4 * 50e9 * 0.983 / 16)
    # a system with no drive-side figure is bounded by its servers' ports alone
    fs3 = _dgx(16).with_changes(storage={"system": "deepseek-3fs", "units": 2, "unit_nic": "connectx-6"})
    stages = node_path(fs3, direction="write", active_nodes=1).stages
    assert "file system aggregate" not in stages
    assert stages["storage servers' NICs"] == pytest.approx(2 * 25e9 * 0.96)


@pytest.mark.parametrize(
    ("storage", "field"),
    [
        ({"system": "deepseek-3fs", "unit_nic": "connectx-6"}, "unit_nic"),
        ({"system": "deepseek-3fs", "units": 2, "unit_nic": "no-such-nic"}, "unit_nic"),
        ({"system": "deepseek-3fs", "units": 2, "unit_nic": "connectx-6", "unit_nics": 0}, "unit_nics"),
        ({"system": "deepseek-3fs", "units": 2}, "storage"),
        # ports counted but no NIC named: refused, not dropped (DDN's per-unit figure would price it alone)
        ({"system": "ddn-ai400x2-turbo", "units": 2, "unit_nics": 4}, "unit_nics"),
    ],
)
def test_storage_server_ports_refused_when_they_cannot_be_priced(storage, field):
    with pytest.raises(ConfigError, match=field):
        node_path(_dgx(2).with_changes(storage=storage), direction="read", active_nodes=1)


def test_series_mtbf_refuses_what_no_job_is():
    for parts in ([(-1, 3600.0)], [(1, 0.0)], [(1, math.inf)], [(0, 3600.0)], []):
        with pytest.raises(ValueError):
            series_mtbf_s(parts)


def test_job_mtbf_from_its_mtbf_or_its_parts_not_both():
    # --mtbf is the job's; --gpu-mtbf/--node-mtbf derive it: both at once is refused naming them
    r = _ckpt("--params", "7e9", "--storage", "ddn-ai400x2-turbo", "--mtbf", "3 h", "--gpu-mtbf", "50000 h")
    _one_error_line(r, "--gpu-mtbf")
    r = _ckpt("--params", "7e9", "--storage", "ddn-ai400x2-turbo", "--node-mtbf", "-1 h")
    _one_error_line(r, "--node-mtbf")


def test_job_mtbf_of_parts_counts_the_job_gpus_and_their_nodes():
    # 16 DGX H100 nodes, the job on all 128 GPUs: 1 / (128 / 50,000 h + 16 / 30,000 h) = 323.3 h
    r = _ckpt(
        *("--nodes", "16", "--params", "7e9", "--storage", "ddn-ai400x2-turbo", "--storage-units", "4"),
        *("--gpu-mtbf", "50000 h", "--node-mtbf", "30000 h", "--json"),
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["job_mtbf_s"] / 3600 == pytest.approx(1 / (128 / 50_000 + 16 / 30_000))


@pytest.mark.parametrize("zero,exchanged", [(0, True), (1, True), (3, False)])
def test_parallel_load_reads_each_replicated_byte_once(zero, exchanged):
    # A fully parallel load reads S / nodes per node whatever the sharding (each byte once); what the DP
    # replicas share is exchanged after the read (nothing with ZeRO-3, whose weights are sharded too).
    spec = _dgx(16)
    size = checkpoint_size(70e9, tp=8, pp=2, dp=8, zero_stage=zero)
    plain, parallel = checkpoint_time(spec, size), checkpoint_time(spec, size, parallel_load=True)
    assert parallel.restore.bytes_per_node == pytest.approx(size.total_bytes / 16)
    assert parallel.restore.bytes_per_node <= plain.restore.bytes_per_node
    assert (parallel.restore_exchange_s > 0) is exchanged
    assert plain.restore_exchange_s == 0.0


def test_job_mtbf_that_rounds_to_zero_is_refused_naming_the_option():
    # 128 GPUs of 1e-310 s each: 128 / 1e-310 overflows to an infinite rate, a job MTBF of 0 s, which
    # reached Young/Daly as "need checkpoint_s >= 0 and mtbf_s > 0" without naming the option
    r = _ckpt(
        *("--nodes", "16", "--params", "7e9", "--storage", "ddn-ai400x2-turbo", "--storage-units", "4"),
        *("--gpu-mtbf", "1e-310 s"),
    )
    _one_error_line(r, "--gpu-mtbf")


@pytest.mark.parametrize("option", ["--gpu-mtbf", "--node-mtbf"])
def test_part_mtbf_beyond_1e9_hours_is_refused_naming_the_option(option):
    # 1e30 h printed a job MTBF of 2.8e31 s; a part's MTBF is read up to 1e9 h (1 FIT, MAX_PART_MTBF_S),
    # far over a century: a transceiver's 1e6 h and 1e9 h itself are read, 1e30 h and 1.01e9 h refused
    base = ("--nodes", "16", "--params", "7e9", "--storage", "ddn-ai400x2-turbo", "--storage-units", "4")
    for refused in ("1e30 h", "1.01e9 h"):
        _one_error_line(_ckpt(*base, option, refused), option)
    for read in ("1e6 h", "1e9 h"):
        r = _ckpt(*base, option, read, "--json")
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["job_mtbf_s"] > 0


@pytest.mark.parametrize(("dp", "zero", "noted"), [(1, 1, True), (16, 3, True), (16, 1, False)])
def test_parallel_load_says_when_nothing_is_replicated(dp, zero, noted):
    # DP 1 (or ZeRO-3, weights and optimizer both sharded) replicates nothing: --parallel-load is the plain
    # load, said on stderr rather than dropped in silence
    r = _ckpt(
        *("--nodes", "16", "--params", "7e9", "--storage", "ddn-ai400x2-turbo", "--storage-units", "4"),
        *("--tp", "8", "--dp", str(dp), "--zero", str(zero), "--parallel-load", "--json"),
    )
    assert r.exit_code == 0, r.output
    assert ("--parallel-load changes nothing" in r.stderr) is noted
    assert (json.loads(r.stdout)["restore_exchange_s"] > 0) is not noted


def test_parallel_load_exchange_runs_at_the_nic_rate_every_engine_reads():
    # The exchange after a fully parallel load crosses each node's NICs at nic_effective_bytes_per_s:
    # a ConnectX-8 (800 Gb/s, 98.3 GB/s of payload) behind an H100's PCIe Gen5 x16 (64 GB/s x 0.900 = 57.6
    # GB/s) carries 57.6, not 98.3, so against a ConnectX-7 (49.15 GB/s on InfiniBand) the exchange is
    # 57.6 / 49.15 = 1.172x faster, not 2.0x.
    base = {"nodes": 16, "storage": {"system": "ddn-ai400x2-turbo", "units": 4}}
    cx7 = preset("dgx-h100-superpod", **base)
    scale_out = {**cx7.scale_out.model_dump(exclude_none=True), "nic": "connectx-8"}
    cx8 = preset("dgx-h100-superpod", **base, scale_out={**scale_out, "switch": "quantum-x800-q3400"})
    size = checkpoint_size(70e9, tp=8, pp=2, dp=8, zero_stage=1)
    slow, fast = (checkpoint_time(s, size, parallel_load=True).restore_exchange_s for s in (cx7, cx8))
    assert cx8.nic_effective_bytes_per_s == pytest.approx(57.6e9, rel=1e-3)
    assert slow / fast == pytest.approx(57.6128 / 49.152, rel=1e-3)


def _local(nodes: int):
    """16 DGX H100 with four Solidigm D7-PS1010 each (catalogue kind local: 4 x 14.5 GB/s = 58 GB/s read per
    node) and a stated 20 GB/s write (the catalogue has no write figure)."""
    storage = {"system": "local-nvme-d7-ps1010", "units": 4, "aggregate_write": "20 GB/s"}
    return preset("dgx-h100-superpod", nodes=nodes, storage=storage)


def test_a_node_restores_from_its_own_drives_only_what_it_wrote():
    # 70e9 params, TP 8 PP 2 DP 8, ZeRO-1 (fully parallel save): each of the 16 nodes writes 980 / 16 =
    # 61.25 GB to its own drives. It needs its stage's bf16 weights 70e9 / 2 x 2 B = 70 GB plus its optimizer
    # shards 70e9 / 2 x 12 B / 8 = 52.5 GB = 122.5 GB, of which its drives hold 61.25 GB (its shards and 1/8
    # of the weights): it reads those at 58 GB/s (1.056 s) and receives the other 7/8 of its weights,
    # 61.25 GB, from its DP peers over its 8 NICs at B_o each, exactly the exchange --parallel-load prices.
    spec = _local(16)
    size = checkpoint_size(70e9, tp=8, pp=2, dp=8)
    res = checkpoint_time(spec, size)
    assert res.restore.bytes_per_node == pytest.approx(61.25e9)
    assert res.restore.seconds == pytest.approx(61.25e9 / 58e9)
    assert res.restore_exchange_s == pytest.approx(61.25e9 / (8 * spec.nic_effective_bytes_per_s))
    loaded = checkpoint_time(spec, size, parallel_load=True)
    assert (loaded.restore.bytes_per_node, loaded.restore_s) == pytest.approx((61.25e9, res.restore_s))


def test_without_zero_the_other_replicas_receive_all_their_state():
    # ZeRO-0, TP 8 PP 2: one replica's 2 nodes write 980 / 2 = 490 GB each to their drives; a node of
    # another replica needs 490 GB (16 GPUs x 70e9 / 16 x 14 B / 8 per node) and holds none of it, so it
    # receives all 490 GB over its 8 NICs after the writers read theirs (490 GB at 58 GB/s).
    spec = _local(16)
    res = checkpoint_time(spec, checkpoint_size(70e9, tp=8, pp=2, dp=8, zero_stage=0))
    assert res.restore.bytes_per_node == pytest.approx(490e9)
    assert res.restore_exchange_s == pytest.approx(490e9 / (8 * spec.nic_effective_bytes_per_s))


@pytest.mark.parametrize("zero", [0, 1, 2, 3])
@pytest.mark.parametrize("parallel_load", [False, True])
def test_node_local_drives_give_back_no_more_than_they_hold(zero, parallel_load):
    # Invariant: a node reads from its own drives at most what was written to them, and what it needs but
    # does not read reaches it in the exchange (restore bytes + exchange x rate = what its GPUs hold).
    spec = _local(16)
    size = checkpoint_size(70e9, tp=8, pp=2, dp=8, zero_stage=zero)
    res = checkpoint_time(spec, size, parallel_load=parallel_load)
    assert res.restore.bytes_per_node <= res.write.bytes_per_node * (1 + 1e-12)
    received = res.restore_exchange_s * 8 * spec.nic_effective_bytes_per_s
    held_on_drives = res.restore.bytes_per_node if res.writer_nodes == 16 else 0.0
    assert held_on_drives + received == pytest.approx(size.held_bytes_per_gpu * 8)

"""A new user's trial with their own machines, written as cluster YAML files of their own (no preset for the
machine): 4 x L40S PCIe servers on 2 x 100G RoCE NICs, an 8 x RTX 4090 box, 2 x DGX B200, 32 x p5.48xlarge
on EFA, H100 PCIe cards, and parts of their own in a user catalogue. Each test is one defect: the docstring
holds the input, what the product printed and the hand derivation or source of the expected value."""

from pathlib import Path

import pytest
import yaml

from aifabric.cli.app import app

from .commands import result_json, runner

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py


def _write(tmp_path: Path, name: str, spec: dict) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def _cluster(
    tmp_path: Path, accelerator: str, shape: tuple[int, int], scale_out: dict, **more: object
) -> str:
    """A cluster file of ``shape`` = (nodes, GPUs per node) of ``accelerator``; returns its path."""
    nodes, per_node = shape
    spec = {
        "name": f"own-{accelerator}",
        "accelerator": accelerator,
        "gpus_per_node": per_node,
        "nodes": nodes,
    }
    return _write(tmp_path, f"{accelerator}.yaml", {**spec, "scale_out": scale_out, **more})


def _l40s_roce(tmp_path: Path) -> str:
    """4 servers of 4 L40S (PCIe Gen4, no NVLink), each with 2 x 100 Gb/s RoCE NICs (a NIC per 2 GPUs)
    behind the PCIe switch (PIX), all 8 NIC ports on one tier of switching; rail_optimized left unsaid."""
    nics = {"nic": "connectx-6", "nic_speed": "100 Gb/s", "fabric": "ethernet", "gpus_per_nic": 2}
    scale_out = {**nics, "tiers": 1, "nic_path": "PIX"}
    return _cluster(tmp_path, "l40s", (4, 4), scale_out, scale_up={"kind": "pcie"})


def _dgx_b200_pair(tmp_path: Path) -> str:
    """2 x DGX B200 (8 x B200, 8 x ConnectX-7 400G each), one tier of switching."""
    return _cluster(tmp_path, "b200", (2, 8), {"nic": "connectx-7", "tiers": 1})


def _rtx4090_log(tmp_path: Path) -> str:
    """all_reduce_perf -g 8 on 8 x RTX 4090 (PCIe Gen4 x16 each), busbw 40-43 GB/s: a broken measurement
    (see the test). Columns as nccl-tests prints them; algbw = busbw / (2 x 7 / 8)."""
    gpu = "NVIDIA GeForce RTX 4090"
    pad = " " * 30
    lines = [
        "# nThread 1 nGpus 8 minBytes 33554432 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 "
        "agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
        *(f"#  Rank  {i} Group  0 Pid  39155 on box device  {i} [0x{i + 1:02x}] {gpu}" for i in range(8)),
        "#",
        f"#{pad}{pad}  out-of-place                       in-place",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong",
        f"#        (B)    (elements){pad}  (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
    ]
    for size, busbw in [
        (33554432, 40.0),
        (67108864, 41.0),
        (134217728, 42.0),
        (268435456, 42.5),
        (536870912, 43.0),
        (1073741824, 43.0),
    ]:
        algbw = busbw / 1.75
        t_us = size / algbw / 1e3
        cols = f"{t_us:8.1f} {algbw:7.2f} {busbw:7.2f}      0"
        lines.append(f"{size:12d} {size // 4:13d}     float     sum      -1 {cols} {cols}")
    lines += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 41.9", ""]
    path = tmp_path / "rtx4090.log"
    path.write_text("\n".join(lines))
    return str(path)


def test_an_all_reduce_faster_than_a_pcie_gpu_can_send_is_not_called_healthy(tmp_path):
    """``aifabric nccl-tests compare rtx4090.log`` (8 x RTX 4090, all_reduce busbw 43 GB/s at 1 GiB) printed
    "note ... measured above the model", +124 % against its 19.18, and "verdict: healthy".
    A ring, tree or any all-reduce without in-network reduction makes every rank send at least
    2(n-1)/n x S bytes (Patarasuk & Yuan, JPDC 2009, the bandwidth lower bound of all-reduce), and busbw is
    exactly 2(n-1)/n x S / t (nccl-tests doc/PERFORMANCE.md), so busbw <= a rank's send rate. An RTX 4090's
    only way out is its PCIe Gen4 x16 link: 16 GT/s x 16 lanes x 128/130 / 8 = 31.5 GB/s per direction
    (PCI-SIG; catalogue pcie-gen4 32 GB/s). 43 GB/s is above it: a broken run (timer, rank count), the
    README's `above_links`, never healthy. The README's bound (each rank receives its result: rate x
    2(n-1)/n = 55 GB/s) is the weaker one and lets it through."""
    r = runner.invoke(app, ["nccl-tests", "compare", _rtx4090_log(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "verdict: healthy" not in r.output and "above_links" in r.output, r.output[-600:]


def test_the_formula_engine_does_not_time_a_send_the_fabric_cannot_carry(tmp_path):
    """On the 4 x 4 L40S cluster, ``collective send_recv --engine links`` (and flow) exit 2: "GPU 3 and
    GPU 4 sit on different leaves of a one-tier fabric (rail 1 and 0) and no scale-up relay reaches the
    destination's rail"; the formula engine, on the same file, printed "p2p/Simple ... the slowest hop over a
    NIC at 12.0 GB/s". One of the two is wrong about the same wiring: the README says the engines agree on
    PCIe-only nodes for send_recv (2 x 8 L40S). Either both time it or both refuse it."""
    cluster = _l40s_roce(tmp_path)
    codes = {
        engine: runner.invoke(
            app, ["collective", "send_recv", "-c", cluster, "-s", "1 GiB", "--engine", engine]
        )
        for engine in ("formula", "links")
    }
    assert codes["formula"].exit_code == codes["links"].exit_code, {
        e: r.output[-300:] for e, r in codes.items()
    }


def test_two_servers_on_one_switch_tier_do_not_buy_eight_switches(tmp_path):
    """2 x DGX B200, ``tiers: 1``: ``cluster show`` lists "leaf: NVIDIA Quantum-2 QM9700 ... 8" switches,
    13.8 kW, 30 % of the cluster's 46.2 kW, for 16 NIC ports. A QM9700 has 64 NDR ports (32 OSFP twin-port
    cages, NVIDIA QM9700 datasheet; catalogue switches.yaml), so one switch cables all 16; the SuperPOD
    rail leaves the default copies are sized for a scalable unit of 32 nodes, 32 ports each used. Two
    nodes leave 62 of 64 ports of every rail leaf empty. At most one leaf switch is needed (its ports may
    still be counted per rail: tests/engines/test_one_tier_rails.py keeps rails apart for routing)."""
    out = result_json(["cluster", "show", _dgx_b200_pair(tmp_path)])
    leaves = [p for p in out["parts"] if p["item"] == "switch" and p["network"] == "scale-out"]
    assert sum(p["count"] for p in leaves) <= 1, leaves


def test_a_user_nic_that_draws_more_power_raises_the_cluster_power(tmp_path):
    """A user catalogue repeats ``connectx-7`` with every field as shipped but ``power: 99 W`` (shipped
    25 W). ``cluster show`` on 2 x DGX B200 then prints the NIC line at 1.6 kW (was 0.4) and scale-out
    15.6 kW (was 14.4), yet ``total_watts`` stays 46,241 W: the node's "rest" (memory, fans, drives, PSU
    losses) is node_max minus GPUs, CPUs and NICs, so it shrinks by exactly what the NICs add. Memory and
    fans do not draw less because a NIC draws more; the DGX B200's 14.3 kW (user guide) is the maximum of
    the shipped build. Expected: the total rises by 16 NICs x (99 - 25) W = 1,184 W."""
    parts = {
        "nics": {
            "connectx-7": {
                "name": "NVIDIA ConnectX-7 NDR, the user's hotter card",
                "speed": "400 Gb/s",
                "ports": 1,
                "power": "99 W",
                "payload_efficiency": 0.983,
                "latency": "2.7 us",
                "source": "the user's own wall-power measurement of the card",
            }
        }
    }
    catalog_file = _write(tmp_path, "parts.yaml", parts)
    cluster = _dgx_b200_pair(tmp_path)
    shipped = result_json(["cluster", "show", cluster])["total_watts"]
    user = result_json(["--catalog", catalog_file, "cluster", "show", cluster])["total_watts"]
    assert user == pytest.approx(shipped + 16 * 74, abs=1.0), (shipped, user)


def test_an_efa_cluster_that_names_its_instance_is_not_called_roce(tmp_path):
    """32 x p5.48xlarge written as ``nic: efa-v2``, ``nic_speed: 100 Gb/s``, ``nics_per_gpu: 4``,
    ``fabric: ethernet``, ``planes: 4`` (a port per plane, as the product asks), ``instance_type:
    p5.48xlarge`` is refused: "scale_out.instance_type:
    'p5.48xlarge' names the aws-ofi-nccl plugin of an efa-srd scale-out; this one runs 'roce-v2'". Without
    ``instance_type`` the same file times a 64 KiB all_reduce at 295.9 us, identical to ``transport:
    efa-srd``: the NIC already runs EFA's SRD figures (nics.yaml efa-v2: "efficiency from the efa-srd
    transport"). The instance is the AWS EC2 P5 page's own (32 EFAv2 interfaces of 100 Gb/s): it must be
    accepted on the NIC the catalogue says it carries."""
    spec = {
        "name": "p5-efa",
        "accelerator": "h100-sxm",
        "gpus_per_node": 8,
        "nodes": 32,
        "scale_out": {
            "nic": "efa-v2",
            "nic_speed": "100 Gb/s",
            "nics_per_gpu": 4,
            "fabric": "ethernet",
            "planes": 4,
            "instance_type": "p5.48xlarge",
        },
    }
    r = runner.invoke(
        app, ["collective", "all_reduce", "-c", _write(tmp_path, "p5.yaml", spec), "-s", "1 GiB"]
    )
    assert r.exit_code == 0, r.output[-300:]


def test_an_h100_pcie_pair_is_pointed_at_its_nvlink_bridge(tmp_path):
    """Two H100 PCIe cards with their NVLink bridge, written as ``accelerator: h100-pcie``,
    ``gpus_per_node: 2`` and no ``scale_up``: refused with "scale_up.kind: 'h100-pcie' has no NVLink; use
    kind: pcie". Following it models the pair at PCIe Gen5's 48 GB/s instead of the bridge's 247.2 GB/s
    (``scale_up: {link: nvlink4-bridge}`` works; H100 datasheet: "NVLink bridge 600 GB/s between pairs";
    accelerators.yaml h100-pcie ``nvlink_bridge: nvlink4-bridge``). The catalogue knows the bridge; the
    refusal must name it, or the user's answer is 5 x too slow."""
    spec = {
        "name": "h100-pcie-pair",
        "accelerator": "h100-pcie",
        "gpus_per_node": 2,
        "nodes": 1,
        "scale_out": None,
    }
    r = runner.invoke(app, ["cluster", "show", _write(tmp_path, "pair.yaml", spec)])
    assert r.exit_code == 2, r.output[-300:]
    assert "nvlink4-bridge" in r.output, r.output[-300:]


def test_training_on_a_users_own_gpu_needs_no_edit_of_the_installed_package(tmp_path):
    """``aifabric train -m megatron-gpt-39.1b -c l40s.yaml --tp 4 -b 1`` (and ``plan`` on the RTX 4090 box,
    and any GPU of the user's own catalogue) exits 2: "no measured compute efficiency for 'l40s' in
    training/presets/compute.yaml ...; add a measured entry with its source to that file". That file is
    inside the installed package; a user catalogue refuses a ``compute`` family ("unknown family
    'compute'; known: accelerators, scale_up, nics, switches, optics") and ``train`` has no option for it.
    README "Your own parts": the catalogue "can be extended without editing the package". The refusal must
    name a way the user can give their measured GEMM efficiency (a ``--catalog`` family or an option)."""
    r = runner.invoke(
        app, ["train", "-m", "megatron-gpt-39.1b", "-c", _l40s_roce(tmp_path), "--tp", "4", "-b", "1"]
    )
    assert r.exit_code == 2, r.output[-300:]
    message = r.output.lower()
    assert "--catalog" in message or "--gemm-efficiency" in message, r.output[-400:]


def _own_gpu(tmp_path: Path, **fields: object) -> tuple[str, str]:
    """A user catalogue holding one GPU of the user's own (the fields a vendor brief gives), and a 2 x 8 PCIe
    cluster of it; returns (catalogue path, cluster path)."""
    part = {
        "name": "My GPU",
        "arch": "hopper",
        "peak_bf16_flops": 500e12,
        "hbm_capacity": "64 GB",
        "hbm_bandwidth": "2000 GB/s",
        "pcie": "gen5",
        "source": "the vendor's brief, 2026",
        **fields,
    }
    catalog_file = _write(tmp_path, "my-parts.yaml", {"accelerators": {"my-gpu": part}})
    scale_out = {"nic": "connectx-7", "tiers": 1}
    return catalog_file, _cluster(tmp_path, "my-gpu", (2, 8), scale_out, scale_up={"kind": "pcie"})


def test_a_user_gpus_pcie_generation_is_blamed_on_the_part(tmp_path):
    """A user GPU with ``pcie: gen9`` (a slip for gen5) in my-parts.yaml: ``aifabric --catalog my-parts.yaml
    cluster show my-gpu.yaml`` exits 2 with "my-gpu.yaml: cluster: scaleup: unknown scaleup
    'pcie-gen9'; known: ...": the cluster file is blamed, and neither the catalogue file, the part nor its
    field is named. README "Your own parts": a field out of its range is refused "with one line naming the
    file, the part and the field", as ``nvlink: nvlink9`` on the same part is ("my-parts.yaml:
    accelerators.my-gpu: nvlink 'nvlink9' is not a scale-up link")."""
    catalog_file, cluster = _own_gpu(tmp_path, pcie="gen9")
    r = runner.invoke(app, ["--catalog", catalog_file, "cluster", "show", cluster])
    assert r.exit_code == 2, r.output[-300:]
    assert "my-parts.yaml" in r.output and "accelerators.my-gpu" in r.output and "pcie" in r.output, r.output


def test_a_user_gpus_memory_bandwidth_written_in_bits_is_questioned(tmp_path):
    """The same part with ``hbm_bandwidth: 2000 Gb/s`` (the brief's 2000 GB/s typed with a small b):
    ``cluster show`` exits 0 and prints "HBM bandwidth per GPU │ 250 GB/s", 8x below the figure, below the
    GPU's own PCIe Gen5 x16 (128 GB/s both ways) by only 2x, without a word. Memory bandwidth is quoted in
    bytes by every datasheet in the catalogue (accelerators.yaml: "80 GB HBM3 3.35 TB/s", "864 GB/s"); the
    reverse slip on a NIC's line rate is caught ("line rates are quoted in bits per second, got '800 GB/s'").
    Expected: exit 2 naming hbm_bandwidth and the value, or a note asking whether bytes were meant."""
    catalog_file, cluster = _own_gpu(tmp_path, hbm_bandwidth="2000 Gb/s")
    r = runner.invoke(app, ["--catalog", catalog_file, "cluster", "show", cluster])
    if r.exit_code == 2:
        assert "hbm_bandwidth" in r.output and "2000 Gb/s" in r.output, r.output
        return
    assert r.exit_code == 0, r.output[-300:]
    assert "bits" in r.output.lower() or "bytes" in r.output.lower(), "no note on 2000 Gb/s (bits) for HBM"

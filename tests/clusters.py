"""Clusters that several test modules build: small Clos fabrics of DGX H100 nodes drawn by the property
tests, the single MI300X node of case 31 and MI300X nodes on a RoCE fabric; and the helpers the
published-design checks run a cluster file through (``aifabric cluster show --json``, its scale-out parts)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.topology import Topology, build_topology
from aifabric.errors import ConfigError


@functools.lru_cache(maxsize=64)
def small_clos(radix: int, tiers: int, nodes: int, planes: int, rail: bool, over: float) -> Topology | None:
    """DGX H100 SuperPOD ``nodes`` on a Clos of ``tiers`` tiers of ``radix``-port switches, ``planes``
    planes, rail-optimised or not, oversubscribed ``over`` at the top tier; None when the preset refuses
    the combination (ConfigError or ValueError)."""
    overrides = {
        "scale_out.tiers": tiers,
        "scale_out.radix": radix,
        "scale_out.planes": planes,
        "scale_out.rail_optimized": rail,
        "scale_out.oversubscription": [1.0, over] if tiers == 3 else [over],
    }
    try:
        return build_topology(preset("dgx-h100-superpod", nodes=nodes, **overrides))
    except (ConfigError, ValueError):
        return None


def leaf_of_radix(radix: int) -> dict[str, object]:
    """DGX H100 SuperPOD overrides for rail leaves of ``radix`` ports at 400 Gb/s: its QM9700 (64 x 400 Gb/s,
    NVIDIA datasheet) up to 64, a Quantum-X800 Q3400 beyond (144 x 800 Gb/s, 288 at 400 Gb/s: NVIDIA
    datasheet); a radix the switch lacks is refused (ClusterSpec)."""
    switch = "quantum-2-qm9700" if radix <= 64 else "quantum-x800-q3400"
    return {"scale_out.radix": radix, "scale_out.switch": switch}


def mi300x_node() -> ClusterSpec:
    """One node of 8 x MI300X, xGMI full mesh (case_31): one scale-up domain of 7 x 48 GB/s usable per GPU
    (catalogue link infinity-fabric-mi300, AMD ROCm blog [S2]); RCCL's tables are NCCL's Hopper row."""
    return ClusterSpec.model_validate(
        {
            "name": "mi300x-1node",
            "accelerator": "mi300x",
            "gpus_per_node": 8,
            "nodes": 1,
            "scale_up": {"kind": "nvswitch", "link": "infinity-fabric-mi300"},
        }
    )


def mi300x_nodes(nodes: int) -> ClusterSpec:
    """``nodes`` x 8 MI300X on their xGMI full mesh (catalogue link infinity-fabric-mi300), one AMD Pensando
    Pollara 400 per GPU on a two-tier RoCE fabric of 128-port 400GbE switches, as the AINIC nodes of
    ROCm/rccl #2078 ("Add support for AMD AINIC", 16 ranks on 2 x 8 MI300X)."""
    return ClusterSpec.model_validate(
        {
            "name": "mi300x-pollara",
            "accelerator": "mi300x",
            "gpus_per_node": 8,
            "nodes": nodes,
            "scale_up": {"kind": "nvswitch", "link": "infinity-fabric-mi300"},
            "scale_out": {
                "nic": "amd-pollara-400",
                "fabric": "ethernet",
                "switch": "spectrum-4-sn5600-400g",
                "tiers": 2,
            },
        }
    )


def nvswitch_node(accelerator: str, gpus: int) -> ClusterSpec:
    """One node (or cloud VM) of ``gpus`` ``accelerator`` GPUs on one NVSwitch domain, no scale-out: a
    single-VM nccl-tests run (case 20: one process on the VM's GPUs; a GB200 tray's 4 GPUs, not its rack)."""
    return ClusterSpec.model_validate(
        {
            "name": f"{accelerator}-node",
            "accelerator": accelerator,
            "gpus_per_node": gpus,
            "nodes": 1,
            "scale_up": {"kind": "nvswitch"},
        }
    )


def l40s_nodes(nodes: int, gpus_per_node: int = 8) -> ClusterSpec:
    """``nodes`` PCIe-only nodes of ``gpus_per_node`` L40S (PCIe Gen4 x16, no NVLink: L40S datasheet), one
    ConnectX-7 400G per GPU on a two-tier InfiniBand fabric, as the presets."""
    return ClusterSpec.model_validate(
        {
            "name": "l40s",
            "accelerator": "l40s",
            "gpus_per_node": gpus_per_node,
            "nodes": nodes,
            "scale_up": {"kind": "pcie"},
            "scale_out": {
                "nic": "connectx-7",
                "fabric": "infiniband",
                "switch": "quantum-2-qm9700",
                "tiers": 2,
            },
        }
    )


def geforce_yaml(tmp_path: Path, name: str, gpus_per_node: int, nodes: int, **scale_up: object) -> str:
    """A cluster YAML of RTX 4090 nodes on PCIe (ConnectX-7 400G, one-tier InfiniBand); its path."""
    spec = {
        "name": name,
        "accelerator": "rtx-4090",
        "gpus_per_node": gpus_per_node,
        "nodes": nodes,
        "scale_up": {"kind": "pcie", **scale_up},
        "scale_out": {
            "nic": "connectx-7",
            "nic_speed": "400 Gb/s",
            "fabric": "infiniband",
            "switch": "quantum-2-qm9700",
            "tiers": 1,
        },
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def cluster_file(tmp_path: Path, text: str, name: str) -> str:
    """``text`` written as the cluster YAML ``name`` under ``tmp_path``; its path."""
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def show_json(cluster: str, *args: str) -> dict:
    """``aifabric cluster show CLUSTER ARGS --json``, parsed; the command must succeed."""
    r = CliRunner().invoke(app, ["cluster", "show", cluster, *args, "--json"])
    assert r.exit_code == 0, r.output
    out: dict = json.loads(r.stdout)
    return out


def scale_out_counts(parts: list[dict], item: str) -> dict[str, int]:
    """Counts of one item kind of the scale-out network, by part name (tier or cable kind)."""
    return {
        p["part"].split(":")[0]: p["count"]
        for p in parts
        if p["item"] == item and p["network"] == "scale-out"
    }

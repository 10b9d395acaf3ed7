"""A network architect's trial of the dragonfly scale-out, several NICs per GPU and the NFS mount: each test
is one defect, found by counting a design by hand or by feeding a field a value or a combination the
product must refuse (README: bad input exits 2 with one line naming the field and the value, never a
traceback). The docstring holds the input, what the product printed and the hand derivation or source."""

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

#: tests/cluster/test_dragonfly.py's Slingshot file: 4 x A100 a node, one 200 Gb/s Cassini NIC a GPU, 64-port
#: Rosetta switches (De Sensi et al., SC20), the balanced dragonfly p = 16, a = 32, h = 16 (Kim 2008).
SLINGSHOT: dict = {
    "name": "df",
    "accelerator": "a100-sxm-40gb",
    "gpus_per_node": 4,
    "nodes": 1536,
    "scale_up": {"kind": "nvswitch"},
    "scale_out": {
        "nic": "slingshot-11-cassini",
        "fabric": "ethernet",
        "switch": "slingshot-rosetta",
        "topology": "dragonfly",
        "nic_to_leaf_copper": True,
        "dragonfly": {},
    },
    "front_end": None,
    "management": None,
}

#: examples/cluster.yaml: 32 x 8 H100 on RoCE, ConnectX-7 400 Gb/s, Spectrum-4 leaves.
EXAMPLE = Path(__file__).parents[2] / "examples" / "cluster.yaml"


def _write(tmp_path: Path, spec: dict, name: str = "c") -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def slingshot(tmp_path: Path, nodes: int = 1536, **scale_out: object) -> str:
    """:data:`SLINGSHOT` with ``nodes`` and ``scale_out`` fields replaced; returns its path."""
    spec = json.loads(json.dumps(SLINGSHOT))
    spec["nodes"] = nodes
    spec["scale_out"].update(scale_out)
    return _write(tmp_path, spec, "df")


def show(path: str) -> dict:
    """``aifabric cluster show PATH --json``; asserts exit 0."""
    r = runner.invoke(app, ["cluster", "show", path, "--json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def refused(args: list[str], *names: str) -> None:
    """``aifabric ARGS`` exits 2 with one line that names each of ``names``."""
    r = runner.invoke(app, args)
    out = (r.stdout + r.stderr).strip()
    assert r.exit_code == 2, f"exit {r.exit_code}: {out[:300]}"
    assert len(out.splitlines()) == 1 and "Traceback" not in out, out
    for name in names:
        assert name in out, out


def _scale_out_part(j: dict, item: str, part_start: str = "") -> int:
    return sum(
        p["count"]
        for p in j["parts"]
        if p["network"] == "scale-out" and p["item"] == item and p["part"].startswith(part_start)
    )


def test_a_dragonfly_of_two_nics_per_gpu_cables_every_nic_at_its_own_speed(tmp_path):
    """``cluster show`` of :data:`SLINGSHOT` at 768 nodes with ``scale_out.nics_per_gpu: 2`` lists 6,144
    Cassini NICs but 3,072 nic-switch cables, and sizes the dragonfly as 24 groups of 16 switches of "32"
    ports (p = 8, a = 16, h = 8, 5 links an arc, bisection 36 TB/s): it counts one endpoint per GPU at the
    bundled 2 x 200 = 400 Gb/s, the one-bundled-link model README rules out ("Every NIC is its own link: its
    own port, cable and leaf port at the NIC's speed ... No option bonds them into one link";
    ``dragonfly._radix`` reads ``endpoint_line_rate_bytes_per_s``, nic_speed x nics_per_gpu, and
    ``dragonfly_shape`` ``n_endpoints``, GPUs, where the Clos uses ``endpoint_ports``). The Rosetta has 64
    ports at the NIC's 200 Gb/s whatever the GPU count behind them.

    By hand: 768 nodes x 4 GPUs x 2 NICs = 6,144 NIC links of 200 Gb/s, the same port count as 1,536 nodes of
    one NIC a GPU: balanced p = 16, a = 32, h = 16 of radix 64; g = 6,144 / 512 = 12 groups, 384 switches,
    5,952 local links, l = floor(512 / 11) = 46, 66 x 46 = 3,036 global links, 6,144 nic-switch cables,
    bisection 6 x 6 x 46 = 1,656 links x 25 GB/s = 41.4 TB/s (what ``cluster show`` gives the one-NIC
    design)."""
    j = show(slingshot(tmp_path, nodes=768, nics_per_gpu=2))
    d = j["dragonfly"]
    assert (d["p"], d["a"], d["h"], d["g"]) == (16, 32, 16, 12), d
    assert (d["switches"], d["local_links"], d["global_links"]) == (384, 5952, 3036), d
    assert _scale_out_part(j, "nic") == 6144
    assert _scale_out_part(j, "cable", "nic-switch") == 6144
    assert j["bisection_bytes_per_s"] == pytest.approx(41.4e12, rel=1e-3)


def test_a_dragonfly_refuses_rail_optimized_as_it_refuses_the_other_clos_fields(tmp_path):
    """``scale_out: {topology: dragonfly, rail_optimized: true}`` is accepted and prints the same dragonfly
    as without it, where ``tiers``, ``planes``, ``oversubscription``, ``full_su``, ``uplink_speed``,
    ``spine_switch`` and ``core_switch`` are each refused in one line ("scale_out.<field>: a Clos field;
    scale_out.topology dragonfly is sized by scale_out.dragonfly ..."). Rail optimisation is a Clos leaf
    wiring (one leaf per GPU index of a node, NVIDIA's SuperPOD RA); a dragonfly's endpoints hang off the
    switches of their group (Kim 2008: p endpoints a switch), so the file asks for a design the product
    does not build, and must say so naming scale_out.rail_optimized."""
    refused(["cluster", "show", slingshot(tmp_path, rail_optimized=True)], "rail_optimized")


def test_an_nfs_mount_of_more_than_16_connections_is_refused(tmp_path):
    """``storage: {system: vast, nconnect: 17, nfs_transport: tcp, aggregate_read/write: 100 TB/s}`` on
    examples/cluster.yaml: ``checkpoint -m llama3-70b`` writes at 34 GB/s a node, "bottleneck: NFS mount (17
    TCP connection(s))", and ``nconnect: 1000`` is accepted too. Linux's NFS client takes nconnect from 1 to
    16 (kernel fs/nfs/internal.h ``NFS_MAX_CONNECTIONS 16``, which fs/nfs/fs_context.c checks at mount time;
    FreeBSD's port of the option, reviews.freebsd.org rG9ec7dbf46b0a: "Linux has had an "nconnect" NFS mount
    option ... N (up to 16) TCP connections are to created for a mount"), so a 17-connection mount does not
    exist and is priced 17/16 faster than any mount can be: it must exit 2 naming storage.nconnect and 17."""
    spec = yaml.safe_load(EXAMPLE.read_text())
    spec["storage"] = {
        "system": "vast",
        "nconnect": 17,
        "nfs_transport": "tcp",
        "aggregate_read": "100 TB/s",
        "aggregate_write": "100 TB/s",
    }
    refused(["checkpoint", _write(tmp_path, spec), "-m", "llama3-70b"], "nconnect", "17")


def test_a_too_small_radix_for_a_dragonfly_is_blamed_on_the_radix_not_on_a_field_left_out(tmp_path):
    """``scale_out: {topology: dragonfly, radix: 10}`` on 1,536 nodes (6,144 NIC ports) exits 2 with
    "scale_out.dragonfly.global_links_per_switch: 768 groups need at least one global link to each other
    group, more than a h + 1 = 9 (4 switches x 2 global ports + 1)": it names a field the file does not
    set (its dragonfly block is empty), and h = 2 is not the user's but the balanced default of radix 10
    (p = floor(11/4) = 2, a = 4, h = 2, Kim 2008). The value the user gave and must change is radix 10 (a
    balanced radix-10 dragonfly holds at most (a h + 1) a p = 9 x 8 = 72 endpoints); the line must name
    scale_out.radix and 10."""
    refused(["cluster", "show", slingshot(tmp_path, radix=10)], "radix", "10")


def _all_to_all_us(path: str) -> float:
    r = runner.invoke(app, ["collective", "all_to_all", "-c", path, "--size", "1GiB", "--json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    return (out[0] if isinstance(out, list) else out)["time_s"] * 1e6


def test_valiant_routing_on_two_groups_crosses_the_one_arc_once(tmp_path):
    """256 nodes of :data:`SLINGSHOT` (1,024 NIC ports: 2 groups of 32 switches) with ``dragonfly:
    {links_per_arc: 4}``: ``collective all_to_all --size 1GiB`` takes 2.84 s under minimal routing and 5.68 s
    under ``routing: valiant``, and ``cluster show`` prints "global taper (down:up) 256:1 under valiant
    routing". Valiant routing sends a packet "first to a randomly-chosen intermediate group" and then to its
    destination (Kim 2008 Sec. 4.1), two global hops only where the intermediate group is neither the
    source's nor the destination's; with g = 2 there is no third group, every packet between the groups
    crosses the one arc of 4 links exactly once, and the taper is a p / ((g - 1) l) = 512 / 4 = 128:1, as
    under minimal routing. (For g groups a random intermediate group is the source or the destination with
    probability 2/g, so the factor is 2 - 2/g, 2 only as g grows; ``ROUTING_GLOBAL_LINKS`` doubles always.)"""
    minimal = _all_to_all_us(slingshot(tmp_path, nodes=256, dragonfly={"links_per_arc": 4}))
    valiant = _all_to_all_us(
        slingshot(tmp_path, nodes=256, dragonfly={"links_per_arc": 4, "routing": "valiant"})
    )
    assert valiant == pytest.approx(minimal, rel=1e-6)


def test_links_per_arc_on_a_one_group_dragonfly_is_refused(tmp_path):
    """8 nodes of :data:`SLINGSHOT` (32 NIC ports) with ``dragonfly: {links_per_arc: 4}``: ``cluster show``
    prints "dragonfly of 1 group(s) ... 0 global links (0 per pair of groups)", the cabling the file states
    dropped without a word (``links_per_arc`` is checked against a h only through ``l (g - 1)``, which is 0
    for one group). One group has no pair of groups to cable (Kim 2008: global links join groups), so the
    field describes links this design cannot have: exit 2 naming scale_out.dragonfly.links_per_arc and 4,
    as a Clos field on a dragonfly is refused."""
    refused(
        ["cluster", "show", slingshot(tmp_path, nodes=8, dragonfly={"links_per_arc": 4})],
        "links_per_arc",
        "4",
    )


def test_the_far_end_bandwidth_per_gpu_is_no_more_than_the_gpu_can_send(tmp_path):
    """examples/cluster.yaml at 1:1, 128 nodes, ``scale_out.nics_per_gpu: 2``: ``cluster show`` gives "far-end
    bandwidth per GPU 100 GB/s" (bisection 51.2 TB/s / 512 GPUs) and, lines below, "bottleneck: the GPU's
    PCIe Gen5 x16 link(s) to its NIC, 57.6 GB/s per direction ... below the NIC payload of 98.0 GB/s per
    GPU". A GPU's far-end bytes cross its own x16 link before any NIC (GPUDirect RDMA), so no GPU reaches
    the far half faster than 57.6 GB/s (PCIe Gen5 x16 = 64 GB/s x 0.900 payload, README); the headline
    already stops at the NIC line rate (a one-group dragonfly of 16 GPUs: bisection 400 GB/s, per GPU 25
    GB/s), and must stop at the slower link the bytes cross too: <= 57.6 GB/s."""
    spec = yaml.safe_load(EXAMPLE.read_text())
    spec["nodes"] = 128
    spec["scale_out"].update({"oversubscription": ["1:1"], "nics_per_gpu": 2, "planes": 2})
    j = show(_write(tmp_path, spec))
    (per_gpu,) = [h for h in j["headlines"] if h["name"] == "far-end bandwidth per GPU"]
    assert per_gpu["value"] <= 57.6e9 * 1.001, per_gpu

"""Defects a new user's first hour found, from README.md on a fresh clone and virtual environment, then with
bad input to the commands this release changed (multi-NIC and three-tier scale-out, the management
network's managed devices, CPU families, sliding-window models, MoE dispatchers, TPU slices, ZeRO-3
prefetch, embedding chunks, ``inspect`` on other tools' text). Each test runs one command; its docstring
holds what was typed, what it printed and what it should do (README: bad input exits 2 with one line on
stderr naming the field and the value, never a traceback; "tiers a file or ``--tiers`` names are built as
asked or refused"; a part's field "out of its range or at odds with another" is refused). The cluster is
the README's ``examples/cluster.yaml``: 32 x 8 H100 on RoCE, ConnectX-7 400 Gb/s, 4 nodes a rack."""

import re
from pathlib import Path

import pytest
import yaml
from click.testing import Result
from typer.testing import CliRunner

from aifabric.cli.app import app

from .commands import EXAMPLE

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py


def example_with(tmp_path: Path, name: str, **sections: dict) -> str:
    """``examples/cluster.yaml`` with the fields of each named section replaced; returns its path."""
    spec = yaml.safe_load(EXAMPLE.read_text())
    spec["name"] = name
    for section, fields in sections.items():
        spec[section].update(fields)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def refused_naming(args: list[str], *names: str) -> None:
    """``aifabric ARGS`` exits 2 with one stderr line naming each of ``names``."""
    r = runner.invoke(app, args)
    assert r.exit_code == 2, f"exit {r.exit_code}: {r.stdout[-800:]}"
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert all(n in r.stderr for n in names), r.stderr


def three_tiers(ratios: str) -> Result:
    """``aifabric cluster show examples/cluster.yaml --tiers 3 --nodes 1024 --oversubscription RATIOS``."""
    args = ["--tiers", "3", "--nodes", "1024", "--oversubscription", ratios]
    return runner.invoke(app, ["cluster", "show", str(EXAMPLE), *args])


def test_a_trillion_rack_pdus_is_refused_before_it_exhausts_memory(tmp_path):
    """``aifabric cluster mgmt c.yaml --fail "spine:*"`` with ``management: {pdus_per_rack: 1000000000000}``
    (a typo of a few digits too many) ends in ``MemoryError`` and a 50-line traceback under a 4 GB limit
    (``cluster/management.py`` ``management_reachability`` lists every OOB switch); ``cluster show`` exits
    0 and prints 8,000,000,000,000 rack PDUs on 170,327,813,454 SN2201 switches, 17 GW. The same holds for
    ``servers: 1e15``, ``power_shelves_per_rack: 1e9``, ``nvlink_trays_per_rack: 1e10`` and
    ``storage_ports_per_unit: 1e12``. ``dpu_bmcs_per_node: 1000000`` is refused ("less than or equal to
    64"): the other managed-device counts need a bound of the same kind, refused at load naming the field."""
    cluster = example_with(tmp_path, "pdus", management={"pdus_per_rack": 10**12})
    refused_naming(["cluster", "show", cluster], "pdus_per_rack")


def test_three_tiers_asked_are_built_or_refused_not_told_to_add_tiers(tmp_path):
    """``aifabric cluster show examples/cluster.yaml --tiers 3 --oversubscription 2:1,2:1`` (and the same
    with ``scale_out: {tiers: 3, oversubscription: [2:1, 2:1]}`` in the file) prints "error:
    scale_out.oversubscription: 2:1 at the spine is not used: a 2-tier fabric has 1 tier boundaries (give
    1:1 there, or more tiers)": the user gave three tiers, the builder folded them to two because 32 nodes
    fit one pod, and the remedy it names is what was typed. With ``1:1,1:1`` it builds two tiers ("asked 3
    tiers; it fits one pod, so no core tier"). README: "tiers a file or ``--tiers`` names are built as asked
    or refused". With 1,024 nodes the same flags build 3 tiers, leaf 1.98:1 and spine 2:1. Expected: three
    tiers built, or one line that names the asked ``tiers`` 3 and why it cannot be built."""
    r = runner.invoke(app, ["cluster", "show", str(EXAMPLE), "--tiers", "3", "--oversubscription", "2:1,2:1"])
    if r.exit_code == 2:
        assert "more tiers" not in r.stderr and "3" in r.stderr and "tiers" in r.stderr, r.stderr
        return
    assert r.exit_code == 0, r.stdout[-800:]
    assert "3-tier" in r.stdout, r.stdout[:800]


def test_counts_of_devices_all_are_refused_with_devices_bmc(tmp_path):
    """``aifabric cluster show c.yaml`` with ``management: {devices: bmc, pdus_per_rack: 4}`` exits 0 and
    prints exactly what ``devices: bmc`` alone prints (no rack PDU port): the PDU count is dropped without
    a word. ``devices: bmc`` "counts the nodes' BMC ports alone" (``ManagementSpec``), so a managed-device
    count given with it is a field at odds with another, which README says is refused: one line naming
    ``devices`` and ``pdus_per_rack``."""
    cluster = example_with(tmp_path, "bmc", management={"devices": "bmc", "pdus_per_rack": 4})
    refused_naming(["cluster", "show", cluster], "pdus_per_rack", "bmc")


def test_a_user_catalogue_can_add_a_cpu_family_with_its_measured_socket_p2p(tmp_path):
    """``aifabric --catalog cpus.yaml cluster show c.yaml`` with ``cpus: {my-cpu: {name: My CPU, vendor:
    amd, inter_socket_nccl: 16 GB/s, socket_p2p: 55.6 GB/s, source: ...}}`` (the shape of
    ``catalog/data/cpus.yaml``) and ``cpu: my-cpu, cpu_sockets: 2`` in c.yaml prints "error: cpus.yaml:
    unknown family 'cpus'; known: accelerators, scale_up, nics, switches, optics". A cluster's ``cpu`` can
    only name a shipped family, so a host whose cross-socket P2P a user measured (the field this release
    reads, ``CpuSpec.socket_p2p``) cannot be modelled without editing the package, which README's "Your own
    parts" says a user catalogue avoids. Expected: the family accepted and the cluster shown."""
    parts = tmp_path / "cpus.yaml"
    cpu = {"name": "My CPU", "vendor": "amd", "inter_socket_nccl": "16 GB/s", "socket_p2p": "55.6 GB/s"}
    parts.write_text(yaml.safe_dump({"cpus": {"my-cpu": {**cpu, "source": "p2pBandwidthLatencyTest"}}}))
    spec = yaml.safe_load(EXAMPLE.read_text())
    spec.update(name="my-cpu", cpu="my-cpu", cpu_sockets=2)
    cluster = tmp_path / "my-cpu.yaml"
    cluster.write_text(yaml.safe_dump(spec))
    r = runner.invoke(app, ["--catalog", str(parts), "cluster", "show", str(cluster)])
    assert r.exit_code == 0, r.stderr


def test_an_undersubscribed_spine_does_not_raise_the_requested_bisection_past_the_leaf(tmp_path):
    """``aifabric cluster show examples/cluster.yaml --tiers 3 --nodes 1024 --oversubscription 2:1,1:2``
    prints "leaf 2:1 asked, 1.95:1 built, spine 0.5:1 asked, 0.5:1 built; bisection 105.00 TB/s per
    direction (840.0 Tb/s), 0.513 x the requested 204.80 TB/s": the requested figure multiplies the ratios,
    so a spine with more uplinks than downlinks cancels the leaf's 2:1. Hand derivation: 8,192 GPUs x 400
    Gb/s = 50 GB/s each; one half of the cluster injects 4,096 x 50 = 204.8 TB/s, and a 2:1 leaf passes
    half of what its GPUs send up, 102.4 TB/s, whatever the tiers above it do. The build meets the leaf's
    asked ratio; the report calls it half of what was asked. Expected: the requested bisection at most
    102.4 TB/s, or the 1:2 spine refused naming ``oversubscription``."""
    r = three_tiers("2:1,1:2")
    if r.exit_code == 2:
        assert "oversubscription" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        return
    assert r.exit_code == 0, r.stderr
    requested = re.search(r"x the requested ([\d.]+) TB/s", r.stdout)
    assert requested, r.stdout[:800]
    assert float(requested.group(1)) <= 102.4 * 1.001, requested.group(0)


def test_a_ratio_past_the_last_boundary_is_named_by_its_tier_and_position():
    """``aifabric cluster show examples/cluster.yaml --tiers 3 --nodes 1024 --oversubscription
    2:1,2:1,2:1`` prints "error: scale_out.oversubscription: 2:1 at the spine is not used: a 3-tier fabric
    has 2 tier boundaries (give 1:1 there, or more tiers)". The spine's is the second ratio, which a 3-tier
    fabric uses; the unused one is the third, and three tiers are the most ``--tiers`` takes (1-3), so "more
    tiers" cannot be given. Expected: one line naming the third ratio (or the core, or the count 3 of
    ratios given), not the spine, and no remedy beyond the range."""
    r = three_tiers("2:1,2:1,2:1")
    assert r.exit_code == 2, r.stdout[-600:]
    assert "at the spine" not in r.stderr and "more tiers" not in r.stderr, r.stderr

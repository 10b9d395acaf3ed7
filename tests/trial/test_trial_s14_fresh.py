"""Defects a new user's first hour found, from README.md only on a fresh clone and virtual environment, then
with bad input to every command: each test runs one command; its docstring holds the command, what it
printed and what it should do (README: bad input exits 2 with one line on stderr naming the field and the
value, never a traceback; a part "missing a field is refused ..., as is a field out of its range or at odds
with another"). The catalogue NIC and the cluster are the README's own: ``examples/cluster.yaml``'s 32 x 8
H100 with ConnectX-7 400 Gb/s."""

import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from aifabric.cli.app import app

from .commands import EXAMPLE

runner = CliRunner()

DOCS = Path(__file__).parents[2] / "docs" / "reading-your-machine.md"

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

#: ConnectX-7 as ``catalog/data/nics.yaml`` writes it, under a user key: "speed is the per-direction line
#: rate per port as the vendor states it" (the file's header), ``ports`` how many such ports the card has.
USER_NIC = {
    "name": "User NIC",
    "speed": "200 Gb/s",
    "ports": 1,
    "power": "25 W",
    "payload_efficiency": 0.983,
    "latency": "2.7 us",
    "source": "ConnectX-7 datasheet, as catalog/data/nics.yaml",
}


def user_catalogue(tmp_path: Path, **fields: object) -> str:
    """A user catalogue file holding :data:`USER_NIC` (key ``user-nic``) with ``fields`` replaced."""
    path = tmp_path / "parts.yaml"
    path.write_text(yaml.safe_dump({"nics": {"user-nic": {**USER_NIC, **fields}}}))
    return str(path)


def example_with(tmp_path: Path, name: str, **scale_out: object) -> str:
    """``examples/cluster.yaml`` with ``scale_out`` fields replaced; returns its path."""
    spec = yaml.safe_load(EXAMPLE.read_text())
    spec["scale_out"].update(scale_out)
    spec["name"] = name
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def shown(catalogue: str, cluster: str) -> dict:
    """``aifabric --catalog CATALOGUE cluster show CLUSTER --json``; asserts exit 0."""
    r = runner.invoke(app, ["--catalog", catalogue, "cluster", "show", cluster, "--json"])
    assert r.exit_code == 0, r.stdout[-600:] + r.stderr
    return json.loads(r.stdout)


def test_a_nic_with_two_ports_is_not_priced_as_a_nic_with_one(tmp_path):
    """``aifabric --catalog parts.yaml cluster show c.yaml --json`` with a user NIC of ``speed: 200 Gb/s`` and
    ``ports: 2`` (a dual-port card: ConnectX-7 is sold as 2 x 200 Gb/s, MCX755106AS) prints exactly what it
    prints with ``ports: 1`` ("scale-out per GPU | 25 GB/s", "node end: 200G QSFP56 HDR transceiver | 256",
    same watts), where c.yaml is ``examples/cluster.yaml`` on that NIC at 200 Gb/s; ``aifabric collective
    all_reduce -c c.yaml -s 1GiB`` is 11357.51 us with either, and ``ports: 100000000000`` is accepted
    too. ``NicSpec.ports`` is validated (>= 1, README: "a NIC of no ports" is
    refused) and then read by nothing (``grep -rn "\\.ports" src/aifabric``: switches only). The shipped
    file's header says the speed is per port, so a second port is a second link's bandwidth and cable: the
    card's ports must change what is built or priced, or the field must be refused naming ``ports``."""
    cluster = example_with(tmp_path, "user-nic-cluster", nic="user-nic", nic_speed="200 Gb/s")
    one = shown(user_catalogue(tmp_path), cluster)
    r = runner.invoke(
        app, ["--catalog", user_catalogue(tmp_path, ports=2), "cluster", "show", cluster, "--json"]
    )
    if r.exit_code == 2:
        assert "ports" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        return
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) != one, "a NIC of 2 ports is shown exactly as a NIC of 1"


@pytest.mark.parametrize("cage_links", [8, 16])
def test_a_nic_cage_no_module_carries_is_refused_not_replaced(tmp_path, cage_links):
    """``aifabric cluster show c.yaml`` on ``examples/cluster.yaml`` with ``scale_out.nic_cage_links: 8``
    (or 16, more links than the node's 8 NICs have) exits 0 and lists "node end: 400G OSFP/QSFP112
    transceiver | 256": one module per link, exactly as without the field, while ``nic_cage_links: 2`` and
    ``4`` give 128 twin-port 800G and 64 1.6T modules. A cage of 8 x 400G would take a 3.2 Tb/s module; an
    OSFP or QSFP-DD cage has 8 electrical lanes (the OSFP and QSFP-DD MSAs), 1.6 Tb/s at 200G a lane, the
    fastest module in ``catalog/data/optics.yaml``. ``inventory.node_end_modules`` falls back to one module
    per link when no module has the cage's speed, and says nothing. The README refuses a field "at odds with
    another" and builds tiers "as asked or refused": a stated cage no module fills must exit 2 naming
    ``nic_cage_links`` and its value (or the output must say the cages were not built as stated)."""
    cluster = example_with(tmp_path, f"cage-{cage_links}", nic_cage_links=cage_links)
    r = runner.invoke(app, ["cluster", "show", cluster])
    if r.exit_code == 2:
        assert "nic_cage_links" in r.stderr and str(cage_links) in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        return
    assert r.exit_code == 0, r.stderr
    assert "nic_cage_links" in r.stdout, r.stdout[-1500:]


def test_a_nic_latency_of_hours_is_refused(tmp_path):
    """``aifabric --catalog parts.yaml collective all_reduce -c c.yaml -s 1GiB`` with a user NIC of ``latency:
    3 h`` (a slip for "3 us"), c.yaml ``examples/cluster.yaml`` on that NIC, exits 0: "time 108000011307.51
    us" (30 hours; 11357.51 us at 2.7 us) for a 1 GiB all_reduce. Every shipped NIC is 2.7-50 us
    (``catalog/data/nics.yaml``: NCCL's NET hwLat 2.7 us, a 1 GbE BMC 50 us); the CLI itself refuses a
    host launch cost above 1 s (README). ``latency: -2.7 us`` is refused naming the field; an upper bound
    no network reaches must be too: exit 2, one line naming ``latency`` and '3 h'."""
    cluster = example_with(tmp_path, "slow-nic", nic="user-nic", nic_speed="200 Gb/s")
    args = ["--catalog", user_catalogue(tmp_path, latency="3 h"), "collective", "all_reduce", "-c", cluster]
    r = runner.invoke(app, [*args, "-s", "1GiB"])
    assert r.exit_code == 2, r.stdout[-400:]
    assert "latency" in r.stderr and "3 h" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_switch_hop_latency_of_hours_is_refused(tmp_path):
    """``aifabric fabric permutation -c c.yaml --nodes 4 --size 1KiB`` with ``scale_out.hop_latency: 2 h``
    in ``examples/cluster.yaml`` exits 0 with "job0 | 32 | 28800000.000 ms" (eight hours; 0.002 ms
    without the field). The shipped switches' hop latencies are sub-microsecond to a few microseconds
    (``catalog/data/switches.yaml``), and light crosses 20,000 km of fibre in 0.1 s. ``hop_latency: -1 us``
    is refused naming the field; a value no switch has must be too: exit 2, one line naming
    ``scale_out.hop_latency`` and '2 h'."""
    cluster = example_with(tmp_path, "slow-hops", hop_latency="2 h")
    r = runner.invoke(app, ["fabric", "permutation", "-c", cluster, "--nodes", "4", "--size", "1KiB"])
    assert r.exit_code == 2, r.stdout[-400:]
    assert "hop_latency" in r.stderr and "2 h" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.parametrize(("written", "read"), [("0x10", "16"), ("+8", "8")])
def test_a_channel_count_nccl_reads_is_read_as_nccl_reads_it(written, read):
    """``aifabric collective all_reduce -c dgx-h100-superpod --nodes 2 --size 1GiB --env
    NCCL_MAX_NCHANNELS=0x10`` exits 2: "NCCL_MAX_NCHANNELS: expected an integer in 1..64, got '0x10'" (and
    '+8' likewise). NCCL reads every integer parameter with ``strtoll(str, nullptr, 0)`` (``git show
    v2.26.2-1:src/misc/param.cc``, ``ncclLoadParam``): base 0 takes a 0x prefix and a sign, so the run this
    environment describes has 16 (8) channels at most. README: the environment is read with "NCCL's own
    ... grammar"; the prediction must be the one for the decimal value."""
    base = ["collective", "all_reduce", "-c", "dgx-h100-superpod", "--nodes", "2", "--size", "1GiB", "--json"]
    r = runner.invoke(app, [*base, "--env", f"NCCL_MAX_NCHANNELS={written}"])
    assert r.exit_code == 0, r.stderr
    decimal = runner.invoke(app, [*base, "--env", f"NCCL_MAX_NCHANNELS={read}"])
    assert decimal.exit_code == 0, decimal.stderr
    assert json.loads(r.stdout)[0]["time_s"] == json.loads(decimal.stdout)[0]["time_s"]


@pytest.mark.parametrize("target", ["log", "cluster"])
def test_calibrate_never_writes_its_profile_over_a_file_it_reads(tmp_path, target):
    """``aifabric calibrate h100.log --output h100.log`` (docs/reading-your-machine.md's log, nccl-tests #290)
    exits 0 and replaces the log with the profile ("intra_scale: 0.994992 ..."): the measurement is gone,
    and ``-c cluster.yaml -o cluster.yaml`` replaces the cluster file alike. Every other writer refuses a
    path its input has (``--html h100.log``: "must end in .html"; ``sweep`` "never overwrites its own
    store", tests/trial/test_trial_s12_design.py) and README checks output paths "before any work
    starts": exit 2, one line naming ``--output`` and the path, the file as it was."""
    text = re.search(r"```text file=h100.log\n(.*?)```", DOCS.read_text(), re.S)
    assert text is not None
    log = tmp_path / "h100.log"
    log.write_text(text.group(1))
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump({**yaml.safe_load(EXAMPLE.read_text()), "nodes": 1}))
    victim = log if target == "log" else cluster
    before = victim.read_text()
    r = runner.invoke(app, ["calibrate", str(log), "-c", str(cluster), "--output", str(victim)])
    assert victim.read_text() == before, f"calibrate wrote over its input {victim.name}"
    assert r.exit_code == 2, r.stdout[-400:]
    assert "--output" in r.stderr and victim.name in r.stderr, r.stderr

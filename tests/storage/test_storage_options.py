"""``aifabric checkpoint``'s storage options against a cluster file's storage block: what the file says stays
unless an option overrides it, another system starts afresh, GPUDirect Storage follows the system, and a
stated aggregate above the servers' ports is met by those ports."""

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from aifabric import catalog
from aifabric.catalog.loader import LINUX_NFS_MAX_CONNECTIONS, StorageSystemSpec
from aifabric.cli.app import app

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

runner = CliRunner()

#: examples/cluster.yaml (32 x 8 H100, 2 x 400 Gb/s front-end per node)
EXAMPLE = Path(__file__).parents[2] / "examples" / "cluster.yaml"

#: README's 3FS deployment: 180 servers, each 2 x ConnectX-6 200 Gb/s (deepseek-ai/3FS README)
THREE_FS = {"system": "deepseek-3fs", "units": 180, "unit_nic": "connectx-6", "unit_nics": 2}

ARGS = ["--nodes", "16", "-m", "llama3-70b", "--tp", "8", "--pp", "2"]


def _cluster(tmp_path: Path, storage: dict) -> str:
    spec = yaml.safe_load(EXAMPLE.read_text())
    spec.update(name="storage-options", storage=storage)
    path = tmp_path / "storage-options.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def _run(cluster: str, *extra: str) -> dict:
    r = runner.invoke(app, ["checkpoint", cluster, *ARGS, *extra, "--json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def test_another_system_does_not_inherit_the_files_servers(tmp_path):
    # --storage weka on the 3FS file: the 180 3FS servers and their ConnectX-6 ports are 3FS's, not
    # WEKA's; WEKA's one published figure, 97.9 GB/s read into one client (catalogue), is its own stage
    cluster = _cluster(tmp_path, THREE_FS)
    out = _run(cluster, "--storage", "weka", "--storage-read", "1 TB/s", "--storage-write", "1 TB/s")
    assert "storage servers' NICs" not in out["write"]["stages"]
    assert out["restore"]["stages"]["file system per client"] == pytest.approx(97.9e9)


def test_an_aggregate_override_keeps_the_files_servers_ports(tmp_path):
    # --storage-write 20 TB/s on the 3FS file: the servers' ports stay a stage, 180 x 2 x 25 GB/s x 0.96
    # (ConnectX-6 HDR payload) = 8.64 TB/s over the 16 writing nodes = 540 GB/s each
    out = _run(_cluster(tmp_path, THREE_FS), "--storage-write", "20 TB/s")
    assert out["write"]["stages"]["storage servers' NICs"] == pytest.approx(8.64e12 / 16)
    assert out["write"]["stages"]["file system aggregate"] == pytest.approx(20e12 / 16)


def test_an_aggregate_above_the_servers_ports_names_the_ports_as_the_bound(tmp_path):
    # 20 TB/s stated against 8.64 TB/s of server ports (above): the note names both figures
    r = runner.invoke(
        app, ["checkpoint", _cluster(tmp_path, {**THREE_FS, "aggregate_read": "20 TB/s"}), *ARGS]
    )
    assert r.exit_code == 0, r.stderr
    assert "storage.aggregate_read 20 TB/s" in r.stderr and "8.64 TB/s" in r.stderr, r.stderr


def test_a_system_without_gds_takes_the_host_bounce_and_refuses_gds(tmp_path):
    # 3FS: catalogue gds false (USRBIO reads into host memory): the bounce stage is there by default and
    # --no-gds says the same; --gds is refused in one line naming the system. WEKA (gds true): no bounce.
    cluster = _cluster(tmp_path, THREE_FS)
    default = _run(cluster)
    assert "host bounce buffer (no GDS)" in default["write"]["stages"]
    assert _run(cluster, "--no-gds") == default
    r = runner.invoke(app, ["checkpoint", cluster, *ARGS, "--gds"])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1, r.stdout + r.stderr
    assert "--gds" in r.stderr and "deepseek-3fs" in r.stderr, r.stderr
    weka = _run(
        _cluster(tmp_path, {"system": "weka", "aggregate_read": "1 TB/s", "aggregate_write": "1 TB/s"})
    )
    assert "host bounce buffer (no GDS)" not in weka["write"]["stages"]


def test_another_system_without_its_figures_is_refused_naming_the_options(tmp_path):
    # --storage weka alone: WEKA publishes no aggregate, so the run needs one; the line says which option
    r = runner.invoke(app, ["checkpoint", _cluster(tmp_path, THREE_FS), *ARGS, "--storage", "weka"])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1, r.stdout + r.stderr
    assert "--storage-" in r.stderr and "units" not in r.stderr, r.stderr


def test_node_local_drives_are_each_nodes_own(tmp_path):
    # Four D7-PS1010 in every node (catalogue kind local, 14.5 GB/s read each): 16 nodes restoring at once
    # each read their own 58 GB/s, none of it shared and no front-end NIC (2 x 400 Gb/s) in the path; a write
    # figure the catalogue lacks is asked for, not guessed.
    local = {"system": "local-nvme-d7-ps1010", "units": 4, "aggregate_write": "40 GB/s"}
    out = _run(_cluster(tmp_path, local))
    assert out["restore"]["bottleneck"] == "node-local drives"
    assert out["restore"]["rate_bytes_per_s"] == pytest.approx(58e9)
    assert "node front-end NICs" not in out["restore"]["stages"]
    assert out["write"]["rate_bytes_per_s"] == pytest.approx(40e9)
    r = runner.invoke(app, ["checkpoint", _cluster(tmp_path, {**local, "aggregate_write": None}), *ARGS])
    assert r.exit_code == 2
    assert "storage.aggregate_write" in r.stderr


@pytest.mark.parametrize(("drives", "write_gb_s"), [(1, 15.75), (2, 31.5), (4, 40.0), (8, 40.0)])
def test_node_local_writes_grow_with_the_drives_up_to_their_links(tmp_path, drives, write_gb_s):
    # A D7-PS1010 is a PCIe 5.0 x4 drive: 4 x 32 GT/s x 128/130 / 8 = 15.75 GB/s per direction (PCI-SIG 5.0
    # base spec; catalogue unit_link). A stated 40 GB/s node write is bounded by the node's drives' links:
    # 1 drive 15.75, 2 drives 31.5, 4 or 8 drives the stated 40 GB/s; the note names the bound.
    local = {"system": "local-nvme-d7-ps1010", "units": drives, "aggregate_write": "40 GB/s"}
    out = _run(_cluster(tmp_path, local))
    assert out["write"]["rate_bytes_per_s"] == pytest.approx(write_gb_s * 1e9)
    assert out["restore"]["rate_bytes_per_s"] == pytest.approx(drives * 14.5e9)  # reads: each drive's 14.5
    bounded = any("drive(s) carry over their own links" in note for note in out.get("storage_notes", []))
    assert bounded == (drives < 3)


def test_node_local_drives_have_no_servers_ports(tmp_path):
    # A storage server's NICs (unit_nic) on the nodes' own drives would price every node's reads through
    # ports the whole cluster shares (4 x ConnectX-7 over 16 nodes: 12.3 GB/s a node, against the drives'
    # 58 GB/s): refused, naming the field, not priced.
    local = {"system": "local-nvme-d7-ps1010", "units": 4, "aggregate_write": "40 GB/s"}
    local["unit_nic"] = "connectx-7"
    r = runner.invoke(app, ["checkpoint", _cluster(tmp_path, local), *ARGS])
    assert r.exit_code == 2
    assert "storage.unit_nic" in r.stderr and "kind local" in r.stderr
    assert "Traceback" not in r.stderr


#: VAST with a stated aggregate (binding nowhere here), so only the mount and the node's ports matter
VAST = {"system": "vast", "aggregate_read": "10 TB/s", "aggregate_write": "10 TB/s"}


def test_a_default_nfs_mount_moves_one_tcp_connections_rate(tmp_path):
    # nfs_transport tcp with no nconnect is Linux's default mount (man 5 nfs: one connection): 2 GB/s, "the
    # 2 GB/s limit of a single mount" (catalogue vast), whatever the node's 400 Gb/s front-end carries
    out = _run(_cluster(tmp_path, {**VAST, "nfs_transport": "tcp"}))
    for phase in ("write", "restore"):
        assert out[phase]["bottleneck"] == "NFS mount (1 TCP connection(s))"
        assert out[phase]["rate_bytes_per_s"] == pytest.approx(2e9)


def test_enough_rdma_connections_leave_the_port_as_the_bound(tmp_path):
    # nconnect 8 over RDMA: 8 x 50 Gb/s = 50 GB/s of mount (VAST's rule, 2 connections per 100 Gb/s), above
    # the node's front-end port at its payload, which binds again; no mount described, no mount stage
    out = _run(_cluster(tmp_path, {**VAST, "nconnect": 8, "nfs_transport": "rdma"}))
    assert out["write"]["stages"]["NFS mount (8 RDMA connection(s))"] == pytest.approx(50e9)
    assert out["write"]["bottleneck"] == "node front-end NICs"
    assert not any(s.startswith("NFS mount") for s in _run(_cluster(tmp_path, VAST))["write"]["stages"])


def test_a_mount_on_a_system_without_a_connection_rate_is_refused(tmp_path):
    # DDN's EXAScaler client is Lustre, not NFS: the catalogue has no per-connection rate to price nconnect
    storage = {"system": "ddn-ai400x2-turbo", "units": 4, "nconnect": 4}
    r = runner.invoke(app, ["checkpoint", _cluster(tmp_path, storage), *ARGS])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1, r.stdout + r.stderr
    assert "nconnect" in r.stderr and "Traceback" not in r.stderr


def test_a_transport_alone_on_a_system_without_a_connection_rate_names_that_field(tmp_path):
    # nfs_transport without nconnect on DDN's Lustre client: the line names the field the file gave and its
    # value, not an nconnect the file never wrote
    storage = {"system": "ddn-ai400x2-turbo", "units": 4, "nfs_transport": "rdma"}
    r = runner.invoke(app, ["checkpoint", _cluster(tmp_path, storage), *ARGS])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1, r.stdout + r.stderr
    assert "nfs_transport: rdma, one connection" in r.stderr and "nconnect:" not in r.stderr


def test_nconnect_above_the_clients_limit_is_refused(tmp_path):
    # VAST's own client mounts up to 64 connections (catalogue vast: vastnfs 'e.g., 64 connections per
    # mount'; the cluster file says the nodes run it, nfs_client: vendor): 64 is a mount, 1,000 and 65 are
    # one line naming the field, the value and the limit, exit 2
    vendor = {**VAST, "nfs_client": "vendor"}
    assert _run(_cluster(tmp_path, {**vendor, "nconnect": 64, "nfs_transport": "rdma"}))["write"]["stages"]
    for n in (65, 1000):
        r = runner.invoke(app, ["checkpoint", _cluster(tmp_path, {**vendor, "nconnect": n}), *ARGS])
        assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1, r.stdout + r.stderr
        assert f"nconnect: {n} is more than the 64 connections 'vast'" in r.stderr


def test_a_system_without_its_own_client_limit_has_linux_nfs_16():
    # Linux fs/nfs/fs_context.c: '#define NFS_MAX_CONNECTIONS 16', and the Opt_nconnect case refuses more;
    # a catalogue entry that documents no client of its own (WEKA, DDN's Lustre, 3FS) has that limit
    assert LINUX_NFS_MAX_CONNECTIONS == 16
    for key in ("weka", "ddn-ai400x2-turbo", "deepseek-3fs"):
        assert catalog.storage(key).max_nconnect == 16, key
    entry = {"key": "filer", "name": "a filer", "kind": "nfs", "per_connection_tcp": "1 GB/s"}
    entry["source"] = "test part"
    assert StorageSystemSpec.model_validate(entry).max_nconnect == 16


def test_the_stock_linux_client_holds_16_connections_on_vast_and_vendor_needs_a_catalogued_client(tmp_path):
    # nfs_client defaults to the stock Linux client (fs/nfs/fs_context.c: NFS_MAX_CONNECTIONS 16): on VAST
    # 16 mounts, 17 is refused naming the field, the value and 16; vendor on DDN (no client of its own in
    # the catalogue) is refused naming nfs_client
    assert _run(_cluster(tmp_path, {**VAST, "nconnect": 16}))["write"]["stages"]
    r = runner.invoke(app, ["checkpoint", _cluster(tmp_path, {**VAST, "nconnect": 17}), *ARGS])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1, r.stdout + r.stderr
    assert "nconnect: 17 is more than the 16 connections 'vast'" in r.stderr
    ddn = {"system": "ddn-ai400x2-turbo", "units": 4, "nfs_client": "vendor"}
    r = runner.invoke(app, ["checkpoint", _cluster(tmp_path, ddn), *ARGS])
    assert r.exit_code == 2 and "nfs_client: vendor" in r.stderr, r.stdout + r.stderr

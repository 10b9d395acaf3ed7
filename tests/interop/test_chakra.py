"""Chakra execution traces (aifabric/interop/chakra.py, cli/chakra.py): the wire format against Chakra's
et_def.proto field numbers, round trips of a collective and a training step, bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import aifabric as af
from aifabric.cli.app import app
from aifabric.errors import ParseError
from aifabric.interop.chakra import (
    MAX_RANK_FILES,
    SCHEMA_VERSION,
    EtNode,
    export_ranks,
    read_et,
    step_nodes,
    workload,
    write_et,
)


def test_wire_bytes_follow_chakra_field_numbers(tmp_path):
    # Hand-encoded from mlcommons/chakra schema/protobuf/et_def.proto: Node.id = 1 (varint), name = 2
    # (length-delimited), type = 3 (COMP_NODE = 4), duration_micros = 7, attr = 10; AttributeProto.name = 1,
    # int64_val = 9, bool_val = 27. Tag = field << 3 | wire type (0 varint, 2 length-delimited).
    node = EtNode(1, "a", "COMP", 300, attrs={"num_ops": 5, "is_cpu_op": False})
    data = write_et([node], tmp_path / "t.0.et").read_bytes()
    meta = bytes([0x0A, 0x05]) + b"1.0.0"  # GlobalMetadata.version = 1
    assert data[: 1 + len(meta)] == bytes([len(meta)]) + meta
    attr_ops = bytes([0x0A, 0x07]) + b"num_ops" + bytes([0x48, 0x05])
    attr_cpu = bytes([0x0A, 0x09]) + b"is_cpu_op" + bytes([0xD8, 0x01, 0x00])
    body = (
        bytes([0x08, 0x01, 0x12, 0x01]) + b"a" + bytes([0x18, 0x04, 0x38, 0xAC, 0x02])  # 300 = 0xAC 0x02
        + bytes([0x52, len(attr_ops)]) + attr_ops + bytes([0x52, len(attr_cpu)]) + attr_cpu
    )  # fmt: skip
    assert data[1 + len(meta) :] == bytes([len(body)]) + body
    back = read_et(tmp_path / "t.0.et")
    assert back.version == SCHEMA_VERSION and back.nodes == (node,)


def test_collective_round_trip_through_the_cli(tmp_path):
    out = tmp_path / "et"
    args = ["collective", "all_reduce", "--nodes", "2", "--size", "1 GiB", "--json", "--chakra", str(out)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    time_s = json.loads(res.stdout)[0]["time_s"]
    files = sorted(out.glob("workload.*.et"))
    assert len(files) == 16  # 2 DGX H100 nodes x 8 GPUs: one file per rank
    for f in files:
        (node,) = read_et(f).nodes
        assert node.type == "COMM_COLL" and node.attrs["comm_type"] == 0  # ALL_REDUCE
        assert node.attrs["comm_size"] == 2**30 and node.attrs["comm_group_size"] == 16
        assert node.attrs["is_cpu_op"] is False and node.duration_micros == round(time_s * 1e6)
    res = CliRunner().invoke(app, ["import-chakra", str(files[3]), "--nodes", "2", "--json"])
    assert res.exit_code == 0, res.output
    back = json.loads(res.stdout)
    assert back["calls"][0]["time_s"] == pytest.approx(time_s, rel=1e-12)
    assert back["calls"][0]["count"] == 1 and back["compute_s"] == 0.0


@pytest.fixture(scope="module")
def step():
    return af.train(
        "megatron-gpt-39.1b", "dgx-h100-superpod", nodes=2, tp=8, pp=2, microbatch=1, global_batch=4
    ).result


def test_step_round_trip_keeps_every_call(step, tmp_path):
    nodes = step_nodes(step)
    paths = export_ranks(nodes, step.n_gpus, tmp_path)
    assert len(paths) == step.n_gpus == 16
    traces = [read_et(p) for p in paths]
    # each file's GlobalMetadata says which rank it is and how many ranks the trace was written for
    assert [(t.attrs["rank"], t.ranks) for t in traces] == [(r, 16) for r in range(16)]
    w = workload(traces[0])
    # every CommItem comes back with its size, group and call count
    want = {(c.op, float(int(c.message_bytes)), c.dim, c.n_ranks, max(1, round(c.count))) for c in step.comms}
    got = {(c.op, c.message_bytes, c.group, c.group_size, c.count) for c in w.calls}
    assert got == want
    # the compute node holds the critical-path compute time (whole microseconds, as the schema stores it)
    compute = step.breakdown_s["compute"] + step.breakdown_s["memory-bound"]
    assert w.compute_s == pytest.approx(compute, abs=1e-6)
    # node ids are 0..n-1 and every dependency points backwards (a DAG in file order)
    assert [n.id for n in traces[0].nodes] == list(range(len(nodes)))
    assert all(d < n.id for n in traces[0].nodes for d in n.data_deps)
    # pipeline send/recv: what rank r sends to rank d, rank d receives from rank r (stride n_gpus / pp)
    stride = step.n_gpus // step.layout.pp
    for r, tr in enumerate(traces):
        sends = [n for n in tr.nodes if n.type == "COMM_SEND"]
        assert sends and all(n.attrs["comm_dst"] == (r + stride) % step.n_gpus for n in sends)
        peer = traces[(r + stride) % step.n_gpus]
        recvs = [n for n in peer.nodes if n.type == "COMM_RECV"]
        assert [n.attrs["comm_src"] for n in recvs] == [r] * len(sends)


def test_train_chakra_and_import(step, tmp_path):
    out = tmp_path / "et"
    args = ["train", "-m", "megatron-gpt-39.1b", "--nodes", "2", "--tp", "8", "--pp", "2"]
    res = CliRunner().invoke(app, [*args, "--global-batch", "4", "--chakra", str(out)])
    assert res.exit_code == 0, res.output
    assert len(list(out.glob("workload.*.et"))) == 16
    res = CliRunner().invoke(app, ["import-chakra", str(out / "workload.0.et"), "--nodes", "2", "--json"])
    assert res.exit_code == 0, res.output
    back = json.loads(res.stdout)
    assert back["nodes"] == len(step_nodes(step)) and back["skipped_nodes"] == 0
    assert back["serial_total_s"] == pytest.approx(back["compute_s"] + back["communication_s"])


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "empty file"),
        (b"\x85", "truncated or invalid message length"),
        (b"\x7f" + b"x" * 10, "runs past the end"),
        (b"\x03\xff\xff\xff", "not a Chakra GlobalMetadata"),
    ],
)
def test_bad_traces_are_one_line(tmp_path, data, problem):
    f = tmp_path / "bad.0.et"
    f.write_bytes(data)
    with pytest.raises(ParseError, match=problem):
        read_et(f)
    res = CliRunner().invoke(app, ["import-chakra", str(f)])
    assert res.exit_code == 2 and len(res.stderr.strip().splitlines()) == 1 and problem in res.stderr


def test_refusals(tmp_path):
    with pytest.raises(ValueError, match="at most 16,384"):
        export_ranks([], MAX_RANK_FILES + 1, tmp_path)
    a_file = tmp_path / "f"
    a_file.write_text("x")
    res = CliRunner().invoke(app, ["collective", "--size", "1 MiB", "--chakra", str(a_file)])
    assert res.exit_code == 2 and res.stderr.startswith("error: --chakra:")
    assert not list(Path(tmp_path).glob("**/*.et"))


def test_a_trace_too_large_is_refused_before_reading(tmp_path, monkeypatch):
    import aifabric.interop.chakra as chakra

    f = write_et([EtNode(0, "x", "COMP")], tmp_path / "w.0.et")
    monkeypatch.setattr(chakra, "MAX_FILE_BYTES", 4)
    with pytest.raises(ParseError, match="at most 4 for one rank's trace"):
        read_et(f)
    res = CliRunner().invoke(app, ["import-chakra", str(tmp_path)])  # a folder: one line, exit 2
    assert res.exit_code == 2 and len(res.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("stride", [0, -2])
def test_a_group_stride_below_one_names_the_field_and_the_file(tmp_path, stride):
    """comm_group_stride is the spacing of a group's ranks: 0 or below places no group; the refusal names
    the trace's field and its file (never the internal "stride: must be >= 1")."""
    attrs = {"is_cpu_op": False, "comm_type": 0, "comm_size": 2**20, "comm_group_size": 2}
    node = EtNode(0, "dp all_reduce", "COMM_COLL", 0, (), attrs={**attrs, "comm_group_stride": stride})
    f = write_et([node], tmp_path / "workload.0.et")
    with pytest.raises(ParseError, match=f"comm_group_stride = {stride}"):
        read_et(f)
    res = CliRunner().invoke(app, ["import-chakra", str(f)])
    assert res.exit_code == 2
    (line,) = res.stderr.strip().splitlines()
    assert str(f) in line and f"node 0: comm_group_stride = {stride}; must be a whole number >= 1" in line

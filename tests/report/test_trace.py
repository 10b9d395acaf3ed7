"""Chrome/Perfetto trace JSON (aifabric/report/trace.py) and ``--trace`` on train, collective, fabric."""

from __future__ import annotations

import json
from collections import defaultdict

import jsonschema
import pytest
from typer.testing import CliRunner

import aifabric as af
from aifabric.cli.app import app
from aifabric.report.trace import collective_trace, scenario_trace, step_trace, write_trace
from aifabric.training.step import StepOptions

# The Trace Event Format (Google, "Trace Event Format", docs.google.com/document/d/
# 1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU): an object with a traceEvents array; X complete events carry
# ts and dur in microseconds, M metadata events name processes and threads, C counters carry numeric args.
_TS = {"type": "number", "minimum": 0}
TRACE_SCHEMA = {
    "type": "object",
    "required": ["traceEvents"],
    "properties": {
        "displayTimeUnit": {"enum": ["ms", "ns"]},
        "traceEvents": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["ph", "pid", "name"],
                "properties": {"ph": {"enum": ["X", "M", "C"]}, "pid": {"type": "integer"}},
                "allOf": [
                    {
                        "if": {"properties": {"ph": {"const": "X"}}},
                        "then": {
                            "required": ["tid", "ts", "dur", "cat"],
                            "properties": {"ts": _TS, "dur": _TS, "tid": {"type": "integer"}},
                        },
                    },
                    {
                        "if": {"properties": {"ph": {"const": "M"}}},
                        "then": {
                            "required": ["args"],
                            "properties": {
                                "name": {
                                    "enum": [
                                        "process_name",
                                        "thread_name",
                                        "thread_sort_index",
                                        "process_sort_index",
                                    ]
                                }
                            },
                        },
                    },
                    {
                        "if": {"properties": {"ph": {"const": "C"}}},
                        "then": {
                            "required": ["ts", "args"],
                            "properties": {"args": {"additionalProperties": {"type": "number"}}},
                        },
                    },
                ],
            },
        },
    },
}
EPS_US = 1e-6  # float rounding of seconds -> microseconds


def check_trace(tr: dict) -> None:
    """Schema-valid, every X thread named, and X events nest on every (pid, tid) (Perfetto's rule)."""
    jsonschema.validate(tr, TRACE_SCHEMA)
    ev = tr["traceEvents"]
    named = {(e["pid"], e["tid"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    lanes = defaultdict(list)
    for e in ev:
        if e["ph"] == "X":
            assert (e["pid"], e["tid"]) in named
            lanes[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    for spans in lanes.values():
        stack: list[float] = []
        for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            while stack and start >= stack[-1] - EPS_US:
                stack.pop()
            assert not stack or end <= stack[-1] + EPS_US, "X events overlap without nesting"
            stack.append(end)
    json.dumps(tr)


def _slices(tr: dict, cat: str) -> list[dict]:
    return [e for e in tr["traceEvents"] if e["ph"] == "X" and e["cat"] == cat]


def _thread_names(tr: dict) -> dict[int, str]:
    return {e["tid"]: e["args"]["name"] for e in tr["traceEvents"] if e["name"] == "thread_name"}


@pytest.fixture(scope="module")
def step():
    # Megatron-LM GPT 39.1B layout of Narayanan et al. SC'21 Table 1 (t=8, p=2) on 64 DGX H100 nodes
    return af.train("megatron-gpt-39.1b", "dgx-h100-superpod", nodes=64, tp=8, pp=2, microbatch=4).result


def test_step_trace_exposed_terms_add_up_to_the_step(step):
    tr = step_trace(step)
    check_trace(tr)
    exposed = _slices(tr, "exposed")
    assert sum(e["dur"] for e in exposed) / 1e6 == pytest.approx(step.step_s, rel=1e-3)
    # back to back: the critical path starts at 0 and ends at the step time
    exposed.sort(key=lambda e: e["ts"])
    assert exposed[0]["ts"] == 0
    for a, b in zip(exposed, exposed[1:], strict=False):
        assert b["ts"] == pytest.approx(a["ts"] + a["dur"], abs=EPS_US)
    assert {e["name"] for e in exposed} == {p for p, s in step.breakdown_s.items() if s > 0}


def test_step_trace_streams_overlap_where_the_model_overlaps(step):
    tr = step_trace(step)
    names = _thread_names(tr)
    compute = [e for e in _slices(tr, "exposed") if e["name"] == "compute"][0]
    hidden = _slices(tr, "hidden")
    # the DP gradient reduce-scatter hides behind the backward pass (--overlap-grad-reduce)
    assert any(c.hidden_s > 0 for c in step.comms) and hidden
    assert sum(e["dur"] for e in hidden) / 1e6 == pytest.approx(sum(c.hidden_s for c in step.comms), rel=1e-9)
    for e in hidden:
        assert e["tid"] != compute["tid"] and "overlapped" in names[e["tid"]]
        assert e["ts"] < compute["ts"] + compute["dur"] and e["ts"] + e["dur"] > compute["ts"]
    # streams are named by rank group: TP over the 8 GPUs of one NVLink domain
    assert any(n.startswith("TP group (8 ranks / 1 domain") for n in names.values())


def test_step_trace_without_overlap_has_no_hidden_dp():
    st = af.train(
        "megatron-gpt-39.1b",
        "dgx-h100-superpod",
        nodes=64,
        tp=8,
        pp=2,
        microbatch=4,
        options=StepOptions(overlap_grad_reduce=False, overlap_param_gather=False),
    ).result
    tr = step_trace(st)
    check_trace(tr)
    assert not [e for e in _slices(tr, "hidden") if e["name"].endswith("dp")]
    assert sum(e["dur"] for e in _slices(tr, "exposed")) / 1e6 == pytest.approx(st.step_s, rel=1e-3)


def test_exposed_calls_nest_inside_their_part(step):
    tr = step_trace(step)
    parts = {(e["tid"]): e for e in _slices(tr, "exposed") if e["name"] in ("tp", "pp", "dp")}
    for call in _slices(tr, "exposed.call"):
        parent = parts[call["tid"]]
        assert (
            parent["ts"] - EPS_US <= call["ts"]
            and call["ts"] + call["dur"] <= parent["ts"] + parent["dur"] + EPS_US
        )


def test_collective_trace_networks_add_up():
    r = af.collective_time("all_reduce", "1 GiB", "dgx-h100-superpod", ranks=64).result
    tr = collective_trace(r)
    check_trace(tr)
    (total,) = _slices(tr, "total")
    assert total["dur"] / 1e6 == pytest.approx(r.time_s, rel=1e-12)
    assert sum(e["dur"] for e in _slices(tr, "exposed")) == pytest.approx(total["dur"], rel=1e-9)


def test_fabric_traces_name_links_per_tier():
    r = af.collective_time("all_reduce", "64 MiB", "dgx-h100-superpod", ranks=32, engine="links").result
    tr = collective_trace(r)
    check_trace(tr)
    links = _slices(tr, "link")
    assert links and all(e["args"]["utilisation"] >= 0 for e in links)
    sc = af.fabric("all_reduce", "dgx-h100-superpod", size="64 MiB", nodes=4, engine="links").result
    tr = scenario_trace(sc)
    check_trace(tr)
    (job,) = _slices(tr, "job")
    assert job["dur"] / 1e6 == pytest.approx(sc.result.time_s, rel=1e-12)
    assert {e["name"].split(":")[0] for e in _slices(tr, "tier")} == set(sc.tiers)


def test_write_trace_refuses_other_extensions(tmp_path):
    with pytest.raises(ValueError, match="--trace"):
        write_trace({"traceEvents": []}, tmp_path / "t.txt")


@pytest.mark.parametrize(
    "args",
    [
        ("train", "-m", "megatron-gpt-39.1b", "--nodes", "64", "--tp", "8", "--pp", "2", "-b", "4"),
        ("collective", "all_reduce", "--nodes", "2", "--min", "1 MiB", "--max", "4 MiB"),
        ("fabric", "all_reduce", "--nodes", "4", "--size", "16 MiB", "--engine", "links"),
    ],
)
def test_cli_trace_option(tmp_path, args):
    out = tmp_path / "sub" / "t.json"
    res = CliRunner().invoke(app, [*args, "--trace", str(out)])
    assert res.exit_code == 0, res.output
    check_trace(json.loads(out.read_text()))


def test_cli_trace_bad_path_exit_2(tmp_path):
    res = CliRunner().invoke(app, ["collective", "--size", "1 MiB", "--trace", str(tmp_path / "t.csv")])
    assert res.exit_code == 2 and "--trace" in res.output

"""HTML reports (aifabric/report/html.py), loaded in headless Chromium (Debian's ``chromium``).

Without Chromium the browser tests skip on a developer's machine and FAIL when ``CI=true`` (``.ci/run``
installs the package and sets it), so CI never passes without having loaded the pages.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.report.html import Report, check_html_path, render_html, sweep_report

# Flags proven on the offline Debian CI (reference/reports-sweeps-interop.md, sec. 6.3): no sandbox as root,
# no GPU, no background networking (connections are refused there), a fresh profile.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed: .ci/run must install Debian's chromium package")
        pytest.skip("needs Debian's chromium (apt-get install chromium); CI installs it")
    return path


def _browse(chromium: str, page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    args = [chromium, *FLAGS, f"--user-data-dir={tmp / 'profile'}", *extra, page.as_uri()]
    return subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=tmp)


class _Ids(HTMLParser):
    """Text of every element with an id (unescaped)."""

    def __init__(self) -> None:
        super().__init__()
        self.text: dict[str, str] = {}
        self._open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._open.append(dict(attrs).get("id") or "")
        if self._open[-1]:
            self.text.setdefault(self._open[-1], "")

    def handle_endtag(self, tag: str) -> None:
        if self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for key in self._open:
            if key:
                self.text[key] += data


def _load(chromium: str, page: Path, tmp: Path) -> dict[str, str]:
    """Load ``page``: no console message, the script ran, a non-blank screenshot; returns text by id."""
    dom = _browse(chromium, page, tmp, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    assert not console, console
    assert 'data-ready="yes"' in dom.stdout  # the page's one script ran to its end
    shot = tmp / "screenshot.png"
    res = _browse(chromium, page, tmp, f"--screenshot={shot}", "--window-size=1280,2000")
    assert res.returncode == 0 and shot.exists(), res.stderr[-2000:]
    import matplotlib.image

    pixels = np.asarray(matplotlib.image.imread(shot))[..., :3]
    assert pixels.std() > 0.05  # not one flat colour
    assert (pixels.min(axis=-1) < 0.9).mean() > 0.02  # > 2 % of the pixels are ink, not white
    parser = _Ids()
    parser.feed(dom.stdout)
    return parser.text


def _self_contained(page: Path) -> None:
    text = page.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), (
        "the report fetches from the network"
    )
    assert "<svg" in text


def test_plan_report_in_chromium(chromium, tmp_path):
    page = tmp_path / "plan.html"
    args = ["plan", "-m", "megatron-gpt-39.1b", "--nodes", "64", "--top", "3", "--html", str(page), "--json"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    best = json.loads(res.stdout)["ranked"][0]
    _self_contained(page)
    ids = _load(chromium, page, tmp_path)
    assert ids["step-time"].strip() == f"{best['step_s']:.4f} s"
    assert ids["winner"].startswith(f"tp={best['layout']['tp']} pp={best['layout']['pp']}")
    assert "GPUs" in ids["cluster"] and "<svg" not in ids["topology"]  # the drawing is an element, not text


def test_fabric_report_in_chromium(chromium, tmp_path):
    page = tmp_path / "fabric.html"
    args = ["fabric", "all_to_all", "--nodes", "8", "--size", "16 MiB", "--html", str(page), "--json"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    hot = json.loads(res.stdout)["top_links"][0]
    _self_contained(page)
    ids = _load(chromium, page, tmp_path)
    assert ids["bottleneck-link"].strip() == hot["label"]
    assert ids["bottleneck-utilisation"].startswith(f"{hot['utilisation']:.0%}")


def test_console_errors_are_caught(chromium, tmp_path):
    """The check above would see a failing script (a control for `_load`)."""
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>undefinedFunction();</script></body></html>")
    res = _browse(chromium, bad, tmp_path, "--dump-dom")
    assert any(":CONSOLE" in line and "undefinedFunction" in line for line in res.stderr.splitlines())


def test_user_strings_are_escaped():
    spec = preset("dgx-h100-superpod", nodes=2)
    rep = Report(
        kind="train",
        title="<script>alert(1)</script>",
        spec=spec,
        topology=None,
        headline=(("x", "label <b>", "<img src=x>"),),
        inputs=(("cluster", "<i>"),),
    )
    page = render_html(rep)
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    assert "<img src=x>" not in page and "&lt;i&gt;" in page


@pytest.mark.parametrize(
    "args",
    [
        ("collective", "--size", "1 MiB"),
        ("train", "-m", "megatron-gpt-39.1b", "--nodes", "8", "--tp", "8", "--pp", "2"),
    ],
)
def test_other_commands_write_reports(tmp_path, args):
    page = tmp_path / "r.html"
    res = CliRunner().invoke(app, [*args, "--html", str(page)])
    assert res.exit_code == 0, res.output
    _self_contained(page)
    assert 'id="answer"' in page.read_text()


def test_bad_html_path_exit_2(tmp_path):
    res = CliRunner().invoke(app, ["collective", "--size", "1 MiB", "--html", str(tmp_path / "r.pdf")])
    assert res.exit_code == 2 and "--html" in res.output
    with pytest.raises(ValueError, match="directory"):
        check_html_path(tmp_path)


def test_sweep_report_in_chromium(chromium, tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        "cluster: dgx-h100-superpod\nvary:\n  nodes: [8, 16]\ncollectives:\n"
        '  - {op: all_reduce, sizes: ["1 MiB", "1 GiB"]}\n'
    )
    page = tmp_path / "sweep.html"
    args = [
        "sweep",
        str(grid),
        "--db",
        str(tmp_path / "s.db"),
        "--html",
        str(page),
    ]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    _self_contained(page)
    ids = _load(chromium, page, tmp_path)
    assert ids["points"].strip() == "4" and ids["failed"].strip() == "0"
    assert ids["rows"].count("all_reduce") == 2  # the fastest variant of each size


DISCOVERY = Path(__file__).resolve().parents[1] / "discovery" / "data"


def test_inspect_report_in_chromium(chromium, tmp_path):
    page = tmp_path / "inspect.html"
    # case 17: Azure NDv4 / NDv5 NCCL topology XML, two <system> documents (two nodes)
    log = DISCOVERY / "case_17_azure_ndv4_ndv5_topology_xml.txt"
    res = CliRunner().invoke(app, ["inspect", str(log), "--html", str(page), "--json"])
    assert res.exit_code == 0, res.output
    first = json.loads(res.stdout)[0]
    _self_contained(page)
    ids = _load(chromium, page, tmp_path)
    assert ids["gpus"].strip() == str(len(first["gpus"]))
    expected = first["expected_busbw"][0]
    assert ids["expected-busbw"].strip().startswith(f"{expected['busbw_bytes_per_s'] / 1e9:,.1f} GB/s")
    assert ids["rows"].count("yes") + ids["rows"].count("no") >= len(first["gpus"])  # one row per GPU


def test_nccl_tests_compare_report_in_chromium(chromium, tmp_path):
    page = tmp_path / "nccl.html"
    # case 03: Dell XE9680 H100, nccl-tests all_reduce on 2, 4 and 8 nodes (seven tables in the log)
    log = DISCOVERY / "case_03_h100_xe9680_ib_scaling_2_4_8_nodes.txt"
    res = CliRunner().invoke(app, ["nccl-tests", "compare", str(log), "--html", str(page), "--json"])
    assert res.exit_code == 0, res.output
    tables = json.loads(res.stdout)["tables"]
    _self_contained(page)
    ids = _load(chromium, page, tmp_path)
    assert ids["tables"].strip() == str(len(tables)) == "7"
    big = tables[0]["rows"][-1]
    assert ids["measured-busbw"].strip() == f"{big['measured_busbw_bytes_per_s'] / 1e9:,.2f} GB/s"
    assert ids["predicted-busbw"].strip() == f"{big['predicted_busbw_bytes_per_s'] / 1e9:,.2f} GB/s"
    assert ids["deviation"].strip() == f"{tables[0]['large_deviation']:+.1%}"
    assert ids["rows"].count("%") == sum(len(t["rows"]) for t in tables)  # every row, with its deviation


def test_checkpoint_report_in_chromium(chromium, tmp_path):
    page = tmp_path / "checkpoint.html"
    args = [
        "checkpoint",
        "-m",
        "llama3-70b",
        "--nodes",
        "64",
        "--storage",
        "ddn-ai400x2-turbo",
        "--storage-units",
        "4",
    ]
    res = CliRunner().invoke(app, [*args, "--mtbf", "2.8 h", "--html", str(page), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    # llama3-70b: 70.55e9 parameters x (2 bf16 weights + 12 fp32 master and Adam m, v) = 987.8 GB
    assert out["checkpoint_bytes"] == pytest.approx(70.55e9 * 14, rel=1e-3)
    _self_contained(page)
    ids = _load(chromium, page, tmp_path)
    assert ids["checkpoint-size"].strip() == "987.8 GB"
    assert ids["write-time"].strip() == f"{out['write']['seconds']:,.2f} s"
    assert ids["write-bottleneck"].strip() == out["write"]["bottleneck"]
    assert ids["interval-sync"].strip() == f"{out['interval_sync_s']:,.0f} s"


@pytest.mark.parametrize(
    ("args", "key"),
    [
        (("collective", "all_reduce", "--nodes", "4", "--size", "1 GiB"), "busbw"),
        (("train", "-m", "megatron-gpt-39.1b", "--nodes", "8", "--tp", "8", "--pp", "2"), "step-time"),
    ],
)
def test_collective_and_train_reports_in_chromium(chromium, tmp_path, args, key):
    page = tmp_path / "r.html"
    res = CliRunner().invoke(app, [*args, "--html", str(page), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    _self_contained(page)
    ids = _load(chromium, page, tmp_path)
    if key == "busbw":
        row = data[-1]
        assert ids["busbw"].strip() == f"{row['busbw_bytes_per_s'] / 1e9:,.2f} GB/s"
    else:
        assert ids["step-time"].strip() == f"{data['step_s']:.4f} s"


def test_html_is_checked_before_work_on_the_new_commands(tmp_path):
    log = DISCOVERY / "case_01_dgx_h100_allreduce_single_node.txt"
    for args in (
        ["inspect", str(DISCOVERY / "case_17_azure_ndv4_ndv5_topology_xml.txt")],
        ["nccl-tests", "compare", str(log)],
        ["checkpoint", "-m", "llama3-70b"],
    ):
        res = CliRunner().invoke(app, [*args, "--html", str(tmp_path / "r.pdf")])
        assert (
            res.exit_code == 2
            and res.stderr.strip() == f"error: --html: '{tmp_path / 'r.pdf'}' must end in .html"
        )


def test_sweep_report_shows_a_training_row_by_its_step_mfu_and_tokens():
    # a store of only training points (sweep --html of a `train:` section): NULL size and busbw, a step
    # time, MFU and tokens/s; the figures are those stored, as the CLI prints them
    frame = pd.DataFrame(
        {
            "op": ["train:llama3-8b"],
            "message_bytes": [0.0],
            "time_s": [4.0],
            "busbw_bytes_per_s": [None],
            "mfu": [0.478],
            "tokens_per_s": [130_546.0],
            "network_watts": [21_885.0],
            "error": [""],
            "vary_nodes": [2],
        }
    )
    report = sweep_report(frame, preset("h100-ib-2node"), store="s.db")
    (row,) = report.rows
    cells = dict(zip(report.columns, row, strict=True))
    assert cells["size"] == "-" and cells["busbw (GB/s)"] == "-" and cells["time"] == "4 s"
    assert cells["MFU"] == "47.8%" and cells["tokens/s"] == "130,546" and cells["variant"] == "nodes=2"

"""CLI: compare prints the NCCL lines it used and a verdict; --ranks, --nodes, --gpus-per-node."""

from __future__ import annotations

import json
from pathlib import Path

from tests.discovery.test_evidence_compare import NVLS_OFF, _info, _log
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()


def test_compare_names_the_lines_and_the_verdict(tmp_path: Path) -> None:
    log = tmp_path / "gdr.log"
    log.write_text(_log(_info(NVLS_OFF, gdr=False), 120.0))
    res = runner.invoke(app, ["nccl-tests", "compare", str(log)])
    assert res.exit_code == 0, res.output
    assert "NCCL said: line" in res.stdout and "NVLS multicast support is not available" in res.stdout
    assert "verdict: no_gdr" in res.stdout
    assert "evidence line" in res.stdout and "[send] via NET/IB/0" in res.stdout
    data = json.loads(runner.invoke(app, ["nccl-tests", "compare", str(log), "--json"]).stdout)
    table = data["tables"][0]
    assert table["verdict"] == "no_gdr" and table["network"] == "IB"
    assert table["findings"][0]["evidence"][0]["line"] > 0


def test_ranks_option_and_the_question(tmp_path: Path) -> None:
    log = tmp_path / "r71.log"
    log.write_text(
        "#  Rank 71 Group  0 Pid 1 on node-9 device  7 [0x18] NVIDIA H100 80GB HBM3\n"
        "#  size  count  type  redop  root  time  algbw  busbw #wrong  time  algbw  busbw #wrong\n"
        # busbw / algbw = 1.97 / 1.00 holds 2(n-1)/n for 45 to 132 ranks (two decimals: [1.965 / 1.005,
        # 1.975 / 0.995]), the 72 Rank 71 implies among them, and pins none (nccl-tests doc/PERFORMANCE.md)
        "  1048576  262144  float  sum  -1  1048.6  1.00  1.97  0  1048.6  1.00  1.97  0\n"
    )
    res = runner.invoke(app, ["nccl-tests", "compare", str(log)])
    assert res.exit_code == 2
    assert res.stderr.strip().count("\n") == 0
    assert "line 2" in res.stderr or ":2:" in res.stderr
    assert "give --ranks" in res.stderr
    ok = runner.invoke(app, ["nccl-tests", "compare", str(log), "--ranks", "72", "--gpus-per-node", "8"])
    assert ok.exit_code == 0, ok.output
    assert "72 ranks on 9 node(s)" in ok.stdout
    bad = runner.invoke(app, ["nccl-tests", "compare", str(log), "--ranks", "72", "--nodes", "5"])
    assert bad.exit_code == 2 and "do not fill 5 nodes evenly" in bad.stderr

"""A shortfall the log does not explain: verdict ``unexplained_shortfall`` in text, JSON and HTML, with the
measured fraction of the ceiling and the evidence that would tell the causes apart (issue 9, item 5)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.discovery.test_evidence_compare import NVLS_OFF, _info, _log
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.discovery.compare import compare_nccl_tests

runner = CliRunner()
CASE_08 = Path(__file__).parent / "data" / "case_08_b200_gke_a4_topo_and_2node_allgather.txt"
#: What the text must ask for, so that the causes can be told apart (NCCL's own debug switches).
ASKS = ("NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH", "ibv_devinfo", "nvidia-smi topo -m")


def test_case_08_names_no_cause_the_log_does_not_show() -> None:
    # case 08 README (kubernetes-sigs/dranet GKE guide): 2 x 8 B200, 8 x 400G RoCE per node through the gIB
    # plugin, all_gather 260 GB/s of the ~390 GB/s 8-NIC ceiling; no NCCL INFO line, no setting printed.
    table = compare_nccl_tests(CASE_08.read_text()).tables[0]
    assert table.verdict == "unexplained_shortfall"
    assert [f.cause for f in table.findings] == ["unexplained_shortfall"]
    assert not table.findings[0].evidence
    named = {c for r in table.rows for c in r.causes}
    assert not named & {"network_settings", "no_gdr", "acs_iommu", "vm_pcie", "pxn_off", "one_nic"}
    text = table.describe("unexplained_shortfall")
    # 260.03 / 391.86 GB/s at 8 GiB (the model's 8 x 400G ring ceiling): 66 %
    assert "measured 260 GB/s busbw" in text
    assert "66% of the model's 392 GB/s ceiling of 8 x 400G NICs" in text
    assert all(ask in text for ask in ASKS)
    # the small messages (~250-300 us against ~24 us for NET/IB, case README) point at another network path
    assert "15 small-message row(s) take 12x the model's latency" in text


def test_cli_text_json_and_html_say_the_same(tmp_path: Path) -> None:
    page = tmp_path / "case08.html"
    res = runner.invoke(app, ["nccl-tests", "compare", str(CASE_08), "--json", "--html", str(page)])
    assert res.exit_code == 0, res.output
    table = json.loads(res.stdout)["tables"][0]
    assert table["verdict"] == "unexplained_shortfall"
    finding = table["findings"][0]
    assert finding["cause"] == "unexplained_shortfall" and finding["evidence"] == []
    assert "66% of the model's 392 GB/s" in finding["text"]
    html = page.read_text()
    assert "unexplained_shortfall" in html and "NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH" in html
    text = runner.invoke(app, ["nccl-tests", "compare", str(CASE_08)]).stdout
    assert "verdict: unexplained_shortfall" in text and "adaptive routing" not in text


def test_evidence_still_names_its_cause_and_numbers_alone_do_not() -> None:
    # 120 GB/s of ~390 on 2 x 8 H100 over RoCE (a 2-8x loss, NVIDIA/nccl #412): with connections printed
    # without /GDRDMA the cause is no_gdr with its lines; without any INFO line GDR off, ACS and a VM fit the
    # numbers alike, so none is named.
    with_lines = compare_nccl_tests(_log(_info(NVLS_OFF, gdr=False), 120.0)).tables[0]
    assert with_lines.verdict == "no_gdr" and with_lines.findings[0].evidence
    bare = compare_nccl_tests(_log([], 120.0)).tables[0]
    assert bare.verdict == "unexplained_shortfall"
    assert all(r.causes == ("unexplained_shortfall",) for r in bare.flagged_rows)


def test_a_settings_sized_shortfall_offers_them_only_as_the_alternative() -> None:
    # Network settings took 8 H100 nodes from 320 to 391 GB/s (NVIDIA/nccl-tests #309): a plateau 17 % below
    # the model fits them, but no INFO line shows them off, so it is unexplained with the settings as the
    # alternative (issue 9 trial, defect 10); one 30 % below is beyond what they were shown to recover, and
    # nothing else in the log (NET/IB with GDR, NVLS unavailable) names a cause.
    model = compare_nccl_tests(_log(_info(NVLS_OFF), 300.0)).tables[0].rows[-1].predicted_busbw_bytes_per_s
    tuned = compare_nccl_tests(_log(_info(NVLS_OFF), 0.83 * model / 1e9)).tables[0]
    assert tuned.verdict == "unexplained_shortfall"
    assert tuned.rows[-1].causes == ("unexplained_shortfall", "network_settings")
    low = compare_nccl_tests(_log(_info(NVLS_OFF), 0.70 * model / 1e9)).tables[0]
    assert low.verdict == "unexplained_shortfall"
    assert "70% of the model's" in low.describe("unexplained_shortfall")

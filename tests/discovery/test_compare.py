"""Validation of :mod:`aifabric.discovery.compare`: nccl-tests logs against the formula engine.

Each accuracy test names its log and asserts a tolerance (the foundation issue's targets):

* case 01 (NVIDIA/nccl-tests #290): 8 x H100, one node, NVLS: busbw within 10 % at >= 1 GB; with NVLS off
  (NCCL_NVLS_ENABLE=0) the same node measured 368.76 GB/s (NVIDIA/nccl-tests #309, quoted in case 01).
* case 03 T7 (NVIDIA/nccl-tests #309): 2 x 8 H100, 8 x 400G IB, NCCL_ALGO=Ring: within 10 % at >= 1 GB.
* case 13 (University of Sheffield docs): 4 x V100 PCIe, largest sizes within 10 % (NCCL 2.8.3 runs).
* case 03 T1/T2: small-message all_reduce time on 2 and 4 nodes within 15 % of ~25 and ~35 us.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from aifabric.discovery.compare import (
    CAUSES,
    NOT_FAULTS,
    TableComparison,
    compare_nccl_tests,
    describe_cause,
    error_tolerance,
)
from aifabric.discovery.inference import accelerator_from_name
from aifabric.discovery.nccl_env import NcclSettings, nccl_settings
from aifabric.discovery.nccl_tests import parse_nccl_tests
from aifabric.errors import ParseError

FIXTURES = Path(__file__).parent / "fixtures"

CASE_01 = "case_01_dgx_h100_allreduce_single_node.txt"
CASE_03 = "case_03_h100_xe9680_ib_scaling_2_4_8_nodes.txt"
CASE_08 = "case_08_b200_gke_a4_topo_and_2node_allgather.txt"
CASE_13 = "case_13_v100_pcie_4gpu_no_nvlink.txt"
LOG_CASES = (CASE_01, CASE_03, CASE_08, CASE_13)
GB = 1 << 30


def _table(case_text: dict[str, str], name: str, index: int, **kw) -> TableComparison:
    return compare_nccl_tests(case_text[name], source=name, tables=[index], **kw).tables[0]


def _busbw_error(row) -> float:  # noqa: ANN001
    """Model busbw relative to the measurement: predicted / measured - 1."""
    return row.predicted_busbw_bytes_per_s / row.measured_busbw_bytes_per_s - 1.0


# -- every log of the cases ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", LOG_CASES)
def test_every_log_parses_and_compares(case_text: dict[str, str], name: str) -> None:
    result = compare_nccl_tests(case_text[name], source=name)
    assert result.tables
    for comp in result.tables:
        assert comp.rows and len(comp.rows) == len(comp.table.rows)
        assert comp.n_ranks == comp.table.n_ranks
        for row in comp.rows:
            assert row.predicted.time_s > 0
            assert row.deviation == pytest.approx(row.predicted.time_s / row.measured_time_s - 1)
            below = row.deviation < -comp.threshold
            assert all(c in CAUSES for c in row.causes) and (bool(row.causes) == below)
            # FLAG only a row below the threshold whose first cause is a fault; the others get a note
            assert not row.flagged or (below and row.causes[0] not in NOT_FAULTS)
            assert row.flagged or not below or any(n.startswith("below the model") for n in row.notes)
        # the issue: "a healthy run yields no flag" -- and a flag always comes with a finding
        assert (comp.verdict == "healthy") == (not comp.flagged_rows), comp.index
    # case 08's last two tables were published without rows: skipped, not an error
    if name == CASE_08:
        assert [i for i, _, _ in result.skipped] == [2, 3]


def test_metadata_worked_out_from_the_logs(case_text: dict[str, str]) -> None:
    t1 = _table(case_text, CASE_01, 1)
    assert (t1.op, t1.n_ranks, t1.n_nodes, t1.spec.accelerator) == ("all_reduce", 8, 1, "h100-sxm")
    assert t1.assumptions == ()  # the rank lines name the GPU and one node needs no NIC speed
    t7 = _table(case_text, CASE_03, 7)
    assert (t7.n_ranks, t7.n_nodes) == (16, 2)
    assert any("'H100' read from the text" in a for a in t7.assumptions)
    ag = _table(case_text, CASE_08, 1)
    assert (ag.op, ag.n_ranks, ag.n_nodes, ag.spec.accelerator) == ("all_gather", 16, 2, "b200")
    v100 = _table(case_text, CASE_13, 1)
    assert v100.spec.accelerator == "v100-pcie-32gb" and v100.spec.scale_up.kind == "pcie"


# -- the accuracy targets ------------------------------------------------------------------------------------


def test_case01_h100_one_node_nvls_within_10pct_at_1gb(case_text: dict[str, str]) -> None:
    comp = _table(case_text, CASE_01, 1)
    big = [r for r in comp.rows if r.size_bytes >= GB]
    assert len(big) == 3
    for row in big:
        assert row.predicted.algorithm == "nvls"
        assert abs(_busbw_error(row)) < 0.10, (row.size_bytes, row.deviation)


def test_case01_h100_one_node_nvls_off_within_10pct_of_368(case_text: dict[str, str]) -> None:
    # Case 01 "SUPPORTING NUMBERS": with NCCL_NVLS_ENABLE=0 the #309 node measured 368.76 GB/s (its peak; the
    # issue gives no table). The same sizes predicted with NVLS excluded must land within 10 % of it.
    comp = _table(case_text, CASE_01, 1, no_nvls=True)
    for row in (r for r in comp.rows if r.size_bytes >= GB):
        assert row.predicted.algorithm == "ring"
        assert row.predicted_busbw_bytes_per_s == pytest.approx(368.76e9, rel=0.10)


def test_nvls_enable_0_in_the_command_maps_to_exclude_nvls(case_text: dict[str, str]) -> None:
    # Case 01's table behind a launcher line that sets NCCL_NVLS_ENABLE=0 (only the mapping is tested here).
    text = case_text[CASE_01].replace(
        "# nThread 1 nGpus 8",
        "mpirun -np 1 -x NCCL_NVLS_ENABLE=0 ./all_reduce_perf -b 128M -e 4G -g 8\n# nThread 1 nGpus 8",
    )
    comp = compare_nccl_tests(text).tables[0]
    assert comp.settings.env["NCCL_NVLS_ENABLE"] == "0" and "nvls" in comp.settings.exclude
    assert {r.predicted.algorithm for r in comp.rows} == {"ring"}
    # the commentary of case 01 mentions NCCL_NVLS_ENABLE=0 in prose: that must not count
    assert _table(case_text, CASE_01, 1).settings.exclude == ()


def test_case03_t7_two_nodes_ring_within_10pct_at_1gb(case_text: dict[str, str]) -> None:
    comp = _table(case_text, CASE_03, 7)
    assert comp.settings.algorithm == "ring" and comp.settings.env["NCCL_ALGO"] == "Ring"
    big = [r for r in comp.rows if r.size_bytes >= GB]
    assert len(big) == 4
    for row in big:
        assert row.predicted.algorithm == "ring"
        assert abs(_busbw_error(row)) < 0.10
    assert big[-1].measured_busbw_bytes_per_s == pytest.approx(392.69e9, rel=1e-3)


@pytest.mark.parametrize("index", [1, 2])
def test_case13_v100_pcie_largest_sizes_within_10pct(case_text: dict[str, str], index: int) -> None:
    # RAW DATA 1 and 2 (NCCL 2.8.3): plateau 9.40 GB/s vs NCCL's PCIe model 12 / 1.2 = 10 GB/s.
    comp = _table(case_text, CASE_13, index)
    largest = sorted(comp.rows, key=lambda r: r.size_bytes)[-4:]
    for row in largest:
        assert abs(_busbw_error(row)) < 0.10


def test_case13_v100_old_nccl_is_outside_10pct_and_says_so(case_text: dict[str, str]) -> None:
    # RAW DATA 3 ran NCCL 2.4.2 and reached 11.18 GB/s: the model (the newest release's default: SHM, as the
    # GPUs' path PHB is beyond NCCL's default P2P level PXB on Intel since 2.9.6, paths.cc; 9.6 GB/s) is
    # 14.3 % low there (10.7 % with P2P through the CPU, 10.0 GB/s, the default of NCCL <= 2.8 on Intel).
    # Recorded so that a change to the PCIe model shows up; not one of the targets.
    comp = _table(case_text, CASE_13, 3)
    row = max(comp.rows, key=lambda r: r.size_bytes)
    assert _busbw_error(row) == pytest.approx(-0.143, abs=0.01)
    assert not row.flagged  # the measurement is above the model: never flagged


@pytest.mark.parametrize(("index", "nodes", "nominal_us"), [(1, 2, 25.0), (2, 4, 35.0)])
def test_case03_small_message_latency(
    case_text: dict[str, str], index: int, nodes: int, nominal_us: float
) -> None:
    comp = _table(case_text, CASE_03, index)
    assert comp.n_nodes == nodes
    small = [
        r for r in comp.rows if r.size_bytes <= 64 and r.outlier_ratio < 1.5
    ]  # 8 B out-of-place: warm-up
    assert len(small) >= 3
    for row in small:
        assert row.predicted.time_s == pytest.approx(row.measured_time_s, rel=0.15)
        assert row.predicted.time_s == pytest.approx(nominal_us * 1e-6, rel=0.15)
        assert row.predicted.algorithm == "tree" and row.predicted.protocol == "LL"


# -- flags and causes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("index", [3, 5])
def test_untuned_8_and_4_node_runs_are_within_the_default_range_with_network_settings_as_the_alternative(
    case_text: dict[str, str], index: int
) -> None:
    # T3 (8 nodes, ~320 GB/s) and T5 (4 nodes, ~325) at >= 4 GiB: the case README expects ~320-366 GB/s on
    # 4-8 nodes with NCCL's defaults (NVLSTree; the model: 360-362) and ~390 at best (ring, or T6's settings).
    # Within the threshold of the default's range, they are not flagged (issue 9, trial 9 defect 10); the
    # maintainer's network settings (adaptive routing, NCCL_MIN_CTAS, QPs per connection) stay the
    # alternative. T6 with those settings reached 391.
    comp = _table(case_text, CASE_03, index)
    for row in (r for r in comp.rows if r.size_bytes >= 4 * GB):
        assert not row.flagged and row.causes == ("nccl_default", "network_settings")
        span = "the model's range for NCCL's default at this size: nvls_tree 36"
        assert any(n.startswith(span) for n in row.notes)
    tuned = _table(case_text, CASE_03, 6)
    assert not any(r.flagged for r in tuned.rows if r.size_bytes >= GB)
    assert "already sets NCCL_MIN_CTAS=24" in describe_cause("network_settings", tuned)


def test_one_off_outliers_and_two_node_aberration(case_text: dict[str, str]) -> None:
    t1 = _table(case_text, CASE_03, 1)
    first = t1.rows[0]  # 8 B: 68.5 us out-of-place, 24.7 us in-place
    # an artefact, not a fault: a note, never a FLAG (a healthy run yields no flag, issue 9)
    assert not first.flagged and first.causes == ("outlier",)
    assert any(n.startswith("below the model") and "warm-up" in n for n in first.notes)
    assert _table(case_text, CASE_03, 3).rows[3].causes == ("outlier",)  # 8 MB: 1272 us vs 321 us in-place
    # T1 on exactly 2 nodes with the default algorithm reaches 469 GB/s, above 8 x 49 GB/s of NICs
    notes = [n for r in t1.rows if r.size_bytes >= GB for n in r.notes]
    assert notes and all("exactly 2 nodes" in n for n in notes)
    assert not any("exactly 2 nodes" in n for r in _table(case_text, CASE_03, 7).rows for n in r.notes)


def test_in_place_halves_and_thresholds(case_text: dict[str, str]) -> None:
    t1 = _table(case_text, CASE_03, 1, place="in_place")
    assert t1.rows[0].measured_time_s == pytest.approx(24.70e-6)
    assert not t1.rows[0].flagged
    with pytest.raises(ValueError, match="threshold"):
        _table(case_text, CASE_03, 1, threshold=1.5)


def test_given_cluster_is_resized_to_the_log(case_text: dict[str, str]) -> None:
    comp = _table(case_text, CASE_03, 6, cluster="h100-ib-2node")
    assert comp.spec.n_nodes == 8 and comp.n_ranks == 64 and comp.assumptions == ()


# -- NCCL settings -------------------------------------------------------------------------------------------


def test_nccl_settings_mapping() -> None:
    assert nccl_settings(["=== run: NCCL_ALGO=Ring NCCL_MIN_CTAS=24 ==="]).algorithm == "ring"
    assert nccl_settings(["export NCCL_ALGO=^NVLS,NVLSTree"]).exclude == ("nvls", "nvls_tree")
    assert set(nccl_settings(["NCCL_ALGO=Ring,Tree"]).exclude) == {"nvls", "nvls_tree"}
    assert nccl_settings(["host: NCCL INFO NCCL_ALGO set by environment to Tree"]).algorithm == "tree"
    assert nccl_settings(["NCCL_ALGO=allreduce:tree;allgather:ring"], op="all_gather").algorithm == "ring"
    assert NcclSettings.from_env({"NCCL_PROTO": "^LL128"}).protocols == ("LL", "Simple")
    assert NcclSettings.from_env({"NCCL_PROTO": "Simple"}).protocols == ("Simple",)
    assert nccl_settings(["The maintainer suggested NCCL_ALGO=Ring for 2 nodes."]).algorithm is None
    assert (
        accelerator_from_name("NVIDIA B200") == "b200"
        and accelerator_from_name("Tesla V100-SXM2-16GB") is None
    )
    # rocm-smi / rccl-tests rank lines name the part: "AMD Instinct MI350X" is the catalogue's mi350x
    assert accelerator_from_name("AMD Instinct MI350X") == "mi350x"
    assert accelerator_from_name("AMD Instinct MI355X") == "mi355x"


def test_forced_protocol_and_algorithm_not_applicable(case_text: dict[str, str]) -> None:
    comp = _table(case_text, CASE_03, 7, protocol="Simple")
    assert {r.predicted.protocol for r in comp.rows} == {"Simple"}
    ag = _table(case_text, CASE_08, 1, algorithm="tree")  # NCCL has no tree all_gather: falls back
    assert ag.settings.algorithm is None and any("does not apply" in n for n in ag.settings.notes)


# -- errors --------------------------------------------------------------------------------------------------


def test_unknown_and_unmodelled_collectives(case_text: dict[str, str]) -> None:
    text = case_text[CASE_01].replace("# nThread 1 nGpus 8", "./foo_perf -b 8\n# nThread 1 nGpus 8")
    with pytest.raises(ParseError, match="foo_perf") as info:
        compare_nccl_tests(text)
    assert info.value.line is not None
    with pytest.raises(ParseError, match="no gather collective") as info:  # nccl-tests has it, the model not
        compare_nccl_tests(case_text[CASE_08], tables=[1], collective="gather")
    assert info.value.line == 96


def test_table_errors(case_text: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="--table: 9"):
        compare_nccl_tests(case_text[CASE_03], tables=[9])
    with pytest.raises(ParseError, match="no rows") as info:
        compare_nccl_tests(case_text[CASE_08], tables=[2])
    assert info.value.line == 129
    with pytest.raises(ParseError, match="no nccl-tests result table") as info:
        compare_nccl_tests("just\nthree\nlines")
    assert info.value.line == 3


def test_cause_texts_cite_public_sources_not_test_names() -> None:
    import re

    for key, text in CAUSES.items():
        assert not re.search(r"case_?\d|\bT\d+(/T\d+)?\b", text), key
    for key in (
        "outlier",
        "dip",
        "latency_model",
        "ramp",
        "network_settings",
        "no_gdr",
        "vm_pcie",
        "nvls_off",
    ):
        assert re.search(r"NVIDIA/nccl(-tests)? #\d+", CAUSES[key]), key


@pytest.mark.parametrize(
    ("ratio", "vm", "first", "absent"),
    [
        (0.82, False, "network_settings", ("no_gdr", "acs_iommu", "vm_pcie")),  # 18 % short: settings only
        (0.40, False, "no_gdr", ("vm_pcie",)),  # 60 % short: GDR/ACS first, settings last
        (0.15, True, "vm_pcie", ()),  # 85 % short on VMs: the hidden PCIe layout
    ],
)
def test_network_causes_are_ordered_by_how_well_the_shortfall_fits(ratio, vm, first, absent) -> None:  # noqa: ANN001
    from aifabric.discovery.compare import _network_causes

    causes = _network_causes(ratio, vm_hint=vm)
    assert causes[0] == first
    assert not set(absent) & set(causes)


def test_a_shortfall_no_source_reports_for_any_cause_gets_none() -> None:
    # 35 % short (case 08's 260 of ~392 GB/s): beyond the ~20 % network settings were shown to recover
    # (320 -> 391 GB/s, NVIDIA/nccl-tests #309) and short of the 2-8x of GDR off (NVIDIA/nccl #412): issue 9
    # asks for no cause the log does not support, not the nearest one.
    from aifabric.discovery.compare import _network_causes

    assert _network_causes(0.65) == ()
    assert _network_causes(0.65, vm_hint=True) == ()


def test_untuned_runs_do_not_suggest_gdr(case_text: dict[str, str]) -> None:
    for index in (3, 5):
        comp = _table(case_text, CASE_03, index)
        big = [r for r in comp.rows if r.size_bytes >= 4 * GB]
        assert big and all(r.causes == ("nccl_default", "network_settings") for r in big)


def test_the_error_tolerance_is_the_one_of_the_tool_that_printed_the_log() -> None:
    # NCCL 1's own tests (NVIDIA/nccl v1.3.4-1 test/include/test_utilities.h deltaMaxValue, NVIDIA/nccl #120's
    # log): a reduction's half passes up to 5e-2, no ranks factor; a copy (all_gather) checks every type to
    # 1e-200. nccl-tests (src/common.cu v1.0.0 to v2.11.0 DeltaMaxValue): half 1e-2 x (ranks - 1), float
    # 1e-5 x (ranks - 1); nccl-tests 1.0.0 prints the same bytes/N/res header, with its '# nThread' line.
    text = (FIXTURES / "public6" / "nccl1_single_all_reduce_ops_types_bytes_res_cut.log").read_text()
    (nccl1,) = parse_nccl_tests(text)
    assert nccl1.bytes_header and nccl1.parameters is None
    assert error_tolerance(nccl1, "half", 1) == 5e-2 and error_tolerance(nccl1, "int", 1) == 1e-200
    assert error_tolerance(replace(nccl1, collective="all_gather"), "half", 1) == 1e-200
    params = "# nThread 1 nGpus 4 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20\n"
    (v1,) = parse_nccl_tests(params + text.split("\n", 1)[1])
    assert v1.bytes_header and v1.parameters is not None
    assert error_tolerance(v1, "half", 4) == pytest.approx(3e-2)
    sharp_log = FIXTURES / "public3" / "sharp_128gpu_error_column_no_root_cut.log"
    (sharp,) = parse_nccl_tests(sharp_log.read_text())
    assert not sharp.bytes_header and error_tolerance(sharp, "float", 128) == pytest.approx(127e-5)


def test_a_run_over_multi_node_nvlink_says_it_spanned_an_nvlink_domain(case_text: dict[str, str]) -> None:
    # The INFO lines of a multi-node NVLink run (v2.26.2-1 mnnvl.cc:78) above case 01's table: the
    # comparison's notes and JSON say the run spanned an NVLink domain across trays, quoting the line.
    mnnvl = "gb200a-04:7:9 [0] NCCL INFO MNNVL 1 cliqueId 7ffe cliqueSize 8 cliqueRank 0\n"
    comp = compare_nccl_tests(mnnvl + case_text[CASE_01], source=CASE_01).tables[0]
    said = "the run spanned an NVLink domain across trays: multi-node NVLink on, clique 0x7ffe of 8 ranks"
    assert any(a.startswith(said) for a in comp.assumptions)
    assert (comp.to_dict()["mnnvl"], comp.to_dict()["mnnvl_clique"]) == (True, "0x7ffe")
    assert any("MNNVL 1 cliqueId 7ffe" in e.text for e in comp.evidence)

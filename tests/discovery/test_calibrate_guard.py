"""Calibration that cannot make things worse (issue 9, item 6)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.discovery.test_evidence_compare import NVLS_OFF, _info, _log

from aifabric.cluster.presets import preset
from aifabric.discovery.compare import compare_nccl_tests
from aifabric.discovery.fitting import MIN_ROWS, fit_calibration
from aifabric.engines.formula import formula_collective
from aifabric.errors import ParseError

CASE_01 = "case_01_dgx_h100_allreduce_single_node.txt"
CASE_03 = "case_03_h100_xe9680_ib_scaling_2_4_8_nodes.txt"
CASE_13 = "case_13_v100_pcie_4gpu_no_nvlink.txt"


@pytest.mark.parametrize("index", [7])
def test_two_node_fit_leaves_the_single_node_prediction(index: int, all_case_text: dict[str, str]) -> None:
    # case_03 T7 (2 nodes, Ring): network-bound rows say nothing about NVLink (T1, NVLSTree, determines no
    # knob at all and is refused: tests/discovery/test_calibrate_nothing.py). The regression: a
    # T1-like fit scaled NVLink to 0.78 and one DGX H100 (474 GB/s, case 01, NVIDIA/nccl-tests #290) was
    # then predicted at 376 GB/s.
    tables = compare_nccl_tests(all_case_text[CASE_03], tables=[index]).tables
    fit = fit_calibration(tables, name=f"case_03 T{index}")
    assert fit.calibration.intra_scale == 1.0
    assert not fit.determined["intra_scale"]
    node = compare_nccl_tests(all_case_text[CASE_01]).tables[0]
    # at every size, 8 B .. 4 GiB (issue 9: a latency scale from T7's one 1 MiB row took 1 KiB on one node
    # from 15.31 to 17.52 us): a latency seen on multi-node rows moves the network term only
    for size in (8 << k for k in range(0, 30, 2)):
        before = node.predict(size).time_s
        after = node.predict(size, fit.calibration).time_s
        assert after == pytest.approx(before, rel=1e-3), size
    spec = preset("h100-ib-2node").with_changes(
        nodes=1
    )  # `collective -c h100-ib-2node --nodes 1 --size 1KiB`
    plain = formula_collective("all_reduce", 1024, spec)
    fitted = formula_collective("all_reduce", 1024, spec, calibration=fit.calibration)
    assert fitted.time_s == pytest.approx(plain.time_s, rel=1e-3)


def test_broken_run_is_refused_with_its_cause() -> None:
    # NET/IB without /GDRDMA at 120 GB/s on 2 x 8 H100 (see test_evidence_compare): the run is broken.
    tables = compare_nccl_tests(_log(_info(NVLS_OFF, gdr=False), 120.0)).tables
    with pytest.raises(ValueError, match=r"not fitted: the diagnosis found the run broken \(no_gdr: line "):
        fit_calibration(tables)


def test_healthy_run_with_info_lines_is_fitted() -> None:
    tables = compare_nccl_tests(_log(_info(NVLS_OFF), 330.0)).tables
    fit = fit_calibration(tables)
    assert fit.calibration.intra_scale == 1.0


def test_each_knob_comes_with_its_uncertainty(all_case_text: dict[str, str]) -> None:
    # case_03 T7 (2 nodes, NCCL_ALGO=Ring): the network scale is determined (5 plateau rows), NVLink is not,
    # nor the network latency (one latency row, 1 MiB: fewer than MIN_ROWS).
    tables = compare_nccl_tests(all_case_text[CASE_03], tables=[7]).tables
    fit = fit_calibration(tables)
    assert fit.uncertainty["intra_scale"] is None  # not determined: no error quoted
    assert fit.uncertainty["extra_inter_latency_s"] is None
    error = fit.uncertainty["inter_scale"]
    assert error is not None and 0 < error < fit.calibration.inter_scale
    assert set(fit.to_dict()["uncertainty"]) == {"intra_scale", "inter_scale", "latency_scale",
                                                 "extra_inter_latency_s"}  # fmt: skip
    # case_13 RAW DATA 1 (one node, 4 x V100 PCIe, 8 B .. 128 MB): its many latency-bound small messages
    # determine the latency scale, with an error.
    (v100,) = compare_nccl_tests(all_case_text[CASE_13], tables=[1]).tables
    fit = fit_calibration([v100], max_size_bytes=1 << 20)
    error = fit.uncertainty["latency_scale"]
    assert fit.determined["latency_scale"] and error is not None and 0 < error < fit.calibration.latency_scale


def test_fit_reports_the_algorithm_and_protocol_the_rows_ran(all_case_text: dict[str, str]) -> None:
    # T7 sets NCCL_ALGO=Ring: every fitted row is a ring row, whatever protocol NCCL picked per size.
    (t7,) = compare_nccl_tests(all_case_text[CASE_03], tables=[7]).tables
    fit = fit_calibration([t7])
    assert fit.paths and all(path.startswith("ring/") for path in fit.paths)
    assert sum(fit.paths.values()) == sum(r.used for r in fit.rows)
    # a log saying NVLS is unavailable is fitted on the paths NCCL can run there (no NVLS)
    tables = compare_nccl_tests(_log(_info(NVLS_OFF), 330.0)).tables
    assert not any(p.startswith("nvls") for p in fit_calibration(tables).paths)


def test_a_knob_at_the_bound_of_the_fit_is_reported(all_case_text: dict[str, str]) -> None:
    # T7 reaches 392.7 GB/s on 8 x 400G: 49.1 GB/s per NIC, at the catalogue's ConnectX-7 payload rate
    # (50 GB/s x 0.983 = 49.15, nics.yaml); its plateau rows (512 MB .. 8 GB) run 0.3-3.6 % faster than the
    # model, so the network scale ends within 1 % of line rate (1/0.983) and says so.
    tables = compare_nccl_tests(all_case_text[CASE_03], tables=[7]).tables
    fit = fit_calibration(tables)
    assert "inter_scale" in fit.at_bound
    assert 1.003 <= fit.calibration.inter_scale <= 1 / 0.983 + 1e-6
    assert "intra_scale" not in fit.at_bound  # not fitted, so never "at a bound"


def test_non_finite_times_give_one_line(tmp_path: pytest.TempPathFactory) -> None:
    from typer.testing import CliRunner

    from aifabric.cli.app import app

    rows = []
    for line in _log([], 330.0).split("\n"):
        parts = line.split()
        if parts and parts[0].isdigit() and len(parts) > 9:
            parts[5] = parts[9] = "nan"
            line = "  ".join(parts)
        rows.append(line)
    path = tmp_path / "nan.txt"  # type: ignore[operator]
    path.write_text("\n".join(rows))
    result = CliRunner().invoke(app, ["calibrate", str(path)])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "is not a number" in lines[0] and "Traceback" not in result.output


def _healthy_tables(texts: dict[str, str]) -> list[tuple[str, int]]:
    """(case, table) of every table of the shared logs that compare calls healthy."""
    out = []
    for name, text in texts.items():
        try:
            tables = compare_nccl_tests(text, source=name).tables
        except ParseError:  # topology files and figures without a table
            continue
        out.extend((name, t.index) for t in tables if t.verdict == "healthy")
    return out


#: Healthy tables whose rows determine no knob (2-node NVLSTree: the plateau is NVLink-bound, the latency
#: rows the network term cannot move without lengthening the large rows); refused with "nothing to fit".
_DETERMINE_NOTHING = {(CASE_03, 1), (CASE_03, 4)}


def test_calibrating_a_healthy_log_never_makes_its_large_messages_worse(
    all_case_text: dict[str, str],
) -> None:
    # Issue 9: calibrating case_01 on itself took 4 GiB from -1.7 % to +4.1 % (intra_scale pulled by mid-size
    # rows). For every healthy shared table, a profile fitted on it leaves no row >= 64 MiB further from the
    # measurement than NCCL's constants did.
    healthy = _healthy_tables(all_case_text)
    assert len(healthy) >= 9  # case 01, case 03 T1/T2/T4/T6/T7, case 13 x 3, case 31
    for name, index in healthy:
        (plain,) = compare_nccl_tests(all_case_text[name], tables=[index]).tables
        try:
            fit = fit_calibration([plain])
        except ValueError as err:  # a healthy table is never refused, unless too short to fit anything
            if str(err).startswith("nothing to fit") and len(plain.rows) < 2 * MIN_ROWS:
                continue  # case_31: one 8 MiB row
            if str(err).startswith("nothing to fit") and (name, index) in _DETERMINE_NOTHING:
                continue  # refused, no profile: nothing can get worse
            raise AssertionError(f"{name} T{index}: {err}") from err
        (calibrated,) = compare_nccl_tests(
            all_case_text[name], tables=[index], calibration=fit.calibration
        ).tables
        before = [abs(r.deviation) for r in plain.rows if r.size_bytes >= 64 << 20]
        after = [abs(r.deviation) for r in calibrated.rows if r.size_bytes >= 64 << 20]
        worse = max(after, default=0.0) - max(before, default=0.0)
        assert worse <= 1e-6, (name, index)  # 1e-6: the profile's knobs are rounded to 6 decimals


def test_case_01_plateau_fit_moves_only_the_scale_up_and_improves_4_gib(
    all_case_text: dict[str, str],
) -> None:
    # One DGX H100 (NVIDIA/nccl-tests #290): 474 GB/s at 4 GiB, 383 at 128 MB. The scale-up figure is fitted
    # on the plateau rows (1-4 GiB, within 5 % of the peak), not on the ramp (128-512 MiB), so the 4 GiB
    # row gets closer, not further (it was -0.9 % -> +2.0 % with the ramp rows in the fit).
    (plain,) = compare_nccl_tests(all_case_text[CASE_01]).tables
    fit = fit_calibration([plain])
    assert fit.fitted_on == {"intra_scale": (1 << 30, 1 << 31, 1 << 32)}
    assert fit.undetermined == ("inter_scale", "latency_scale", "extra_inter_latency_s")
    error = fit.uncertainty["intra_scale"]
    assert error is not None and 0 < error < 0.01
    (calibrated,) = compare_nccl_tests(all_case_text[CASE_01], calibration=fit.calibration).tables
    assert abs(calibrated.rows[-1].deviation) <= abs(plain.rows[-1].deviation)
    assert {r.reason for r in fit.rows if not r.used} == {"ramp"}


def test_cli_reports_each_knob_with_its_error_and_rows() -> None:
    # case_03 T7 (2 nodes, Ring): the network scale on the five plateau rows 512 MiB .. 8 GiB, at the
    # line-rate bound (no +/- about a bound); the 1 MiB latency row alone fits nothing: too few.
    import json
    from pathlib import Path

    from typer.testing import CliRunner

    from aifabric.cli.app import app

    path = Path(__file__).parent / "data" / CASE_03
    runner = CliRunner()
    data = json.loads(runner.invoke(app, ["calibrate", str(path), "-t", "7", "--json"]).stdout)
    assert data["fitted_on"] == {"inter_scale": [1 << k for k in range(29, 34)]}
    assert data["knob_paths"] == {"inter_scale": ["ring/Simple"]}
    assert data["few_rows"] == {"extra_inter_latency_s": 1}
    assert data["uncertainty"]["inter_scale"] > 0
    text = runner.invoke(app, ["calibrate", str(path), "-t", "7"]).stdout
    assert "inter_scale 1.0105 (at bound) (on 5 size(s), 512 MiB .. 8 GiB, ring/Simple)" in text
    assert "extra_inter_latency_s not determined (kept at 0 us; 1 row(s) of its regime, needs 2)" in text
    assert "+/-" not in text


def test_too_few_rows_to_fit_anything_is_refused_with_the_reason(all_case_text: dict[str, str]) -> None:
    # case_31 (MI300X, one 8 MiB row): no plateau or latency row -- exit 2 with the reason, no profile.
    from typer.testing import CliRunner

    from aifabric.cli.app import app

    path = Path(__file__).parent / "data" / "case_31_mi300x_single_node_rccl.txt"
    result = CliRunner().invoke(app, ["calibrate", str(path)])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "nothing to fit: 1 row(s), no plateau or latency row" in lines[0]


_T7_TEXT = (Path(__file__).parent / "data" / CASE_03).read_text(encoding="utf-8")
_T7 = compare_nccl_tests(_T7_TEXT, tables=[7]).tables[0]


@settings(max_examples=12)
@given(st.lists(st.floats(0.7, 1.3), min_size=len(_T7.rows), max_size=len(_T7.rows)))
def test_no_measurement_can_make_the_large_messages_worse(factors: list[float]) -> None:
    # Property (issue 9, item 6): whatever the rows measure, the profile fitted on them leaves the worst
    # error over the rows >= 64 MiB no larger than NCCL's constants leave it. case_03 T7's rows with every
    # measured time scaled by a factor in 0.7-1.3 (its 1-8 MB rows are 2x the model: the real spread).
    rows = tuple(
        dataclasses.replace(r, measured_time_s=r.measured_time_s * f, other_time_s=None)
        for r, f in zip(_T7.rows, factors, strict=True)
    )
    table = dataclasses.replace(_T7, rows=rows)
    try:
        fit = fit_calibration([table])
    except ValueError as err:  # no knob determined: refused, no profile, nothing made worse
        assert str(err).startswith("nothing to fit: "), err
        return
    large = [r for r in rows if r.size_bytes >= 64 << 20]
    before = max(abs(r.predicted.time_s / r.measured_time_s - 1) for r in large)
    after = max(
        abs(table.predict(r.size_bytes, fit.calibration).time_s / r.measured_time_s - 1) for r in large
    )
    assert after <= before + 1e-6


def test_a_profile_records_its_hardware_and_is_refused_on_other_hardware(tmp_path: Path) -> None:
    # case_03 T7 ran on H100 SXM with ConnectX-7 NICs (NVIDIA/nccl-tests #309): the profile says so, and its
    # network scale is not applied to a GB200 NVL72 (another GPU) -- exit 2, one line naming both.
    from typer.testing import CliRunner

    from aifabric.cli.app import app
    from aifabric.discovery.calibrate import load_calibration, save_calibration
    from aifabric.errors import ConfigError

    fit = fit_calibration(compare_nccl_tests(_T7_TEXT, tables=[7]).tables)
    assert (fit.calibration.gpu, fit.calibration.nic) == ("h100-sxm", "connectx-7")
    path = save_calibration(fit.calibration, tmp_path / "t7.yaml")
    assert load_calibration(path) == fit.calibration
    result = CliRunner().invoke(
        app, ["collective", "all_reduce", "-c", "gb200-nvl72", "--size", "1GiB", "--calibration", str(path)]
    )
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "fitted on gpu h100-sxm, this cluster has gb200" in lines[0]
    spec = preset("h100-ib-2node")
    other_nic = spec.with_changes(**{"scale_out.nic": "connectx-8"})
    with pytest.raises(ConfigError, match="fitted on nic connectx-7, this cluster has connectx-8"):
        formula_collective("all_reduce", 1 << 30, other_nic, calibration=fit.calibration)
    assert formula_collective("all_reduce", 1 << 30, spec, calibration=fit.calibration).time_s > 0

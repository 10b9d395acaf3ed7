"""Each nccl-tests table is priced with the tuning tables of the release its log carries (or the user states).

Fixtures: an 8 x H100 single-node all_reduce row of 64 KiB under ``NCCL version 2.18.5+cuda12.2`` (the
release and time of case 20 [S2], the Azure ND H100 v5 benchmarking guide: 42.2 us in place at "65K"; the
measured time does not enter the prediction), and case 31 (8 x MI300X, rccl-tests) with an ``RCCL version``
line added.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from aifabric.catalog import nccl_release_versions
from aifabric.cli.app import app
from aifabric.discovery.compare import TableComparison, compare_nccl_tests
from aifabric.discovery.release import priced_release
from aifabric.engines.formula import formula_collective

DATA = Path(__file__).parent / "data"
runner = CliRunner()

_RANKS = "\n".join(
    f"#  Rank  {k} Group  0 Pid 1 on host-a device  {k} [0x{k:02x}] NVIDIA H100 80GB HBM3" for k in range(8)
)
_HEADER = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"  # noqa: E501
_ROW = "       65536         16384     float     sum      -1    42.20    1.55    2.72      0    42.20    1.55    2.72      0"  # noqa: E501


def _h100_log(banner: str = "") -> str:
    return f"$ ./all_reduce_perf -b 64K -e 64K -g 8\n{banner}{_RANKS}\n{_HEADER}\n{_ROW}\n"


def _first(text: str, **options: object) -> TableComparison:
    return compare_nccl_tests(text, **options).tables[0]  # type: ignore[arg-type]


def test_a_2_18_5_log_is_priced_with_2_18_5s_tables() -> None:
    # 64 KiB on 8 x H100, one node. NCCL 2.18.3's tuning.cc (the tables 2.18.5 runs: nothing recorded changed
    # between them) prices NVLS/Simple at baseLat 23 us (line 56) + 64 KiB at NVLS's bandwidth, 23.25 us, and
    # ring/LL at 6.6 + 14 x 0.6 us + 64 KiB at min(llMaxBw 87.7, busBw x 1/4) x 8/14 (line 178), 16.3 us
    # (ncclTopoGetAlgoTime, line 381: the price counts every channel): ring/LL. The run keeps 2 channels, each
    # at one CTA's LL rate (collectives.tiers.ll_channel_rate; 36.7 GB/s x 8 x 512 / (15 x 640) in both
    # releases): 15.0 + 64 KiB x 14/8 / 31.3 GB/s = 18.66 us under 2.18.5 and under 2.30.3. The release shows
    # in NVLS's price: 2.18.5's kernel, 34.4 us (tests/engines/test_cases_accuracy.py MISSED '20 H100 NVLS
    # 2.18.5, 64 KiB'); 2.30.3's, 25 us of hwLat, 25.7 us.
    logged = _first(_h100_log("NCCL version 2.18.5+cuda12.2\n"))
    newest = _first(_h100_log())
    row, base = logged.rows[0].predicted, newest.rows[0].predicted
    assert (row.algorithm, row.protocol) == (base.algorithm, base.protocol) == ("ring", "LL")
    assert row.time_s == base.time_s == pytest.approx(18.66e-6, rel=0.005)
    nvls = [next(c.time_s for c in r.candidates if c.algorithm == "nvls") for r in (row, base)]
    assert nvls == [pytest.approx(34.4e-6, rel=0.005), pytest.approx(25.7e-6, rel=0.005)]
    assert logged.nccl_version == "2.18.5" and logged.settings.nccl_version == "2.18.5"
    note = "priced with NCCL 2.18.5's tuning tables (recorded at 2.18.3, the last release at or below it"
    assert sum(a.startswith(note) for a in logged.assumptions) == 1
    assert not any("priced with" in a for a in newest.assumptions)  # no release stated: no guess to say


def test_every_prediction_of_the_table_uses_the_logged_release() -> None:
    # the comparison's own predict() (calibrate, the contradiction check) prices as the rows did
    logged = _first(_h100_log("NCCL version 2.18.5+cuda12.2\n"))
    assert logged.predict(65536).time_s == logged.rows[0].predicted.time_s
    direct = formula_collective("all_reduce", 65536, logged.spec, logged.comm, nccl_version="2.18.5")
    assert logged.rows[0].predicted.time_s == direct.time_s


def test_the_stated_release_prices_a_log_that_carries_none() -> None:
    stated = _first(_h100_log(), nccl_version="2.18.5")
    logged = _first(_h100_log("NCCL version 2.18.5+cuda12.2\n"))
    assert stated.rows[0].predicted == logged.rows[0].predicted
    assert stated.nccl_version == "2.18.5"


def test_a_stated_release_must_agree_with_the_logs() -> None:
    text = _h100_log("NCCL version 2.18.5+cuda12.2\n")
    assert _first(text, nccl_version="2.18").nccl_version == "2.18.5"  # the series agrees; the log's prices
    with pytest.raises(ValueError, match=r"^--nccl-version: '2.21.5' conflicts with the log's NCCL 2.18.5"):
        _first(text, nccl_version="2.21.5")


def test_an_unrecorded_newer_release_is_priced_with_the_newest_tables_and_said() -> None:
    newest = nccl_release_versions()[-1]
    comp = _first(_h100_log("NCCL version 2.31.2+cuda13.0\n"))
    assert comp.rows[0].predicted == _first(_h100_log()).rows[0].predicted
    note = f"NCCL 2.31.2 is newer than the newest recorded release {newest}"
    assert sum(a.startswith(note) for a in comp.assumptions) == 1
    assert comp.verdict != "inconclusive"  # a newer release is no unknown machine


def test_a_release_between_two_recorded_ones_runs_the_earlier_tables() -> None:
    # catalog.nccl.nccl_release: 2.22.3 was not recorded (no recorded fact changed): it runs 2.21.5's
    assert priced_release("2.22.3").note.endswith("(recorded at 2.21.5, the last release at or below it that "
                                                  "changed them)")  # fmt: skip
    assert priced_release("2.21.5").note == "priced with NCCL 2.21.5's tuning tables"


def test_an_rccl_tests_log_of_a_recorded_rccl_release_uses_rccls_tables() -> None:
    # case 31, 8 MiB on 8 x MI300X: RCCL 2.20.5's tuning.cc enables LL128 on gfx90a only
    # (rccl_releases.yaml ll128_archs), so its ring runs Simple: 132.1 GB/s busbw (collectives.tiers
    # library_release: 18 % under the measured 161.14), where NCCL's newest tables on the Hopper row pick
    # ring/LL128
    text = (DATA / "case_31_mi300x_single_node_rccl.txt").read_text()
    versioned = text.replace("rccl-tests: Version develop:83d38d9", "rccl-tests: Version develop:83d38d9\n"
                             "RCCL version : 2.20.5")  # fmt: skip
    comp, plain = _first(versioned), _first(text)
    row = comp.rows[0].predicted
    assert (row.algorithm, row.protocol) == ("ring", "Simple")
    assert row.busbw_bytes_per_s == pytest.approx(132.1e9, rel=0.005)
    assert plain.rows[0].predicted.protocol == "LL128"
    assert "priced with RCCL 2.20.5's tuning tables" in comp.assumptions
    assert comp.verdict == plain.verdict == "healthy"


def test_an_rccl_release_of_an_unread_series_says_whose_tables_price_it() -> None:
    note = priced_release("2.28.3", "rccl").note
    assert note.startswith("priced with NCCL 2.28.3's tuning tables")
    assert "RCCL's own tables are recorded for 2.18.6, 2.20.5, 2.21.5, 2.26.6 only" in note


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("2.x", "error: --nccl-version: '2.x' is not a version like 2.21.5"),
        ("2.99.1", "error: --nccl-version: '2.99.1' is newer than the newest recorded release"),
        ("2.8.4", "error: --nccl-version: '2.8.4' is older than the catalogue's releases"),
    ],
)
def test_both_commands_refuse_a_bad_release_in_one_line(tmp_path: Path, value: str, message: str) -> None:
    log = tmp_path / "run.log"
    log.write_text(_h100_log())
    for args in (["nccl-tests", "compare", str(log)], ["collective", "allreduce", "--size", "1GiB"]):
        result = runner.invoke(app, [*args, "--nccl-version", value], terminal_width=400)
        assert result.exit_code == 2, result.output
        assert result.stderr.strip().startswith(message)
        assert len(result.stderr.strip().splitlines()) == 1


def test_the_cli_prices_a_log_with_the_stated_release(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(_h100_log())
    result = runner.invoke(app, ["nccl-tests", "compare", str(log), "--nccl-version", "2.18.5", "--json"])
    assert result.exit_code == 0, result.output
    assert '"nccl_version": "2.18.5"' in result.stdout
    assert "priced with NCCL 2.18.5's tuning tables" in result.stdout

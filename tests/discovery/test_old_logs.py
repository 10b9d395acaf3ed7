"""A log the model cannot really price says so: an NCCL release older than the catalogue's tables.

Fixture: ``old_allreduce_256gpu_nocheck_cut.log``, NVIDIA/nccl-tests #78 (description): 256 ranks, 16 per
node, ``NCCL version 2.8.4+cuda10.1``, no GPU name, 45.65-71.55 GB/s busbw from 32 MiB to 1 GiB. The
catalogue's oldest recorded release is 2.18.1 (catalog/data/nccl_releases.yaml), so 2.8.4's own tuning is
not modelled and the default prediction is no ground for a fault verdict. The GPU assumed is a V100: NCCL
was built with CUDA 10.1, which compiles for neither Hopper (CUDA 11.8 on) nor Ampere (11.0 on;
catalog/data/gpu_architectures.yaml).
"""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from aifabric.catalog import nccl_release_versions
from aifabric.cli.app import app
from aifabric.discovery.compare import TableComparison, compare_nccl_tests
from aifabric.discovery.inference import unrecorded_release_note

DATA = Path(__file__).parent / "data"
OLD = DATA / "public" / "old_allreduce_256gpu_nocheck_cut.log"
runner = CliRunner()


def _first(path: Path, gpu: str | None = None) -> TableComparison:
    return compare_nccl_tests(path.read_text(), source=path.name, gpu=gpu).tables[0]


def test_a_release_older_than_the_tables_is_inconclusive_with_the_tables_named() -> None:
    table = _first(OLD)
    assert table.nccl_version == "2.8.4"
    assert table.verdict == "inconclusive"
    assert table.findings == ()
    oldest, newest = nccl_release_versions()[0], nccl_release_versions()[-1]
    assert oldest == "2.18.1"
    head = "NCCL 2.8.4 is older than the oldest recorded release"
    note = f"{head} {oldest}: priced with the tables of NCCL {newest}"
    assert sum(a.startswith(note) for a in table.assumptions) == 1
    assumed = (
        "GPU model not in the log: assumed v100-sxm2-32gb (hopper needs CUDA >= 11.8; NCCL here was built "
        "with CUDA 10.1, which compiles for volta at most) (give --gpu)"
    )
    assert assumed in table.assumptions
    assert table.spec.accelerator == "v100-sxm2-32gb"


def test_a_stated_gpu_does_not_make_an_unrecorded_release_conclusive() -> None:
    table = _first(OLD, gpu="v100-sxm2-32gb")
    assert table.spec.accelerator == "v100-sxm2-32gb"
    assert table.verdict == "inconclusive"
    assert not any(a.startswith("GPU model not in the log") for a in table.assumptions)


def test_the_cli_names_the_assumed_gpu_the_release_and_how_to_state_the_gpu() -> None:
    result = runner.invoke(app, ["nccl-tests", "compare", str(OLD)], terminal_width=400)
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "verdict: inconclusive: modelled on v100-sxm2-32gb" in out
    assert "NCCL 2.8.4 is older than the oldest recorded release 2.18.1" in out
    assert "give --gpu" in out
    assert "unexplained_shortfall" not in out.split("verdict:")[-1]


def test_the_collective_command_still_refuses_the_unrecorded_release() -> None:
    result = runner.invoke(app, ["collective", "allreduce", "--nccl-version", "2.8.4"])
    assert result.exit_code == 2, result.output


def test_a_recorded_release_keeps_its_verdict() -> None:
    # trial9/i_socket_slow.log: a recorded 2.2x release over NET/Socket, no GPU name: its net_socket
    # verdict (tests/discovery/test_trial9_defects.py) stands, with no release note
    table = _first(DATA / "trial9" / "i_socket_slow.log")
    assert table.verdict == "net_socket"
    assert unrecorded_release_note(table.nccl_version) is None
    # NVIDIA/nccl-tests logs naming H100s and no release: no release note either
    named = _first(DATA / "public" / "gcp_a3mega_h100_16r_markdown.log")
    assert named.verdict == "unexplained_shortfall"
    assert not any("older than the oldest recorded release" in a for a in named.assumptions)


def test_the_release_note_is_none_for_recorded_and_unreadable_versions() -> None:
    assert unrecorded_release_note("2.18.1") is None
    assert unrecorded_release_note(None) is None
    assert unrecorded_release_note("2.x") is None
    assert unrecorded_release_note("2.17.1") is not None
    # "2.18" names a recorded series: nccl_release prices it with 2.18.3's tables, so no "older" note
    assert unrecorded_release_note("2.18") is None
    assert unrecorded_release_note("2.17") is not None

"""Input defects a new-user trial found (issue 8): each is exit code 2 and one line naming the field, or a
note in the result where NCCL would silently do something else."""

import sys
import textwrap

import pytest
from tests.cli.refusal import refused
from typer.testing import CliRunner

from aifabric.cli.app import app, main
from aifabric.units import MAX_MESSAGE_BYTES, UnitError, one_size, parse_line_rate

runner = CliRunner()

NIC = """
nics:
  n1:
    name: user NIC
    speed: {speed}
    power: 20 W
    payload_efficiency: 0.95
    latency: 2 us
    source: "test part: the user's own datasheet"
"""

SWITCH = """
switches:
  s1:
    name: user switch
    fabric: infiniband
    ports: 64
    port_speed: {speed}
    power: 1500 W
    latency: 0.2 us
    source: "test part: the user's own datasheet"
"""


pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


# --- 1. line rates are bits per second -------------------------------------------------------------


def test_parse_line_rate_reads_bits_and_refuses_bytes():
    assert parse_line_rate("400 Gb/s") == 50e9  # 400e9 bits/s / 8
    assert parse_line_rate("1.6 Tb/s") == 200e9
    for typo in ("400 GB/s", "400 GBps", "50 bytes/s"):
        with pytest.raises(UnitError, match="port_speed: line rates are quoted in bits per second"):
            parse_line_rate(typo, field="port_speed")


@pytest.mark.parametrize(
    ("template", "field"), [(NIC, "nics.n1: speed"), (SWITCH, "switches.s1: port_speed")]
)
def test_catalogue_refuses_a_byte_unit_on_a_line_rate(tmp_path, template, field):
    parts = write(tmp_path, "parts.yaml", template.format(speed="400 GB/s"))
    refused(
        ["--catalog", parts, "collective", "-c", "h100-ib-2node", "-s", "1GiB"],
        field,
        "bits per second",
        "'400 Gb/s'",
    )


def test_catalogue_refuses_a_nic_faster_than_any_made(tmp_path):
    parts = write(tmp_path, "parts.yaml", NIC.format(speed="3.2 Tb/s"))
    refused(
        ["--catalog", parts, "collective", "-c", "h100-ib-2node", "-s", "1GiB"], "nics.n1: speed", "3.2 Tb/s"
    )


# --- 2. --factor belongs to sweeps ------------------------------------------------------------------


@pytest.mark.parametrize("factor", ["1", "0", "-2", "4"])
def test_factor_with_one_size_is_refused(factor):
    refused(
        ["collective", "-c", "h100-ib-2node", "-s", "1GiB", "--factor", factor],
        f"--factor: {factor} is for sweeps (--min/--max)",
    )


def test_factor_in_a_sweep_still_works():
    r = runner.invoke(app, ["collective", "-c", "h100-ib-2node", "-b", "1MiB", "-e", "16MiB", "-f", "4"])
    assert r.exit_code == 0, r.stderr
    assert "4194304" in r.stdout and "16777216" in r.stdout  # 1, 4, 16 MiB


# --- 3. sizes above any GPU's memory ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "field"),
    [(["-s", "1e30B"], "--size"), (["-b", "1MiB", "-e", "1PB"], "--max"), (["-b", "2TiB"], "--min")],
)
def test_absurd_sizes_are_refused(args, field):
    refused(["collective", "-c", "h100-ib-2node", *args], f"{field}:", "above 1 TiB", "GPU's memory")


def test_message_bound_is_inclusive_and_above_the_largest_gpu():
    # 288 GB HBM3e (B300 datasheet), the largest accelerator memory in the catalogue, is a valid message.
    assert one_size("288 GB", "--size") == 288e9
    assert one_size("1 TiB", "--size") == MAX_MESSAGE_BYTES
    with pytest.raises(UnitError, match="above 1 TiB"):
        one_size("1099511627777 B", "--size")


# --- 4. CollNet messages name the user's release ------------------------------------------------------

COLLNET = ["collective", "all_gather", "-c", "dgx-h100-superpod", "--nodes", "4", "-s", "1GiB"]


def test_nccl_algo_collnet_with_collnet_enabled_names_the_release_not_the_variable():
    # NCCL runs CollNet Direct all_gather from 2.20.3 on (catalogue nccl_releases.yaml, tuning.cc). On
    # 2.19.4 (2.19.3's tables) NCCL_ALGO=CollNetDirect leaves all_gather no bandwidth, and tuning.cc then
    # sets ring back ("at least set ring algo available"), so NCCL runs ring: the explanation names the
    # release.
    args = [*COLLNET, "--env", "NCCL_COLLNET_ENABLE=1", "--env", "NCCL_ALGO=CollNetDirect"]
    r = runner.invoke(app, [*args, "--nccl-version", "2.19.4"])
    assert r.exit_code == 0, r.output
    out = " ".join(r.stdout.split())
    assert "NCCL_ALGO=CollNetDirect" in out and "(ring/" in out, out
    assert "NCCL 2.19.4 (tuning tables of 2.19.3) has no collnet_direct all_gather" in out, out
    assert "from 2.20.3 on" in out and "needs NCCL_COLLNET_ENABLE" not in out, out
    assert "so NCCL 2.19.4 runs ring instead" in out, out


def test_nccl_algo_collnet_without_enable_still_says_to_enable_it():
    refused([*COLLNET, "--env", "NCCL_ALGO=CollNetDirect"], "CollNet needs NCCL_COLLNET_ENABLE=1")


def test_forced_collnet_names_the_users_version_and_the_table():
    refused(
        [*COLLNET, "--algo", "collnet_direct", "--nccl-version", "2.19.4"],
        "NCCL 2.19.4 (tuning tables of 2.19.3) has no collnet_direct all_gather",
    )


def test_release_version_stated_exactly_is_named_once():
    refused(
        [*COLLNET, "--algo", "collnet_direct", "--nccl-version", "2.19.1"],
        "NCCL 2.19.1 has no collnet_direct all_gather",
    )


def test_collnet_enable_on_an_older_release_says_collnet_is_not_used():
    r = runner.invoke(app, [*COLLNET, "--env", "NCCL_COLLNET_ENABLE=1", "--nccl-version", "2.19.4"])
    assert r.exit_code == 0, r.stderr
    assert "NCCL_COLLNET_ENABLE=1 has no effect here: NCCL 2.19.4 (tuning tables of 2.19.3)" in r.stdout
    newer = runner.invoke(app, [*COLLNET, "--env", "NCCL_COLLNET_ENABLE=1", "--nccl-version", "2.21.5"])
    assert newer.exit_code == 0, newer.stderr
    assert "has no effect" not in newer.stdout


# --- 6. minor ---------------------------------------------------------------------------------------


def test_next_best_lists_other_algorithm_protocol_pairs_once():
    # 2 x p4d at 1 GiB: the tree (S per direction through the NICs on two nodes; NVIDIA/nccl #527 measured
    # busbw 57.17 there, the ring's twice). aws-ofi-nccl sets NCCL_PROTO=simple on p4d (its 128-byte
    # ordering probe fails on the first EFA generation), leaving one other pair; the user's own
    # NCCL_PROTO wins over the plugin's and brings LL and LL128 back
    chosen = "tree/Simple"
    plugin = runner.invoke(app, ["collective", "-c", "aws-p4d", "-s", "1GiB"])
    assert plugin.exit_code == 0, plugin.stderr
    assert "Next best: ring/Simple" in plugin.stdout and "sets NCCL_PROTO=simple" in plugin.stdout
    env = ["--env", "NCCL_PROTO=LL,LL128,Simple"]
    r = runner.invoke(app, ["collective", "-c", "aws-p4d", "-s", "1GiB", *env])
    assert r.exit_code == 0, r.stderr
    why = next(line for line in r.stdout.splitlines() if line.startswith("why:"))
    assert why.startswith(f"why: {chosen}:")
    listed = [item.rsplit(" ", 2)[0] for item in why.split("Next best: ")[1].split(", ")]
    assert chosen not in listed and len(listed) == len(set(listed)) == 3


def test_catalog_that_is_not_a_regular_file():
    refused(["--catalog", "/dev/null", "collective", "-s", "1GiB"], "'/dev/null' is not a regular file")


def test_catalog_after_the_command_says_where_it_goes(tmp_path, monkeypatch, capsys):
    parts = write(tmp_path, "parts.yaml", NIC.format(speed="400 Gb/s"))
    monkeypatch.setattr(
        sys, "argv", ["aifabric", "collective", "-c", "aws-p4d", "-s", "1GiB", "--catalog", parts]
    )
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "No such option: --catalog" in line and "go before the command" in line

"""A catalogue rate must carry its unit, and a catalogue error names its field and value once."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()

NIC = """nics:
  mynic:
    name: My NIC
    source: a test entry
    speed: {speed}
    power: 20 W
    payload_efficiency: 0.9
    latency: 1 us
"""


def _refused(tmp_path, speed: str) -> str:
    path = tmp_path / "catalog.yaml"
    path.write_text(NIC.format(speed=speed))
    r = runner.invoke(app, ["--catalog", str(path), "cluster", "show", "-c", "h100-ib-2node"])
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def test_a_speed_without_unit_is_refused(tmp_path):
    # 100 could be bits/s or bytes/s (a factor 8): nothing in the file says which
    assert _refused(tmp_path, "100").endswith("nics.mynic: speed: '100' has no unit (e.g. '100 Gb/s')")


@pytest.mark.parametrize("speed", ["100 GHz", "fast"])
def test_a_bad_speed_names_field_and_value_once(tmp_path, speed):
    line = _refused(tmp_path, speed)
    assert "nics.mynic: speed: cannot read a bandwidth" in line
    assert line.count("speed:") == 1 and line.count(repr(speed)) == 1

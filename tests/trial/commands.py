"""What the trial's tests share: the example cluster made non-blocking, one command's JSON result, and a
command run through the console-script entry point."""

import json
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from aifabric.cli import app as app_module
from aifabric.cli.app import app

runner = CliRunner()

#: examples/cluster.yaml: 32 x 8 H100 on RoCE, rail-optimised, ConnectX-7 400 Gb/s, GPUDirect RDMA (PIX).
EXAMPLE = Path(__file__).parents[2] / "examples" / "cluster.yaml"


def example_cluster(tmp_path: Path, name: str, **scale_out: object) -> str:
    """examples/cluster.yaml, non-blocking (1:1), with ``scale_out`` fields replaced; returns its path."""
    spec = yaml.safe_load(EXAMPLE.read_text())
    spec["name"] = name
    spec["scale_out"].update({"oversubscription": ["1:1"], **scale_out})
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def result_json(args: list[str]) -> dict:
    """``aifabric ARGS --json``'s one result; asserts exit 0."""
    r = runner.invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    return out[0] if isinstance(out, list) else out


def main_exit(argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple:
    """``aifabric ARGV`` through the console-script entry point (where repeated options are refused):
    (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["aifabric", *argv])
    with pytest.raises(SystemExit) as stop:
        app_module.main()
    out = capsys.readouterr()
    return stop.value.code, out.out, out.err

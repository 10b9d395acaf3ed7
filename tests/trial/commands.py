"""What the trial's tests share: the example cluster made non-blocking, and one command's JSON result."""

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

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

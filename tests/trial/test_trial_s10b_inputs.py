"""Input and output defects a trial of train, sweep reports, the nccl-tests JSON reader and the transport
and routing options found: each test runs one command; its docstring holds the command, what it printed and
what it should do (README: bad input exits 2 with one line naming the field and the value; exit 1 is an
internal error)."""

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py


def test_an_infinite_capacity_factor_is_refused_naming_it():
    """``aifabric train -m mixtral-8x7b --tp 2 --ep 8 --recompute full --capacity-factor inf`` exits 0 and
    prints "step nan s, nan tokens/s ... MFU nan%" with compute "inf"; with --json it exits 2 with "the
    result holds a non-finite number at breakdown_s.bubble", which names no option. --capacity-factor
    already refuses nan and values below 1 ("must be >= 1 (omit it for dropless routing)"): inf must be
    refused the same way (or read as dropless), never printed as a NaN step."""
    args = ["train", "-m", "mixtral-8x7b", "--tp", "2", "--ep", "8", "--recompute", "full"]
    r = runner.invoke(app, [*args, "--capacity-factor", "inf"])
    out = r.stdout + r.stderr
    if r.exit_code == 0:
        assert "step nan" not in out and "nan%" not in out, out[:400]
    else:
        assert r.exit_code == 2 and "--capacity-factor" in out and "inf" in out, out[-400:]


def test_a_sweep_of_training_steps_writes_its_html_report(tmp_path):
    """``aifabric sweep s.yaml --html r.html`` on a sweep with only a ``train`` section (the form
    sweep/grid.py documents: models, layouts, global_batch) stores its points, then exits 1 with a traceback
    from report/html.py sweep_report: "TypeError: '>' not supported between instances of 'NoneType' and
    'int'" (a training row has no busbw). --csv and --pareto of the same store work; --help promises "a
    self-contained HTML report of the store"."""
    sweep = {
        "cluster": "h100-ib-2node",
        "vary": {"nodes": [2]},
        "train": {"models": ["llama3-8b"], "layouts": [{"tp": 2, "pp": 2}], "global_batch": 64},
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(sweep))
    html = tmp_path / "r.html"
    r = runner.invoke(app, ["sweep", str(path), "--db", str(tmp_path / "s.db"), "--html", str(html)])
    assert r.exit_code == 0, (r.stdout + r.stderr)[-400:] + repr(r.exception)
    assert Path(html).stat().st_size > 0


def _all_reduce_report(ranks: int) -> dict:
    """An nccl-tests -J report (nccl-tests src/util.cu, JSON_FILE_VERSION 3) of all_reduce_perf on ``ranks``
    H100s, one GPU per MPI process, 8 per host, at 100 GB/s algbw: busbw = algbw x 2 (n - 1) / n
    (nccl-tests doc/PERFORMANCE.md)."""
    devices = [
        {"rank": r, "group": 0, "pid": 1000 + r % 8, "hostname": f"node{r // 8:05d}", "device": r % 8,
         "device_hex": "0000:18:00", "device_info": "NVIDIA H100 80GB HBM3"}
        for r in range(ranks)
    ]  # fmt: skip
    rows = []
    for size in (1 << 20, 1 << 26, 1 << 30):
        half = {
            "time": size / 100e9 * 1e6,
            "alg_bw": 100.0,
            "bus_bw": 200.0 * (ranks - 1) / ranks,
            "nwrong": 0,
        }
        rows.append(
            {
                "size": size,
                "count": size // 4,
                "type": "float",
                "redop": "sum",
                "root": "    -1",
                "out_of_place": half,
                "in_place": half,
                "actual_iterations": 20,
                "experiment_name": "",
            }
        )
    config = {
        "nthreads": 1,
        "ngpus": 1,
        "minimum_bytes": 1 << 20,
        "maximum_bytes": 1 << 30,
        "step_factor": 64,
        "warmup_iters": 5,
        "iterations": 20,
        "aggregated_iterations": 1,
        "validation": 1,
        "graph": 0,
        "devices": devices,
    }
    return {
        "version": 3,
        "args": ["./build/all_reduce_perf", "-b", "1M", "-e", "1G", "-f", "64"],
        "env": [],
        "nccl_version": 22703,
        "config": config,
        "results": rows,
    }


def test_a_log_of_512_superpod_nodes_is_compared_on_the_superpod(tmp_path):
    """``aifabric nccl-tests compare ar4096.json -c dgx-h100-superpod`` (an nccl-tests -J report of 4,096
    ranks on 512 nodes) exits 2: "scale_out.tiers: 4096 GPUs need 128 leaves, more than a two-tier Clos of
    radix-64 spines connects (64 leaves, 2048 GPUs); use tiers: 3; no ratio builds it" (without -c, the
    inferred cluster says the same). --cluster's help: "Preset or cluster YAML (resized to each table's
    nodes)", and ``aifabric collective all_reduce -c dgx-h100-superpod --nodes 512`` (and --nodes 1024)
    builds that very cluster and times it. A log of a 512-node run cannot be compared at all, and the
    advice names a field the command has no option for."""
    log = tmp_path / "ar4096.json"
    log.write_text(json.dumps(_all_reduce_report(4096)))
    r = runner.invoke(app, ["nccl-tests", "compare", str(log), "-c", "dgx-h100-superpod", "--json"])
    assert r.exit_code == 0, (r.stdout + r.stderr)[-400:]


def test_plan_never_ranks_a_nan_step_first():
    """``aifabric plan -m mixtral-8x7b -c h100-ib-2node -B 64 --capacity-factor inf`` exits 0 and prints
    "Winner tp=1 pp=1 dp=16 b=1 B=64 zero=3 recompute=full: nan s/step, nan tokens/s ... MFU nan%
    (compute (GEMMs) inf s ...)": a NaN step sorts as the fastest layout (the same plan without the
    option wins at 34.4 s/step). A plan ranks by throughput; a layout of no finite step time cannot win:
    the option must be refused (exit 2 naming --capacity-factor) or the NaN layouts left out."""
    r = runner.invoke(
        app, ["plan", "-m", "mixtral-8x7b", "-c", "h100-ib-2node", "-B", "64", "--capacity-factor", "inf"]
    )
    out = r.stdout + r.stderr
    if r.exit_code == 2:
        assert "--capacity-factor" in out, out[-400:]
    else:
        assert r.exit_code == 0 and "nan s/step" not in out, out[:600]

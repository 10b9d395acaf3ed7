"""Start-up: each command imports only what it uses, and the shipped data is read the fast way (issue 8:
``aifabric collective`` <= 0.5 s; issue 9: ``inspect`` and ``nccl-tests compare`` <= 0.5 s, start-up
included). The times themselves are measured in benchmarks/bench_startup.py, never asserted here: these
tests assert the causes (which modules a command loads, which YAML loader reads the catalogue)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "discovery" / "data"
CASE_01 = DATA / "case_01_dgx_h100_allreduce_single_node.txt"  # an nccl-tests log
CASE_08 = DATA / "case_08_b200_gke_a4_topo_and_2node_allgather.txt"  # an nvidia-smi topo -m matrix
CASE_17 = DATA / "case_17_azure_ndv4_ndv5_topology_xml.txt"  # NCCL topology XML

#: Libraries and packages none of these commands uses: scipy.optimize alone costs ~0.35 s to import,
#: matplotlib, pandas and networkx more; the training models, the fabric engines and the sweep are other
#: commands' work. numpy (70-100 ms) is checked apart: its module object exists (bound lazily) but its code
#: must not have run.
HEAVY = (
    "scipy",
    "matplotlib",
    "pandas",
    "networkx",
    "jinja2",
    "aifabric.training",
    "aifabric.engines.fabric",
    "aifabric.engines.flowsim",
    "aifabric.sweep",
    "aifabric.report.html",
)

#: Runs the CLI in a fresh interpreter, counting the YAML files read through the limited pure-Python loader
#: (user files only: the shipped catalogue goes through aifabric.package_data), then prints a JSON line.
PROGRAM = """
import json, sys
import aifabric.inputs as inputs
limited = []
original = inputs._LimitedLoader.__init__
def counting(self, stream):
    limited.append(stream[:40])
    original(self, stream)
inputs._LimitedLoader.__init__ = counting
sys.argv = ["aifabric", *ARGS]
from aifabric.cli.app import main
try:
    main()
except SystemExit as exit_:
    code = exit_.code or 0
print(json.dumps({"code": code, "heavy": sorted(m for m in HEAVY if m in sys.modules),
                  "numpy_ran": "numpy._core" in sys.modules,
                  "modules": sorted(m for m in sys.modules if m.startswith("aifabric.")),
                  "limited": limited}), file=sys.stderr)
"""


def _run(args: list[str]) -> tuple[dict, str]:
    program = PROGRAM.replace("ARGS", repr(args)).replace("HEAVY", repr(HEAVY))
    r = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=False)
    return json.loads(r.stderr.strip().splitlines()[-1]), r.stdout


COMMANDS = {
    "collective": ["collective", "all_reduce", "-c", "h100-ib-2node", "--size", "1GiB", "--json"],
    "compare": ["nccl-tests", "compare", str(CASE_01), "--json"],
    "inspect-topo": ["inspect", str(CASE_08), "--json"],
    "inspect-xml": ["inspect", str(CASE_17), "--json"],
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_command_imports_no_heavy_library_and_parses_no_shipped_yaml_slowly(name: str) -> None:
    seen, stdout = _run(COMMANDS[name])
    assert seen["code"] == 0
    assert seen["heavy"] == []
    assert not seen["numpy_ran"]  # bound lazily (aifabric.lazy_import): only transfer plans use numpy
    assert seen["limited"] == []  # every YAML read was shipped data, through the fast loader
    assert json.loads(stdout)  # the command's answer, as JSON


def test_collective_loads_no_discovery_parser_and_no_topology() -> None:
    seen, stdout = _run(COMMANDS["collective"])
    assert '"algorithm": "nvls' in stdout
    modules = set(seen["modules"])
    assert "aifabric.cli.inspect" not in modules  # only the command's own module (cli/app.py COMMANDS)
    assert "aifabric.cluster.topology" not in modules  # the formula engine needs no link graph
    assert not {m for m in modules if m.startswith("aifabric.discovery.")} - {"aifabric.discovery.calibrate"}


def test_a_user_cluster_file_still_goes_through_the_limited_loader(tmp_path: Path) -> None:
    cluster = tmp_path / "c.yaml"
    cluster.write_text(
        "name: mine\naccelerator: h100-sxm\ngpus_per_node: 8\nnodes: 2\nscale_up: {kind: nvswitch}\n"
        "scale_out: {nic: connectx-7, fabric: infiniband, switch: quantum-2-qm9700, tiers: 2}\n"
    )
    seen, _ = _run(["collective", "all_reduce", "-c", str(cluster), "--size", "1GiB", "--json"])
    assert seen["code"] == 0
    assert len(seen["limited"]) == 1 and seen["limited"][0].startswith("name: mine")


def test_the_whole_app_still_has_every_command() -> None:
    from aifabric.cli.app import COMMANDS as APP_COMMANDS
    from aifabric.cli.app import app

    names = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    assert names == set(APP_COMMANDS)


@pytest.mark.parametrize("name", ["inspect-topo", "inspect-xml"])
def test_inspect_loads_no_nccl_tests_reader(name: str) -> None:
    # issue 9: inspect paid ~50 ms for discovery.compare when compare and inspect shared cli/inspect.py
    seen, stdout = _run(COMMANDS[name])
    modules = set(seen["modules"])
    assert seen["code"] == 0 and json.loads(stdout)
    assert {
        "aifabric.cli.nccl_tests",
        "aifabric.discovery.compare",
        "aifabric.discovery.nccl_tests",
    }.isdisjoint(modules)

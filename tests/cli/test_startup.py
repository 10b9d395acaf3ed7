"""``aifabric collective`` starts without the heavy libraries of other commands (issue 8: start-up <= 0.5 s;
the time itself is measured in benchmarks/bench_startup.py, never asserted here)."""

import subprocess
import sys

HEAVY = ("scipy", "matplotlib", "pandas", "networkx", "aifabric.training", "aifabric.engines.fabric")

PROGRAM = f"""
import sys
sys.argv = ["aifabric", "collective", "all_reduce", "--size", "1GiB", "--json"]
from aifabric.cli.app import main
try:
    main()
except SystemExit as exit_:
    assert not exit_.code, exit_.code
print(sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)
"""


def test_collective_command_imports_no_heavy_library():
    r = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, check=True)
    assert r.stderr.strip().splitlines()[-1] == "[]"
    assert '"algorithm": "nvls' in r.stdout


def test_the_whole_app_still_has_every_command():
    from aifabric.cli.app import COMMANDS, app

    names = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    assert names == set(COMMANDS)

"""Start-up benchmark: wall time of whole ``aifabric`` commands, Python start-up included.

Issues 8 and 9 ask for <= 0.5 s each for ``aifabric collective all_reduce -c h100-ib-2node --size 1GiB``
and for ``aifabric inspect FILE`` and ``aifabric nccl-tests compare FILE`` on every shared case in
``../shared/cases/nccl-tests/``. Run: ``python benchmarks/bench_startup.py`` (best of 5 per command; on a
loaded machine the best run is the one closest to the idle figure; ``--repeat N``, ``--cases DIR``).

The exit code of each command is printed next to its time: a case a command refuses (a topology file
given to ``compare``, say) exits 2 with one line, and that refusal is timed like any answer.

Bytecode: with ``PYTHONDONTWRITEBYTECODE`` set (as on the shared development machine) and no
``__pycache__`` in the source tree, every run compiles aifabric's modules again (~70 ms of CPU for
``compare``). An installed package has its bytecode compiled by ``pip install``; ``--compile`` does the
same for the tree being measured (``compileall`` into its ``__pycache__`` folders, which git ignores) before
timing. The header says which case was measured.

Import breakdown: ``python -X importtime -m aifabric collective all_reduce --size 1GiB 2>&1 >/dev/null |
sort -t'|' -k2 -n | tail``.

A loaded machine: the load average is printed before and after (the figures are only the idle ones when it
stays well under the core count). ``--against SRC`` also times another source tree (``git archive <commit>
src | tar -x -C /tmp/base``, then ``--against /tmp/base/src``), each of its runs interleaved with this tree's,
so that both columns see the same load: the ratio holds where the absolute figures do not.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Where the shared cases are looked for: next to the main checkout (``../shared``), next to a worktree's
#: folder (``../../shared``), else the copies the discovery tests carry.
CASE_FOLDERS = (
    ROOT.parent / "shared" / "cases" / "nccl-tests",
    ROOT.parents[1] / "shared" / "cases" / "nccl-tests",
    ROOT / "tests" / "discovery" / "data",
)
TARGET_S = 0.5


def _run(cmd: list[str], env: dict[str, str] | None) -> tuple[float, float, int]:
    """(wall time s, CPU user+sys s, exit code) of one run of ``cmd``."""
    before = os.times()
    t0 = time.perf_counter()
    rc = subprocess.run(cmd, capture_output=True, check=False, env=env).returncode
    wall = time.perf_counter() - t0
    after = os.times()
    cpu = after.children_user + after.children_system - before.children_user - before.children_system
    return wall, cpu, rc


def best_of(cmd: list[str], repeat: int, envs: list[dict[str, str] | None]) -> list[tuple[float, float, int]]:
    """(best wall time s, best CPU user+sys s, exit code) of ``repeat`` runs of ``cmd`` under each of
    ``envs``, the environments' runs interleaved (the same load for each)."""
    runs: list[list[tuple[float, float, int]]] = [[] for _ in envs]
    for _ in range(repeat):
        for k, env in enumerate(envs):
            runs[k].append(_run(cmd, env))
    return [(min(r[0] for r in rs), min(r[1] for r in rs), rs[-1][2]) for rs in runs]


def commands(cases: Path) -> list[tuple[str, list[str]]]:
    """(label, arguments after ``aifabric``) of every command timed."""
    out = [
        (
            "collective all_reduce -c h100-ib-2node --size 1GiB",
            ["collective", "all_reduce", "-c", "h100-ib-2node", "--size", "1GiB"],
        )
    ]
    for case in sorted(cases.glob("case_*.txt")):
        out.append((f"inspect {case.name}", ["inspect", str(case)]))
        out.append((f"nccl-tests compare {case.name}", ["nccl-tests", "compare", str(case)]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per command (best is kept)")
    default = next((f for f in CASE_FOLDERS if f.is_dir()), CASE_FOLDERS[-1])
    parser.add_argument("--cases", type=Path, default=default, help="folder of nccl-tests cases (*.txt)")
    parser.add_argument(
        "--compile", action="store_true", help="compile aifabric's bytecode first, as pip install does"
    )
    parser.add_argument("--against", type=Path, help="another source tree (its src/) timed alongside")
    args = parser.parse_args()
    spec = importlib.util.find_spec("aifabric")
    package = Path(next(iter(spec.submodule_search_locations or []))) if spec else None
    if args.compile and package is not None:
        compileall.compile_dir(package, quiet=1)
    cached = package is not None and any(package.rglob("__pycache__/*.pyc"))
    no_write = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    print(f"aifabric: {package}; bytecode: {'cached' if cached else 'none cached'}"
          f"{', PYTHONDONTWRITEBYTECODE set' if no_write else ''}")  # fmt: skip
    print(f"cases: {args.cases.resolve()}; load average {_load()}")
    envs: list[dict[str, str] | None] = [None]
    if args.against is not None:
        envs.append({**os.environ, "PYTHONPATH": str(args.against.resolve())})
        print(f"against: {args.against.resolve()} (its columns second)")
    print(f"{'aifabric command':60s} " + " ".join(f"{'wall s':>7s} {'cpu s':>7s} {'rc':>3s}" for _ in envs))
    worst = 0.0
    for label, argv in commands(args.cases):
        timed = best_of([sys.executable, "-m", "aifabric", *argv], args.repeat, envs)
        worst = max(worst, timed[0][0])
        flag = "" if timed[0][0] <= TARGET_S else f"  above {TARGET_S} s"
        cells = " ".join(f"{wall:7.3f} {cpu:7.3f} {rc:3d}" for wall, cpu, rc in timed)
        print(f"{label[:60]:60s} {cells}{flag}")
    print(f"slowest (best of {args.repeat}): {worst:.3f} s; target {TARGET_S} s; load average {_load()}")


def _load() -> str:
    """The 1, 5 and 15 minute load averages, as ``uptime`` prints them."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()

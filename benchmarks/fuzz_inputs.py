"""Long fuzz run: generated CLI values and mutated real files through the CLI (in-process) and the library.

Every case runs in a worker process under a memory limit (``RLIMIT_AS``, default 4 GiB) and a time limit
(default 20 s, enforced by the parent, which kills and replaces a worker that overruns). Outcomes:

- ``ok``: exit 0 (CLI) or a return value (library);
- ``clean``: exit 2 with exactly one line on stderr starting ``error:`` (CLI), or an
  :class:`~aifabric.errors.AifabricError` / ``ValueError`` (library);
- ``traceback``: any other exception, or exit 2 without a single clean line, or exit 1;
- ``hang``: over the time limit;
- ``memory``: ``MemoryError`` under the address-space limit, or the worker killed outright.

It prints the counts per outcome and kind, then the first example of each failing class and each distinct
failure place (file:line of the innermost aifabric frame). Exit status 1 if any case failed.

    python benchmarks/fuzz_inputs.py --cases 10000 --workers 2 --seed 0

Case kinds: ``collective`` (presets, mutated cluster YAML, sizes, counts, algorithms, protocols,
engines, routing, seeds, conventions), ``fabric`` (traffic, jobs, placement, ``--fail`` specs),
``cluster`` (show/list on presets and mutated YAML), ``sweep`` (generated sweep files, output paths),
``logs`` (mutated nccl-tests logs and NCCL topology XML through ``nccl-tests compare`` and ``inspect``),
``spec`` / ``formula`` / ``sweepspec`` (the library: ``ClusterSpec.from_dict`` on mutated preset
mappings, ``formula_collective`` on generated values, ``SweepSpec.from_dict``).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import multiprocessing as mp
import os
import queue
import random
import resource
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PRESETS = ROOT / "src" / "aifabric" / "cluster" / "presets"
LOGS = ROOT / "tests" / "discovery" / "data"

OPS = ["all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast", "reduce", "send_recv"]
JUNK = [
    "",
    " ",
    "nan",
    "NaN GB",
    "inf",
    "-inf GB",
    ".inf",
    "-1",
    "0",
    "1e309",
    "1e-320 B",
    "9" * 40,
    "[/]",
    "[bold]x",
    "\x1b[31mred",
    "a" * 300,
    "../../etc/passwd",
    "0x10",
    "1_000",
    "1 GB/s",
    "1 Gb",
    "NULL",
    "~",
    "&a",
    "*a",
    "{}",
    "[]",
    "é",
]
SIZES = ["8 B", "1 KiB", "1 MB", "64 MiB", "1 GiB", "16 GiB", "1 TB", "1e15 B", "3 B", "1.5 GB", "1 PB"]
INTS = [0, 1, 2, 3, 4, 7, 8, 16, 64, 100, 1000, 4096, 65536, 10**6, 10**9, 2**31, 2**63, 10**30, -1, -(2**40)]
VALUES: list[Any] = [
    *INTS,
    0.0,
    -0.5,
    0.5,
    1.5,
    1e308,
    float("nan"),
    float("inf"),
    "x",
    "400 Gb/s",
    "900 GB/s",
    "0 GB/s",
    "1 us",
    "[/]",
    None,
    True,
    False,
    [],
    [1],
    [1, 2],
    [float("inf")],
    {},
    {"a": 1},
    "nan GB/s",
    "1e999 Gb/s",
]
SWEEP_KEYS = [
    "nodes",
    "gpus",
    "name",
    "scale_out.nic",
    "scale_out.nic_speed",
    "scale_out.oversubscription",
    "scale_out.planes",
    "scale_out.radix",
    "scale_out.tiers",
    "scale_up.bandwidth",
    "front_end.nics_per_node",
    "",
    "foo",
    "scale_out.foo",
    "name.first",
    "scale_out",
    "accelerator",
]


# --- generation ----------------------------------------------------------------------------------
def _mutate_text(rng: random.Random, text: str) -> str:
    """A few byte-level edits: delete, duplicate, insert junk, replace a number, truncate."""
    for _ in range(rng.randint(1, 4)):
        n = len(text)
        i = rng.randrange(n + 1)
        j = min(n, i + rng.randint(0, 60))
        pick = rng.random()
        if pick < 0.2:
            text = text[:i] + text[j:]
        elif pick < 0.35:
            text = text[:j] + text[i:j] * rng.randint(1, 50) + text[j:]
        elif pick < 0.6:
            text = text[:i] + rng.choice(JUNK + [str(v) for v in INTS]) + text[i:]
        elif pick < 0.85:
            digits = [k for k, c in enumerate(text) if c.isdigit()]
            if digits:
                k = rng.choice(digits)
                text = text[:k] + str(rng.choice(INTS)) + text[k + 1 :]
        else:
            text = text[:i]
    return text


def _mutate_mapping(rng: random.Random, data: Any) -> Any:
    """Set a random key path of a nested mapping to a random value (or delete it)."""
    data = copy.deepcopy(data)
    for _ in range(rng.randint(1, 3)):
        node = data
        while isinstance(node, dict) and node:
            key = rng.choice(list(node))
            if isinstance(node[key], dict) and rng.random() < 0.6:
                node = node[key]
                continue
            if rng.random() < 0.15:
                del node[key]
            else:
                node[key] = rng.choice(VALUES)
            break
    return data


def _preset_texts() -> dict[str, str]:
    return {p.stem: p.read_text() for p in sorted(PRESETS.glob("*.yaml"))}


def _log_texts() -> dict[str, str]:
    return {p.name: p.read_text(errors="replace") for p in sorted(LOGS.glob("*.txt"))}


def _cluster_arg(rng: random.Random, files: dict[str, str], presets: dict[str, str]) -> str:
    if rng.random() < 0.5:
        return rng.choice([*presets, "nope", "[/]", ""])
    if rng.random() < 0.3:
        import yaml

        data = yaml.safe_load(rng.choice(list(presets.values())))
        files["c.yaml"] = yaml.safe_dump(_mutate_mapping(rng, data), allow_unicode=True)
    else:
        files["c.yaml"] = _mutate_text(rng, rng.choice(list(presets.values())))
    return "{dir}/c.yaml"


def _maybe(rng: random.Random, p: float, *opts: Any) -> list[str]:
    return [str(o) for o in opts] if rng.random() < p else []


def make_case(i: int, seed: int, presets: dict[str, str], logs: dict[str, str]) -> dict[str, Any]:
    """The i-th case (deterministic in ``seed``): {"kind", "args" or "call", "files"}."""
    rng = random.Random(seed * 1_000_003 + i)
    files: dict[str, str] = {}
    kind = rng.choices(
        ["collective", "fabric", "cluster", "sweep", "logs", "spec", "formula", "sweepspec"],
        weights=[30, 8, 8, 8, 10, 14, 14, 8],
    )[0]
    size = lambda: rng.choice(SIZES + JUNK) if rng.random() < 0.3 else rng.choice(SIZES)  # noqa: E731
    if kind == "collective":
        args = ["collective", rng.choice(OPS + ["allreduce", "x"]) if rng.random() < 0.1 else rng.choice(OPS)]
        args += ["-c", _cluster_arg(rng, files, presets)]
        args += ["--engine", rng.choice(["formula", "formula", "links", "flow", "x"])]
        args += ["-s", size()] if rng.random() < 0.8 else ["-b", size(), "-e", size()]
        args += _maybe(rng, 0.3, "--nodes", rng.choice(INTS))
        args += _maybe(rng, 0.2, "--ranks", rng.choice(INTS))
        args += _maybe(
            rng, 0.15, "--algo", rng.choice(["ring", "tree", "nvls", "direct", "p2p", "torus", "x"])
        )
        args += _maybe(rng, 0.15, "--proto", rng.choice(["LL", "LL128", "Simple", "x"]))
        args += _maybe(rng, 0.2, "--routing", rng.choice(["ecmp", "pinning", "qp", "spray", "adaptive", "x"]))
        args += _maybe(rng, 0.1, "--seed", rng.choice(INTS))
        args += _maybe(rng, 0.1, "--convention", rng.choice(["per_direction", "bidirectional", "x"]))
        args += _maybe(rng, 0.1, "--efficiency", rng.choice(["nccl", "line_rate", "x"]))
        args += _maybe(rng, 0.05, "--factor", rng.choice(INTS))
        args += ["--json"] if rng.random() < 0.2 else []
        if rng.random() < 0.05:
            args = ["--max-memory", rng.choice(["1kB", "1GiB", "x", "0", "-1"]), *args]
        return {"kind": kind, "args": args, "files": files}
    if kind == "fabric":
        args = ["fabric", rng.choice([*OPS, "permutation", "incast", "uniform", "x"])]
        args += ["-c", rng.choice(["h100-ib-2node", "dgx-h100-superpod", "gb200-nvl72", "tpu-v5p-pod"])]
        args += _maybe(rng, 0.5, "--nodes", rng.choice([1, 2, 4, 16, 64, 0, 10**6]))
        args += ["-s", size(), "--engine", rng.choice(["links", "flow", "x"])]
        args += _maybe(rng, 0.4, "--routing", rng.choice(["ecmp", "pinning", "qp", "spray", "adaptive"]))
        args += _maybe(rng, 0.3, "--jobs", rng.choice([1, 2, 3, 8, 1000]))
        args += _maybe(rng, 0.3, "--placement", rng.choice(["packed", "fragmented", "random", "spread", "x"]))
        fail = rng.choice(
            ["fabric:0.05", "spine:3", "link:120", "leaf:1", "fabric:1.5", "spine:-1", "x", "link:"]
        )
        args += _maybe(rng, 0.3, "--fail", fail)
        args += _maybe(rng, 0.2, "--qps", rng.choice([1, 4, 256, 0]))
        args += _maybe(rng, 0.1, "--seed", rng.choice(INTS))
        return {"kind": kind, "args": args, "files": files}
    if kind == "cluster":
        sub = rng.choice(["show", "show", "list"])
        args = ["cluster", sub] + ([_cluster_arg(rng, files, presets)] if sub == "show" else [])
        args += ["--json"] if rng.random() < 0.3 else []
        return {"kind": kind, "args": args, "files": files}
    if kind == "sweep":
        vary: dict[str, Any] = {}
        for _ in range(rng.randint(0, 3)):
            key = rng.choice(SWEEP_KEYS)
            vary[key] = rng.choice(
                [[rng.choice(VALUES) for _ in range(rng.randint(1, 3))], rng.choice(VALUES)]
            )
        data = {
            "cluster": rng.choice(
                ["h100-ib-2node", "dgx-h100-superpod", "tpu-v5p-pod", "v100-pcie-4gpu", "x"]
            ),
            "vary": vary,
            "collectives": [{"op": rng.choice(OPS), "sizes": [size()]}],
        }
        files["s.yaml"] = json.dumps(data, allow_nan=True).replace("NaN", ".nan").replace("Infinity", ".inf")
        if rng.random() < 0.3:
            files["s.yaml"] = _mutate_text(rng, files["s.yaml"])
        out = rng.choice(["{dir}/o.db", "{dir}/o.db", "{dir}", "{dir}/s.yaml/x.db", "{dir}/d/e/o.db"])
        args = ["sweep", "{dir}/s.yaml", "--db", out] + _maybe(rng, 0.2, "--workers", rng.choice([1, 2]))
        return {"kind": kind, "args": args, "files": files}
    if kind == "logs":
        name = rng.choice(list(logs))
        files["log.txt"] = _mutate_text(rng, logs[name]) if rng.random() < 0.9 else logs[name]
        if "xml" in name and rng.random() < 0.5:
            args = ["inspect", "{dir}/log.txt"] + _maybe(
                rng, 0.3, "--nic-speed", rng.choice(["400 Gb/s", "x"])
            )
        else:
            args = ["nccl-tests", "compare", "{dir}/log.txt"] + _maybe(
                rng, 0.3, "-c", rng.choice(list(presets))
            )
        return {"kind": kind, "args": args, "files": files}
    if kind == "spec":
        import yaml

        data = yaml.safe_load(rng.choice(list(presets.values())))
        return {"kind": kind, "call": _mutate_mapping(rng, data), "files": files}
    if kind == "formula":
        call = {
            "op": rng.choice(OPS),
            "bytes": rng.choice([1.0, 8.0, 1e6, 1e9, 1e15, 1e300, 0.0, -1.0, float("nan"), float("inf")]),
            "preset": rng.choice(list(presets)),
            "nodes": rng.choice([None, None, 1, 2, 4, 64, 4096, 10**6]),
            "changes": {rng.choice(SWEEP_KEYS[2:]): rng.choice(VALUES)} if rng.random() < 0.5 else {},
            "algorithm": rng.choice(
                [None, None, "ring", "tree", "nvls", "direct", "torus", "hierarchical", "x"]
            ),
            "efficiency": rng.choice(["nccl", "line_rate"]),
        }
        return {"kind": kind, "call": call, "files": files}
    data = {
        "cluster": rng.choice(["lesson", "h100-ib-2node", "", None, 3]),
        "vary": {rng.choice(SWEEP_KEYS): rng.choice(VALUES)} if rng.random() < 0.7 else rng.choice(VALUES),
        "collectives": rng.choice([[{"op": rng.choice(OPS), "sizes": [size()]}], rng.choice(VALUES)]),
    }
    return {"kind": "sweepspec", "call": data, "files": files}


# --- running -------------------------------------------------------------------------------------
def _place(tb: traceback.StackSummary | list[traceback.FrameSummary]) -> str:
    frames = [f for f in tb if "aifabric" in f.filename and "fuzz_inputs" not in f.filename]
    f = frames[-1] if frames else (tb[-1] if tb else None)
    if f is None:
        return "?"
    name = f.filename.split("src/")[-1]
    return f"{name}:{f.lineno} ({f.name})"


def _run_cli(args: list[str]) -> tuple[str, str]:
    from aifabric.cli.app import main

    out, err = io.StringIO(), io.StringIO()
    old = sys.argv
    sys.argv = ["aifabric", *args]
    rc: Any = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as ex:
        rc = ex.code if ex.code is not None else 0
    finally:
        sys.argv = old
    lines = err.getvalue().strip().splitlines()
    if rc == 0:
        return "ok", ""
    if rc == 2 and len(lines) == 1 and lines[0].startswith("error: "):
        return "clean", lines[0][:200]
    return "traceback", f"exit {rc}: {' | '.join(lines[-3:])[:300]}"


def _run_lib(case: dict[str, Any]) -> tuple[str, str]:
    from aifabric.cluster.presets import preset
    from aifabric.cluster.spec import ClusterSpec
    from aifabric.engines.formula import formula_collective
    from aifabric.sweep.grid import SweepSpec

    call = case["call"]
    if case["kind"] == "spec":
        spec = ClusterSpec.from_dict(call)
        from aifabric.cluster.topology import build_topology

        if spec.n_gpus <= 1_000_000:
            build_topology(spec)
    elif case["kind"] == "formula":
        spec = preset(call["preset"], nodes=call["nodes"], **call["changes"])
        formula_collective(
            call["op"], call["bytes"], spec, algorithm=call["algorithm"], efficiency=call["efficiency"]
        )
    else:
        SweepSpec.from_dict(call).points()
    return "ok", ""


def _run_case(case: dict[str, Any], tmp: Path) -> tuple[str, str, str]:
    """(outcome, detail, place) of one case."""
    from aifabric.errors import AifabricError

    d = tmp / "case"
    if d.exists():
        import shutil

        shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    for name, text in case["files"].items():
        (d / name).write_text(text, errors="replace")
    try:
        if "args" in case:
            args = [a.replace("{dir}", str(d)) for a in case["args"]]
            os.chdir(d)
            outcome, detail = _run_cli(args)
            return outcome, detail, ""
        return (*_run_lib(case), "")
    except MemoryError:
        return "memory", "MemoryError", _place(traceback.extract_tb(sys.exc_info()[2]))
    except (AifabricError, ValueError) as err:
        if "args" in case:
            raise
        return "clean", str(err)[:200], ""
    except RecursionError as err:
        return "traceback", f"RecursionError: {err}"[:300], _place(traceback.extract_tb(err.__traceback__))
    except Exception as err:  # noqa: BLE001 - classified, that is the point
        return (
            "traceback",
            f"{type(err).__name__}: {err}"[:300],
            _place(traceback.extract_tb(err.__traceback__)),
        )
    finally:
        os.chdir(tmp)


def _worker(tasks: Any, results: Any, mem_bytes: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    os.environ.setdefault("MPLBACKEND", "Agg")
    tmp = Path(tempfile.mkdtemp(prefix="aifabric-fuzz-"))
    os.chdir(tmp)
    import aifabric.cli.app  # noqa: F401 - import once, not inside the first case's time

    while True:
        item = tasks.get()
        if item is None:
            return
        i, case = item
        results.put(("start", os.getpid(), i, time.monotonic()))
        try:
            outcome, detail, place = _run_case(case, tmp)
        except BaseException as err:  # noqa: BLE001
            outcome, detail, place = "traceback", f"{type(err).__name__}: {err}"[:300], "?"
        results.put(("done", os.getpid(), i, (outcome, detail, place)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per case")
    ap.add_argument("--memory", type=float, default=4.0, help="GiB of address space per worker")
    ap.add_argument("--kinds", default="", help="comma-separated kinds to keep (default: all)")
    opts = ap.parse_args(argv)
    presets, logs = _preset_texts(), _log_texts()
    cases = [make_case(i, opts.seed, presets, logs) for i in range(opts.cases)]
    if opts.kinds:
        keep = set(opts.kinds.split(","))
        cases = [c for c in cases if c["kind"] in keep]
    ctx = mp.get_context("fork")
    tasks, results = ctx.Queue(), ctx.Queue()
    mem = int(opts.memory * 2**30)

    def spawn() -> Any:
        p = ctx.Process(target=_worker, args=(tasks, results, mem))  # not daemonic: sweeps fork pools
        p.start()
        return p

    for i, c in enumerate(cases):
        tasks.put((i, c))
    workers = {p.pid: p for p in (spawn() for _ in range(opts.workers))}
    running: dict[int, tuple[int, float]] = {}
    outcomes: dict[int, tuple[str, str, str]] = {}
    t0 = time.monotonic()
    last = t0
    while len(outcomes) < len(cases):
        try:
            kind, pid, i, payload = results.get(timeout=0.5)
            if kind == "start":
                running[pid] = (i, payload)
            else:
                outcomes[i] = payload
                running.pop(pid, None)
        except queue.Empty:
            pass
        now = time.monotonic()
        for pid, (i, start) in list(running.items()):
            p = workers[pid]
            overdue = now - start > opts.timeout
            if overdue or not p.is_alive():
                if overdue:
                    p.kill()
                p.join()
                outcomes.setdefault(
                    i,
                    ("hang", f"over {opts.timeout:g} s", "")
                    if overdue
                    else ("memory", f"worker died (exit {p.exitcode})", ""),
                )
                running.pop(pid)
                del workers[pid]
                q = spawn()
                workers[q.pid] = q
        if now - last > 30:
            last = now
            print(f"... {len(outcomes)}/{len(cases)} cases, {now - t0:.0f} s", file=sys.stderr, flush=True)
    for _ in workers:
        tasks.put(None)
    for p in workers.values():
        p.join(timeout=5)
    return _report(cases, outcomes, time.monotonic() - t0)


def _report(cases: list[dict[str, Any]], outcomes: dict[int, tuple[str, str, str]], wall: float) -> int:
    counts = Counter(o for o, _, _ in outcomes.values())
    by_kind = Counter((cases[i]["kind"], o) for i, (o, _, _) in outcomes.items())
    print(f"{len(cases)} cases in {wall:.0f} s")
    for name in ("ok", "clean", "traceback", "hang", "memory"):
        print(f"  {name:<10} {counts.get(name, 0):>6}")
    kinds = sorted({c["kind"] for c in cases})
    print(
        "per kind: "
        + "; ".join(
            f"{k} "
            + ", ".join(
                f"{o}={by_kind[(k, o)]}"
                for o in ("ok", "clean", "traceback", "hang", "memory")
                if by_kind[(k, o)]
            )
            for k in kinds
        )
    )
    places: dict[tuple[str, str], int] = {}
    for i, (o, detail, place) in sorted(outcomes.items()):
        if o in ("traceback", "hang", "memory"):
            key = (o, place or detail.split(":")[0])
            if key not in places:
                places[key] = i
                case = cases[i]
                shown = case.get("args") or json.dumps(case.get("call"), default=str)[:300]
                print(f"\n[{o}] {place or '-'}: {detail}\n  case {i} ({case['kind']}): {shown}")
    failing = sum(counts.get(k, 0) for k in ("traceback", "hang", "memory"))
    print(f"\n{failing} failing case(s) in {len(places)} distinct place(s)")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())

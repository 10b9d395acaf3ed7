"""Long fuzz of every input file kind through the CLI, in-process, with a time and a memory limit per case.

Run: ``python benchmarks/fuzz_files.py [--cases 10000] [--seed 0] [--workers 1] [--keep DIR]``.

Each case takes a real file of ``tests/robustness/data`` (cluster, sweep and calibration YAML, ``nvidia-smi
topo -m`` text, NCCL topology XML, nccl-tests logs) or a command-line value, damages it one to three times
(cut, tokens and lines dropped, doubled or repeated thousands of times, edge tokens swapped in, garbage
text or bytes, alias bombs, deep nesting, long lines), and runs the command a user would run on it with
``typer.testing.CliRunner``, ``--json`` where the command has it. Outcomes:

- ``ok``: exit 0 (and, with ``--json``, stdout is valid JSON: else ``bad_json``);
- ``clean``: exit 2 with exactly one ``error:`` line on stderr;
- ``messy``: exit 2 with more or other lines on stderr;
- ``traceback``: any other exit (an exception escaped: a bug);
- ``hang``: more than ``--timeout`` seconds of CPU time, or no answer within three times that in wall
  time (the worker is then killed and replaced). CPU time, not wall time, decides: the machines this runs on
  are shared, and a case slowed down by its neighbours is not a hang of the code;
- ``memory``: ``MemoryError`` under the ``--memory`` limit (RLIMIT_AS of the worker).

Prints the count per outcome and kind, and writes every case that is not ``ok``/``clean`` to ``--keep``.
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing as mp
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "robustness" / "data"
TOPO = (
    "case_08_b200_gke_a4_topo_and_2node_allgather.txt",
    "case_26_a30_pcie_two_nics_phb_no_pcie_switch.txt",
)
XML = ("case_17_azure_ndv4_ndv5_topology_xml.txt", "case_21_aws_p4d_p5_nccl_topology_xml.txt")
LOGS = ("case_01_dgx_h100_allreduce_single_node.txt", "case_13_v100_pcie_4gpu_no_nvlink.txt")
# kind -> (files, command with {} for the damaged file, whether stdout is JSON)
KINDS: dict[str, tuple[tuple[str, ...], tuple[str, ...], bool]] = {
    "cluster_yaml": (
        ("cluster_dgx_h100_superpod.yaml", "cluster_example_roce.yaml"),
        ("cluster", "show", "{}", "--json"),
        True,
    ),
    "sweep_yaml": (("sweep_example.yaml",), ("sweep", "{}", "--db", "{out}", "--shards", "64"), False),
    "calibration_yaml": (
        ("calibration_case_03.yaml",),
        ("collective", "all_reduce", "-c", "h100-ib-2node", "--calibration", "{}", "--json"),
        True,
    ),
    "topo_m": (TOPO, ("inspect", "{}", "--json"), True),
    "nccl_xml": (XML, ("inspect", "{}", "--json"), True),
    "nccl_tests_log": (LOGS, ("nccl-tests", "compare", "{}", "--json"), True),
    "cli_values": ((), (), True),
}  # fmt: skip
EDGE_TOKENS = (
    "&a", "*a", "&a [*a]", "? [k]", "{a: 1}:", "<<: *a", "!!python/object/apply:os.system", "!!binary",
    ".nan", ".inf", "-.inf", "nan", "1e999", "9" * 40, "-1", "0", "~", "null", "[", "]", "{", "}", "'", '"',
    "|", ">", "- ", ": ", "\t", "[/]", "[bold]", "\x1b[31m", "\x1b]0;t\x07", "\x07", "\x00", "\ufeff", "X",
    "NV99999", "SYS", "N/A", "0-65535", "9-1", "GPU0", "NIC0:", "<system>", "</pci>", "<!DOCTYPE x>", "&b;",
    '<pci busid="q">', 'speed="1e999"', "hypercube_perf", "foo_perf", "NCCL_ALGO=Ring" * 3,
    "# Ranks 0-99999 on h", "#  Rank  0 Group  0 Pid  1 on h device  0 [0x1b] ", "# Avg bus bandwidth : nan",
    "CPU Affinity", "tiers: 9", "nodes: 1e9", "gpus_per_node: 0",
)  # fmt: skip
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)
SIZES = ("1 GiB", "400 Gb/s", "64 MiB", "800 Gbps", "nan GB", "inf B", "1e999 GB", "-1 GB", "0 B", "1 XB", "",
         "9" * 400, "1" + "0" * 30 + " B", "1,5 GB", "1__0 MB", "[/] GB", "\x1b[31m1 GB")  # fmt: skip


def damage(r: random.Random, text: str) -> str | bytes:
    lines = text.split("\n")
    kind = r.choice(["truncate", "drop_token", "swap_token", "drop_line", "double_line", "repeat_line",
                     "garbage", "bytes", "prefix", "join_lines"])  # fmt: skip
    if kind == "truncate":
        return text[: r.randrange(len(text) + 1)]
    if kind in ("drop_token", "swap_token"):
        words = text.split(" ")
        i = r.randrange(len(words))
        words[i] = "" if kind == "drop_token" else r.choice(EDGE_TOKENS)
        return " ".join(words)
    i = r.randrange(len(lines))
    if kind == "drop_line":
        return "\n".join(lines[:i] + lines[i + 1 :])
    if kind == "double_line":
        return "\n".join(lines[: i + 1] + lines[i:])
    if kind == "repeat_line":
        return "\n".join(lines[:i] + [lines[i]] * r.choice([100, 3000, 20000]) + lines[i:])
    if kind == "garbage":
        p = r.randrange(len(text) + 1)
        junk = "".join(
            r.choice(" \t\n-_.:[]<>()&*!?{}0123456789aeNVGPUX#=\x1b\\\"'") for _ in range(r.randrange(1, 400))
        )
        return text[:p] + junk + text[p:]
    if kind == "prefix":
        return r.choice([BOMB, "z: " + "[" * 5000 + "\n", "x" * 2_000_000 + "\n", "<pci>" * 5000 + "\n",
                         "NCCL_A=1" * 40 + " x\n", "\x1b[2J\n"]) + text  # fmt: skip
    if kind == "join_lines":
        a = r.randrange(len(text) + 1)
        return text[:a] + text[a : a + 5000].replace("\n", " ") + text[a + 5000 :]
    raw = text.encode()
    p = r.randrange(len(raw) + 1)
    return raw[:p] + bytes(r.randrange(256) for _ in range(r.randrange(1, 9))) + raw[p:]


def make_case(r: random.Random, kind: str) -> tuple[str, str | bytes, tuple[str, ...], bool]:
    files, command, is_json = KINDS[kind]
    if kind == "cli_values":
        value = r.choice(SIZES) if r.random() < 0.5 else damage(r, r.choice(SIZES) or "1 GiB")
        value = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        value = value.replace("\x00", "")  # argv cannot hold NUL
        option = r.choice(["--size", "--nic-speed"])
        args = ("collective", "all_reduce", "-c", "h100-ib-2node", option, value, "--json")
        if option == "--nic-speed":
            args = ("nccl-tests", "compare", str(DATA / LOGS[0]), "--nic-speed", value, "--json")
        return kind, b"", args, is_json
    data: str | bytes = (DATA / r.choice(files)).read_text()
    for _ in range(r.choice([1, 1, 2, 3])):
        data = damage(r, data if isinstance(data, str) else data.decode("utf-8", "replace"))
    return kind, data, command, is_json


def _limit_memory(limit_bytes: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))


def run_case(case: tuple[str, str | bytes, tuple[str, ...], bool]) -> tuple[str, str, float]:
    """Run one case in this worker; returns (outcome, detail, CPU seconds)."""
    start = time.process_time()
    outcome, detail = _run_case(case)
    return outcome, detail, time.process_time() - start


def _run_case(case: tuple[str, str | bytes, tuple[str, ...], bool]) -> tuple[str, str]:
    from typer.testing import CliRunner

    from aifabric.cli.app import app

    kind, data, command, is_json = case
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("input.yaml" if kind.endswith("yaml") else "input.txt")
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
        args = [a.replace("{}", str(path)).replace("{out}", str(Path(folder) / "out.csv")) for a in command]
        try:
            result = CliRunner().invoke(app, args)
        except MemoryError:
            return "memory", "MemoryError"
    if isinstance(result.exception, MemoryError):
        return "memory", "MemoryError"
    if result.exit_code == 0:
        if is_json:
            try:
                json.loads(result.stdout, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
            except ValueError as err:
                return "bad_json", str(err)[:200]
        return "ok", ""
    if result.exit_code == 2:
        lines = result.stderr.strip().splitlines()
        if len(lines) == 1 and lines[0].startswith("error: "):
            return "clean", lines[0][:200]
        return "messy", result.stderr[:400]
    exc = result.exception
    return "traceback", f"{type(exc).__name__}: {str(exc)[:200]}" if exc else f"exit {result.exit_code}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=20.0, help="CPU seconds per case")
    ap.add_argument("--memory", type=float, default=4.0, help="GiB per worker (RLIMIT_AS)")
    ap.add_argument("--keep", type=Path, default=None, help="folder for the cases that are not ok/clean")
    args = ap.parse_args()
    r = random.Random(args.seed)
    kinds = list(KINDS)
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    ctx = mp.get_context("fork")
    limit = int(args.memory * 2**30)

    def new_pool() -> mp.pool.Pool:
        return ctx.Pool(args.workers, initializer=_limit_memory, initargs=(limit,))

    pool = new_pool()
    started = time.perf_counter()
    pending: collections.deque[tuple[int, tuple, mp.pool.AsyncResult, float]] = collections.deque()
    next_case = 0
    while next_case < args.cases or pending:
        while next_case < args.cases and len(pending) < args.workers:
            case = make_case(r, kinds[next_case % len(kinds)])
            pending.append((next_case, case, pool.apply_async(run_case, (case,)), time.perf_counter()))
            next_case += 1
        index, case, handle, t0 = pending.popleft()
        try:
            outcome, detail, cpu_s = handle.get(
                timeout=max(0.1, 3 * args.timeout - (time.perf_counter() - t0))
            )
            if cpu_s > args.timeout:
                outcome, detail = "hang", f"{cpu_s:.1f} s of CPU ({outcome})"
        except mp.TimeoutError:
            outcome, detail = "hang", f"no answer in {3 * args.timeout:g} s"
            pool.terminate()
            pool = new_pool()
            requeue = list(pending)
            pending.clear()
            for i, c, _, _ in requeue:  # the others lost their worker: run them again
                pending.append((i, c, pool.apply_async(run_case, (c,)), time.perf_counter()))
        counts[case[0]][outcome] += 1
        if outcome not in ("ok", "clean"):
            print(f"case {index} {case[0]}: {outcome}: {detail}", file=sys.stderr, flush=True)
            if args.keep is not None:
                args.keep.mkdir(parents=True, exist_ok=True)
                data = case[1] if isinstance(case[1], bytes) else case[1].encode("utf-8", "surrogatepass")
                (args.keep / f"case_{index}_{case[0]}_{outcome}.bin").write_bytes(data)
                (args.keep / f"case_{index}_{case[0]}_{outcome}.args").write_text(" ".join(case[2]) + "\n")
        if (index + 1) % 500 == 0:
            print(
                f"... {index + 1} cases, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True
            )
    pool.terminate()
    outcomes = ("ok", "clean", "messy", "bad_json", "traceback", "hang", "memory")
    print(f"{args.cases} cases, seed {args.seed}, {time.perf_counter() - started:.0f} s, "
          f"limits {args.timeout:g} s and {args.memory:g} GiB per case")  # fmt: skip
    print(f"{'kind':20s}" + "".join(f"{o:>10s}" for o in outcomes))
    total: collections.Counter[str] = collections.Counter()
    for kind in kinds:
        total.update(counts[kind])
        print(f"{kind:20s}" + "".join(f"{counts[kind][o]:10d}" for o in outcomes))
    print(f"{'all':20s}" + "".join(f"{total[o]:10d}" for o in outcomes))
    sys.exit(0 if all(total[o] == 0 for o in outcomes[2:]) else 1)


if __name__ == "__main__":
    os.environ.setdefault("COLUMNS", "180")
    main()

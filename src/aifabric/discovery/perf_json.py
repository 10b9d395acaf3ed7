"""nccl-tests' JSON output (``-J file.json``, nccl-tests >= 2.18): the text log it stands for.

NVIDIA's nccl-tests ``src/util.cu`` (``JSON_FILE_VERSION`` 3, v2.19.6) writes one object per run::

    {"version": 3, "start_time": "...", "args": ["./build/all_reduce_perf", "-b", "8", ...],
     "env": ["NCCL_ALGO=Ring", ...], "nccl_version": 22907,
     "config": {"nthreads": 1, "ngpus": 8, "minimum_bytes": 8, "maximum_bytes": ..., "step_factor": 2,
                "warmup_iters": 5, "iterations": 20, "aggregated_iterations": 1, "validation": 1, "graph": 0,
                ..., "devices": [{"rank": 0, "group": 0, "pid": 1, "hostname": "h", "device": 0,
                                  "device_hex": "0000:18:00", "device_info": "NVIDIA H100 80GB HBM3"}]},
     "results": [{"size": 8, "count": 2, "type": "float", "redop": "sum", "root": "    -1",
                  "out_of_place": {"time": 10.1, "alg_bw": 0.0, "bus_bw": 0.0, "nwrong": 0.0},
                  "in_place": {...}, "actual_iterations": 20, "experiment_name": ""}, ...],
     "out_of_bounds": {"count": 0, "okay": true},
     "average_bus_bandwidth": {"bandwidth": 12.3, "okay": "unchecked"}, "end_time": "..."}

:func:`json_log_text` writes that object back as the text nccl-tests prints for the same run, so the table
reader, the rank/host/GPU/release inference and the NCCL settings (``export NCCL_X=v`` lines from ``env``)
are those of a text log; line numbers in its errors are those of that text. ``devices`` holds one entry per
process (``writeDeviceReport`` parses only the first ``# Rank`` line of each process's block), so each
entry stands for ``nthreads x ngpus`` ranks on consecutive devices of its host, and the rank lines are
written out for all of them. ``time`` is ``cpu_time`` under ``-C 1``; ``nwrong`` is null without a data
check (``N/A``); an ``out_of_place`` of null (trace replay: in-place only, which a row cannot say) is
refused.
"""

from __future__ import annotations

import json
import math
from pathlib import PurePosixPath
from typing import Any

from aifabric.errors import ParseError

__all__ = ["json_log_text", "looks_like_json"]

#: Most ranks one JSON report may expand its ``devices`` entries to (the text reader's own bound on rank
#: lines, :data:`aifabric.discovery.perf_metadata` ``_MAX_RANKS``).
_MAX_RANKS = 1 << 17


def looks_like_json(text: str) -> bool:
    """True when ``text`` starts (after blanks) with ``{`` and holds nccl-tests' ``"results"`` key."""
    return text.lstrip().startswith("{") and '"results"' in text


def json_log_text(text: str, source: str | None = None) -> str:
    """The nccl-tests text log that a ``-J`` JSON report stands for (module docstring).

    Raises
    ------
    ParseError
        If the text is not JSON, or not an nccl-tests report (no ``results`` list of row objects), or a
        field has the wrong type; one line naming the field.

    Examples
    --------
    >>> report = ('{"version": 3, "args": ["./all_reduce_perf"], "nccl_version": 22907, "config": '
    ...     '{"nthreads": 1, "ngpus": 2, "devices": [{"rank": 0, "group": 0, "pid": 7, "hostname": "h", '
    ...     '"device": 0, "device_hex": "0000:18:00", "device_info": "NVIDIA H100 80GB HBM3"}]}, '
    ...     '"results": [{"size": 1048576, "count": 262144, "type": "float", "redop": "sum", "root": "-1", '
    ...     '"out_of_place": {"time": 20.5, "alg_bw": 51.15, "bus_bw": 51.15, "nwrong": 0}, '
    ...     '"in_place": {"time": 20.1, "alg_bw": 52.17, "bus_bw": 52.17, "nwrong": null}}]}')
    >>> print(json_log_text(report).splitlines()[-1])
    1048576 262144 float sum -1 20.5 51.15 51.15 0 20.1 52.17 52.17 N/A
    """
    try:
        report = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise ParseError(f"not JSON: {err}", source=source) from None
    if not isinstance(report, dict) or not isinstance(report.get("results"), list):
        raise ParseError("JSON without an nccl-tests 'results' list (nccl-tests -J output)", source=source)
    config = _object(report.get("config", {}), "config", source)
    missing: list[str] = []
    rows = [_row(_object(r, "results[]", source), source, missing) for r in report["results"]]
    lines = [
        "# nccl-tests JSON report, version " + str(report.get("version")),
        *_env_lines(report.get("env"), source),
        *_header_lines(report, config, source),
        *_rank_lines(config, source),
        *(f'# nccl-tests JSON: {m} is "nan" (not measured), left out' for m in missing),
        "#",
        "#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong",
        *(r for r in rows if r is not None),
        *_footer_lines(report, source),
    ]
    return "\n".join(lines) + "\n"


def _object(value: Any, name: str, source: str | None) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ParseError(f"JSON field {name!r} is not an object", source=source)
    return value


def _int(value: Any, name: str, source: str | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ParseError(f"JSON field {name!r} is {value!r}, not a count", source=source)
    return value


def _number(value: Any, name: str, source: str | None) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ParseError(f"JSON field {name!r} is {value!r}, not a number", source=source)
    return repr(float(value)) if isinstance(value, float) else str(value)


def _env_lines(env: Any, source: str | None) -> list[str]:
    """``export NCCL_X=v`` for each NCCL variable of ``env`` (the settings reader's launcher form)."""
    if env is None:
        return []
    if not isinstance(env, list):
        raise ParseError("JSON field 'env' is not a list", source=source)
    return [f"export {e}" for e in env if isinstance(e, str) and e.startswith("NCCL_") and "\n" not in e]


def _header_lines(report: dict[str, Any], config: dict[str, Any], source: str | None) -> list[str]:
    """The version, ``Collective test starting`` and ``# nThread`` lines."""
    lines = []
    code = report.get("nccl_version")
    if code is not None:
        lines.append(f"# nccl-tests version (JSON) nccl-library={_int(code, 'nccl_version', source)}")
    args = report.get("args")
    program = (
        PurePosixPath(args[0]).name if isinstance(args, list) and args and isinstance(args[0], str) else ""
    )
    if program.endswith("_perf"):
        lines.append(f"# Collective test starting: {program}")
    if "nthreads" in config and "ngpus" in config:
        threads = _int(config["nthreads"], "config.nthreads", source)
        gpus = _int(config["ngpus"], "config.ngpus", source)
        lines.append(f"# nThread {threads} nGpus {gpus}" + _sweep(config, source))
    return lines


def _sweep(config: dict[str, Any], source: str | None) -> str:
    """The rest of the ``# nThread`` line, as ``writeDeviceReport`` prints it, when ``config`` has it all."""
    keys = (
        "minimum_bytes",
        "maximum_bytes",
        "warmup_iters",
        "iterations",
        "aggregated_iterations",
        "validation",
    )
    step = ("step_factor", "factor") if "step_factor" in config else ("step_bytes", "bytes")
    if not all(k in config for k in (*keys, step[0], "graph")):
        return ""
    low, high, warmup, iters, agg, check = (_int(config[k], f"config.{k}", source) for k in keys)
    factor, graph = (
        _int(config[step[0]], f"config.{step[0]}", source),
        _int(config["graph"], "config.graph", source),
    )
    return (
        f" minBytes {low} maxBytes {high} step: {factor}({step[1]}) warmup iters: {warmup} iters: {iters} "
        f"agg iters: {agg} validation: {check} graph: {graph}"
    )


def _rank_lines(config: dict[str, Any], source: str | None) -> list[str]:
    """``# Rank`` lines: each ``devices`` entry (one per process) for its ``nthreads x ngpus`` ranks."""
    devices = config.get("devices", [])
    if not isinstance(devices, list):
        raise ParseError("JSON field 'config.devices' is not a list", source=source)
    per_process = _int(config.get("nthreads", 1), "config.nthreads", source) * _int(
        config.get("ngpus", 1), "config.ngpus", source
    )
    if len(devices) * per_process > _MAX_RANKS:
        raise ParseError(f"JSON report of more than {_MAX_RANKS:,} ranks", source=source)
    lines = ["# Using devices"] if devices else []
    for entry in devices:
        d = _object(entry, "config.devices[]", source)
        rank, device, group, pid = (
            _int(d.get(k, 0 if k in ("group", "pid") else None), f"config.devices[].{k}", source)
            for k in ("rank", "device", "group", "pid")
        )
        host, name, bus = (
            str(d.get(k, "")).replace("\n", " ") for k in ("hostname", "device_info", "device_hex")
        )
        for i in range(per_process):
            lines.append(f"#  Rank {rank + i} Group {group} Pid {pid} on {host or '?'} "
                         f"device {device + i} [{bus if i == 0 else '?'}] {name}")  # fmt: skip
    return lines


#: What nccl-tests writes for a NaN value (``src/util.cu`` ``jsonDouble``: ``if(val != val)
#: fprintf(json_report_fp, "\"nan\"")``): a string, read as a missing cell.
_NAN = "nan"


def _half_words(half: dict[str, Any], place: str, source: str | None) -> list[str] | None:
    """The ``time algbw busbw #wrong`` cells of one half; None when its time or a bandwidth is "nan" (the
    half was not measured); a "nan" ``nwrong`` is a missing check (``N/A``)."""
    time = half.get("time", half.get("cpu_time"))
    values = (time, half.get("alg_bw"), half.get("bus_bw"))
    if _NAN in values:
        return None
    words = [
        _number(v, f"{place}.{k}", source) for v, k in zip(values, ("time", "alg_bw", "bus_bw"), strict=True)
    ]
    wrong = half.get("nwrong")
    missing = wrong is None or wrong == _NAN
    words.append("N/A" if missing else _number(wrong, f"{place}.nwrong", source).removesuffix(".0"))
    return words


def _row(result: dict[str, Any], source: str | None, missing: list[str]) -> str | None:
    """One result row: the parameters, then the out-of-place and in-place halves. A half of "nan" values is
    left out and named in ``missing``: the in-place half alone (a row of the out-of-place group, as
    builds that print no in-place half write), or the whole row when the out-of-place half is (None)."""
    size = _int(result.get("size"), "size", source)
    count = _int(result.get("count"), "count", source)
    words = [str(size), str(count)]
    for key in ("type", "redop", "root"):
        value = str(result.get(key, "")).strip()
        words.append(value if value and " " not in value else "?")
    if result.get("out_of_place") is None:  # trace replay (or cut): in-place only, which a row cannot say
        raise ParseError(
            f"JSON result of {size} bytes has no out-of-place half (trace replay)", source=source
        )
    for place in ("out_of_place", "in_place"):
        half = result.get(place)
        if half is None:
            continue
        cells = _half_words(_object(half, place, source), place, source)
        if cells is None:
            missing.append(f"{place} of the {size}-byte row")
            if place == "out_of_place":
                return None
            break
        words += cells
    return " ".join(words)


def _footer_lines(report: dict[str, Any], source: str | None) -> list[str]:
    """The ``# Out of bounds values`` and ``# Avg bus bandwidth`` footers, when the report has them."""
    lines = []
    bounds = report.get("out_of_bounds")
    if isinstance(bounds, dict) and "count" in bounds:
        count = _int(bounds["count"], "out_of_bounds.count", source)
        lines.append(f"# Out of bounds values : {count} {'FAILED' if count else 'OK'}")
    average = report.get("average_bus_bandwidth")
    if isinstance(average, dict) and average.get("bandwidth", _NAN) != _NAN:
        lines.append(
            f"# Avg bus bandwidth    : {_number(average['bandwidth'], 'average_bus_bandwidth', source)}"
        )
    return lines

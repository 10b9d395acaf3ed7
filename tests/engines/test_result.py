"""engines/result.py: the fast constructors the formula engine uses build what the dataclasses' own
``__init__`` builds (issue 8, Speed)."""

from __future__ import annotations

from dataclasses import fields

import pytest

from aifabric.cluster.presets import preset
from aifabric.engines.formula import formula_collective
from aifabric.engines.result import Candidate, CollectiveResult, assemble


def _values() -> dict:
    return {
        "op": "all_reduce",
        "message_bytes": 1024.0,
        "n_ranks": 16,
        "algorithm": "ring",
        "protocol": "LL",
        "time_s": 2e-5,
        "latency_s": 1e-5,
        "algbw_bytes_per_s": 5.12e7,
        "busbw_bytes_per_s": 9.6e7,
        "network_time_s": {"scale-out": 2e-5},
        "bottleneck": "latency",
        "explanation": "ring/LL",
        "candidates": (Candidate("ring", "LL", 2e-5),),
        "convention": "per_direction/nccl",
        "engine": "formula",
        "extra": {},
    }


def test_assemble_builds_what_init_builds():
    built = assemble(CollectiveResult, _values())
    assert built == CollectiveResult(**_values())
    assert built.to_dict() == CollectiveResult(**_values()).to_dict()
    assert assemble(
        Candidate, {"algorithm": "tree", "protocol": "Simple", "time_s": 1.5, "nccl_runs": True}
    ) == Candidate("tree", "Simple", 1.5)
    assert Candidate.of("tree", "Simple", 1.5) == Candidate("tree", "Simple", 1.5)


def test_assembled_results_stay_frozen():
    built = assemble(CollectiveResult, _values())
    with pytest.raises(AttributeError):
        built.time_s = 1.0  # type: ignore[misc]
    with pytest.raises(AttributeError):
        Candidate.of("ring", "LL", 1.0).time_s = 2.0  # type: ignore[misc]


def test_assemble_refuses_missing_or_unknown_fields():
    missing = _values()
    del missing["extra"]
    with pytest.raises(TypeError, match="extra"):
        assemble(CollectiveResult, missing)
    with pytest.raises(TypeError, match="speed"):
        assemble(Candidate, {"algorithm": "ring", "protocol": "LL", "speed": 1.0})


def test_formula_result_has_every_field():
    r = formula_collective("all_reduce", 2**30, preset("h100-ib-2node"))
    assert set(vars(r)) == {f.name for f in fields(CollectiveResult)}
    assert all(set(vars(c)) == {f.name for f in fields(Candidate)} for c in r.candidates)

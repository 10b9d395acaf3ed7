"""Spraying as built (EVs hashed onto paths), REPS recycling and per-flow ECMP on a permutation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aifabric.engines.flowsim import simulate_transfers
from aifabric.errors import ConfigError
from aifabric.transport.scenarios import sprayed_permutation
from aifabric.transport.spraying import ev_weights

IDEAL = 8e6 / 50e9  # 8 MB per host at 400 Gb/s on a non-blocking fabric


def _run(mode: str) -> tuple[float, float]:
    """(slowest completion / ideal, mean per-flow throughput / line rate) on 8 leaves x 8 hosts x 8 spines."""
    sc = sprayed_permutation(8, 8, 8, 8e6, spraying=mode, entropies=256, seed=0)
    res = simulate_transfers(sc.bytes_per_flow, sc.incidence(), sc.capacity_bytes_per_s)
    end = sc.message_end_s(res.transfer_end_s)
    return float(end.max() / IDEAL), float(np.mean(IDEAL / end))


def test_spraying_vs_ecmp_on_a_permutation() -> None:
    ecmp_t, ecmp_g = _run("ecmp")
    ev_t, ev_g = _run("ev")
    reps_t, reps_g = _run("reps")
    even_t, even_g = _run("even")
    # The exact split is the ideal; EVs hashed onto 8 paths are uneven (measured 1.11x); REPS recycling
    # moves EVs off overloaded paths (1.05x); per-flow ECMP collides (4.0x: four flows on one uplink).
    assert even_t == pytest.approx(1.0, abs=1e-6)
    assert 1.0 < reps_t < ev_t < 1.25
    assert ecmp_t == pytest.approx(4.0, rel=1e-6)
    # Mean per-flow throughput, ECMP 0.53 of line rate: the reference's max-min figure for 16x16 and
    # 32x32 leaf-spines is 0.51-0.53 (fabric-models.md Sec. 1.1 [own calc]).
    assert ecmp_g == pytest.approx(0.52, abs=0.03)
    # Packet-level simulation (htsim) of a FatTree permutation in Raiciu et al., "Improving Datacenter
    # Performance and Robustness with Multipath TCP", SIGCOMM 2011, Sec. 1: single-path ECMP leaves "total
    # network utilization below 50 %" where multipath transport gets "close to full utilization": a
    # throughput ratio of about 2. Spraying vs ECMP here: same side, within 20 % of 2.
    for g in (ev_g, reps_g, even_g):
        assert g / ecmp_g == pytest.approx(2.0, rel=0.2)
    assert ecmp_t / ev_t > 1  # completion times: spraying on the same (faster) side


@given(st.integers(1, 64), st.integers(1, 4096), st.integers(0, 5))
def test_ev_weights_are_a_split_in_ev_quanta(paths: int, evs: int, seed: int) -> None:
    w = ev_weights(3, paths, evs, seed)
    assert np.allclose(w.sum(axis=1), 1.0)
    assert np.allclose(w * evs, np.round(w * evs))


def test_more_entropies_even_out_the_split() -> None:
    # balls into bins: the heaviest path's excess over 1/n shrinks like sqrt(n / m) (Raab & Steger 1998)
    few = ev_weights(200, 16, 16, seed=1).max(axis=1).mean()
    many = ev_weights(200, 16, 4096, seed=1).max(axis=1).mean()
    assert few > 2 / 16
    assert many < 1.15 / 16


def test_bad_input_is_refused() -> None:
    with pytest.raises(ConfigError, match="spraying"):
        sprayed_permutation(2, 2, 2, 1e6, spraying="random")
    with pytest.raises(ConfigError, match="entropies"):
        ev_weights(1, 4, 0)

"""The fluid model's speed-up (finished flows and the links only they crossed are dropped from the step's
arrays) does not change its results: every transport, with and without compaction, on traffic whose flows
finish at very different times (a permutation next to a long incast, a victim scenario)."""

from __future__ import annotations

import numpy as np
import pytest

from aifabric import budget
from aifabric.errors import ConfigError
from aifabric.transport import fluidnet
from aifabric.transport.fluidnet import TRANSPORTS, FluidConfig, FluidResult, simulate_fluid
from aifabric.transport.params import dcqcn_preset
from aifabric.transport.scenarios import sprayed_permutation, victim

C400 = 50e9  # 400 Gb/s, bytes/s


def _mixed() -> tuple[list[tuple[int, ...]], np.ndarray, np.ndarray, int]:
    """A sprayed permutation (64 hosts, 256 kB each) plus a 16-to-1 incast of 1 MB on the same fabric:
    the permutation ends long before the incast. Returns paths, sizes, capacities and the incast port."""
    leaves = 8
    sc = sprayed_permutation(leaves, leaves, leaves, 256e3, C400, seed=1)
    hosts = leaves * leaves
    l_up, s_down = 2 * hosts, 2 * hosts + leaves * leaves
    receiver = hosts - 1
    paths = list(sc.paths)
    sizes = list(sc.bytes_per_flow)
    for src in range(16):
        leaf_s, leaf_d, spine = src // leaves, receiver // leaves, src % leaves
        paths.append(
            (src, l_up + leaf_s * leaves + spine, s_down + leaf_d * leaves + spine, hosts + receiver)
        )
        sizes.append(1e6)
    return paths, np.array(sizes), sc.capacity_bytes_per_s, hosts + receiver


def _run(monkeypatch: pytest.MonkeyPatch, compact: bool, *args: object, **kwargs: object) -> FluidResult:
    with monkeypatch.context() as m:
        if not compact:
            m.setattr(fluidnet, "_COMPACT_SHARE", 2.0)  # never
        return simulate_fluid(*args, **kwargs)  # type: ignore[arg-type]


def _same(a: FluidResult, b: FluidResult) -> None:
    """Equal up to the bytes a finished flow may leave behind (it is done once it delivered all but 1e-9
    of its size; compaction drops that residue: here < 1e-2 B per link)."""
    assert a.steps == b.steps
    np.testing.assert_allclose(a.flow_end_s, b.flow_end_s, rtol=1e-12)
    np.testing.assert_allclose(a.link_pause_s, b.link_pause_s, rtol=1e-12, atol=0.0)
    for name in (
        "trimmed_bytes",
        "link_peak_queue_bytes",
        "link_mean_queue_bytes",
        "link_peak_ingress_bytes",
    ):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-9, atol=1e-2, err_msg=name)
    assert a.victims.tolist() == b.victims.tolist()
    assert a.congested_links.tolist() == b.congested_links.tolist()


@pytest.mark.parametrize("name", sorted(TRANSPORTS))
def test_compaction_changes_nothing_on_a_permutation_next_to_an_incast(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    paths, sizes, caps, port = _mixed()
    cfg = FluidConfig(max_time_s=0.01, trace_link=port)
    fast = _run(monkeypatch, True, paths, sizes, caps, name, config=cfg)
    slow = _run(monkeypatch, False, paths, sizes, caps, name, config=cfg)
    # the permutation is done within the first quarter of the run: the compaction did happen
    assert np.nanmedian(fast.flow_end_s[: len(paths) - 16]) < 0.25 * fast.makespan_s
    _same(fast, slow)
    assert fast.trace is not None and slow.trace is not None
    np.testing.assert_allclose(fast.trace.queue_bytes, slow.trace.queue_bytes, rtol=1e-9, atol=1e-2)
    assert fast.trace.paused.tolist() == slow.trace.paused.tolist()


@pytest.mark.parametrize("name", ["roce-pfc", "uet-lossy", "ib"])
def test_compaction_changes_nothing_on_the_victim_scenario(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    sc = victim(8, 8, 2e6, C400)
    sizes = sc.bytes_per_flow.copy()
    sizes[: len(sizes) // 2] /= 8  # half the incast ends early
    args = (list(sc.paths), sizes, sc.capacity_bytes_per_s, name)
    _same(_run(monkeypatch, True, *args), _run(monkeypatch, False, *args))


def test_a_fluid_run_too_big_for_the_memory_limit_is_refused_with_its_estimate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    paths, sizes, caps, _ = _mixed()
    need = fluidnet.fluid_bytes(
        len(paths), sum(len(p) for p in paths), caps.size, FluidConfig(), dcqcn_preset("conext16")
    )
    # by hand: 8 B x (24 x entries + (40 + 3 x 24 ack steps + 2 x 8 DCQCN steps) x flows + 30 x links):
    # base RTT 12 us and feedback delay 4 us (conext16) in steps of 0.5 us; two RTTs of delivered bytes
    # (acknowledgements) and one of NACKs
    entries, flows = sum(len(p) for p in paths), len(paths)
    assert need == 8 * (24 * entries + (40 + 3 * 24 + 2 * 8) * flows + 30 * caps.size)
    monkeypatch.setenv(budget.ENV_VAR, "64KiB")
    budget.set_memory_limit(None)
    try:
        with pytest.raises(ConfigError, match=r"^paths: the fluid model of 528 flows .* needs about"):
            simulate_fluid(paths, sizes, caps, "roce-pfc")
    finally:
        budget.set_memory_limit(None)

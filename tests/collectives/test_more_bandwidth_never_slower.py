"""More bandwidth is never slower (issue 8, item 2 and fix8a item 3), at every size from 1 KiB.

NCCL's tuner caps LL on the whole call (tuning.cc ``busBw = min(llMaxBw, nChannels x bw x f)``), and at run
time a channel's LL rate is the channel's own (its threads, the protocol), not ``llMaxBw`` shared by however
many channels the communicator has: fewer channels, fewer NICs or slower NICs never give a channel more.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aifabric.cluster.presets import preset
from aifabric.collectives.communicator import Communicator
from aifabric.engines.formula import formula_collective

KIB = 2**10
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv")
#: 1 KiB to 1 MiB (the latency- and channel-bound sizes), and a few large ones.
SIZES = st.one_of(st.integers(10, 20).map(lambda k: 2**k), st.sampled_from([64 * 2**20, 2**30]))
#: InfiniBand NICs by line rate: 100, 200, 400, 800 Gb/s (catalog/data/nics.yaml).
NICS = ("connectx-5", "connectx-6", "connectx-7", "connectx-8")


def _time(
    collective: str, size: int, nodes: int, env: dict[str, str] | None = None, **changes: object
) -> float:
    spec = preset("h100-ib-2node", nodes=nodes, **changes)
    # send_recv: GPU 0 to the last GPU (on the last node: across the network on more than one)
    comm = Communicator.from_gpus(spec, [0, spec.n_gpus - 1]) if collective == "send_recv" else None
    return formula_collective(collective, size, spec, comm, env=env).time_s


def test_issue_figures_all_gather_64k_by_channels_and_nics():
    # all_gather, 2 x 8 H100, 64 KiB: ring/LL128 on 16 channels at NCCL's defaults, 44.77 us (base 8.4 us +
    # 15 hops of latency, the rest on 1 channel: floor(64 KiB / unit) channels at perChMaxRingLL128Bw). Before
    # the fix NCCL_MAX_NCHANNELS=4 and one NIC per node gave 29.6 us (ring/LL at llMaxBw / 4 per channel: 4x
    # a default channel's 39 / 16 GB/s). Now a channel of LL carries llMaxBw / 16 = 39 / 16 = 2.44 GB/s
    # whatever the communicator's channels (16: NCCL's search for an H100 with a NIC per GPU, _ll_channels),
    # so fewer channels or NICs can only be slower.
    default = _time("all_gather", 64 * KIB, 2)
    assert default == pytest.approx(44.77e-6, rel=1e-3)
    for c in (2, 4, 8):
        assert _time("all_gather", 64 * KIB, 2, {"NCCL_MAX_NCHANNELS": str(c)}) >= default
    for k in (2, 4, 8):
        assert _time("all_gather", 64 * KIB, 2, **{"scale_out.gpus_per_nic": k}) >= default


@settings(derandomize=True, max_examples=40, deadline=None)
@given(st.sampled_from(COLLECTIVES), SIZES, st.sampled_from([2, 4]), st.sampled_from([1, 2, 4]))
def test_more_nics_never_slower(collective, size, nodes, gpus_per_nic):
    # Halving the GPUs per NIC doubles a node's NICs: every byte's path only gains bandwidth.
    fewer = _time(collective, size, nodes, **{"scale_out.gpus_per_nic": 2 * gpus_per_nic})
    more = _time(collective, size, nodes, **{"scale_out.gpus_per_nic": gpus_per_nic})
    assert more <= fewer * (1 + 1e-9)


@settings(derandomize=True, max_examples=40, deadline=None)
@given(st.sampled_from(COLLECTIVES), SIZES, st.sampled_from([1, 2, 4]), st.sampled_from([1, 2, 4, 8]))
def test_more_channels_allowed_never_slower(collective, size, nodes, max_channels):
    # NCCL_MAX_NCHANNELS=c vs 2c: the call may use more channels, each no slower.
    few = _time(collective, size, nodes, {"NCCL_MAX_NCHANNELS": str(max_channels)})
    many = _time(collective, size, nodes, {"NCCL_MAX_NCHANNELS": str(2 * max_channels)})
    assert many <= few * (1 + 1e-9)


@settings(derandomize=True, max_examples=40, deadline=None)
@given(st.sampled_from(COLLECTIVES), SIZES, st.sampled_from([2, 4]), st.integers(0, len(NICS) - 2))
def test_faster_nics_never_slower(collective, size, nodes, i):
    slow = _time(collective, size, nodes, **{"scale_out.nic": NICS[i]})
    fast = _time(collective, size, nodes, **{"scale_out.nic": NICS[i + 1]})
    assert fast <= slow * (1 + 1e-9)

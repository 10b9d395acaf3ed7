"""Small fabrics and traffic that show what transports do: incast, a victim flow, a sprayed permutation.

Each builder returns a :class:`Scenario`: links (capacity per direction, a label each) and flows (an
ordered path of link ids, bytes, start time), ready for :func:`aifabric.transport.fluidnet.simulate_fluid`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from aifabric.errors import ConfigError
from aifabric.transport.fluidnet import FluidConfig, FluidResult, simulate_fluid
from aifabric.transport.spraying import SPRAYING, ecmp_weights, ev_weights, even_weights, reps_weights

__all__ = ["SCENARIOS", "Scenario", "incast", "run_scenario", "sprayed_permutation", "victim"]


@dataclass(frozen=True)
class Scenario:
    """Links and flows of a scenario.

    Attributes
    ----------
    name : str
    capacity_bytes_per_s : ndarray, shape (n_links,)
    link_labels : tuple of str
    paths : tuple of tuple of int
        Links each flow crosses, sender's NIC link first.
    bytes_per_flow : ndarray, shape (n_flows,)
    flow_labels : tuple of str
    message : ndarray of int, shape (n_flows,)
        The message (transfer) each flow belongs to; sprayed messages have one flow per path.
    watch_link : int
        The link whose queue tells the story (the incast port).
    """

    name: str
    capacity_bytes_per_s: np.ndarray
    link_labels: tuple[str, ...]
    paths: tuple[tuple[int, ...], ...]
    bytes_per_flow: np.ndarray
    flow_labels: tuple[str, ...]
    message: np.ndarray
    watch_link: int

    def message_end_s(self, result: FluidResult | np.ndarray) -> np.ndarray:
        """When each message's last flow ended, s (from a result or an array of flow end times)."""
        ends = result.flow_end_s if isinstance(result, FluidResult) else np.asarray(result)
        out = np.full(int(self.message.max()) + 1, -np.inf)
        np.maximum.at(out, self.message, ends)
        return out

    def incidence(self) -> sparse.csc_matrix:
        """Link x flow matrix (1 where a flow crosses a link), for the max-min flow engine."""
        rows = np.concatenate([np.asarray(p, dtype=np.int64) for p in self.paths])
        cols = np.repeat(np.arange(len(self.paths)), [len(p) for p in self.paths])
        shape = (self.capacity_bytes_per_s.size, len(self.paths))
        return sparse.csc_matrix((np.ones(rows.size), (rows, cols)), shape=shape)


def _check(n: int, name: str, low: int = 1) -> int:
    if isinstance(n, bool) or int(n) != n or n < low:
        raise ConfigError(f"{name} must be an integer >= {low}, got {n!r}")
    return int(n)


def _check_rate_size(rate: float, size: float) -> None:
    if not (rate > 0 and np.isfinite(rate)):
        raise ConfigError(f"rate_bytes_per_s must be a finite number > 0, got {rate!r}")
    if not (size > 0 and np.isfinite(size)):
        raise ConfigError(f"bytes_per_flow must be a finite number > 0, got {size!r}")


def incast(n_senders: int, bytes_per_flow: float, rate_bytes_per_s: float = 50e9) -> Scenario:
    """``n_senders`` hosts on one switch each send ``bytes_per_flow`` to one receiver port.

    Links 0..n-1: sender NICs to the switch; link n: switch to the receiver (the incast port).
    """
    n = _check(n_senders, "n_senders")
    _check_rate_size(rate_bytes_per_s, bytes_per_flow)
    labels = tuple(f"host{i}->switch" for i in range(n)) + ("switch->receiver",)
    return Scenario(
        "incast",
        np.full(n + 1, float(rate_bytes_per_s)),
        labels,
        tuple((i, n) for i in range(n)),
        np.full(n, float(bytes_per_flow)),
        tuple(f"host{i}->receiver" for i in range(n)),
        np.arange(n),
        n,
    )


def victim(
    senders_far: int, senders_near: int, bytes_per_flow: float, rate_bytes_per_s: float = 50e9
) -> Scenario:
    """An incast that crosses a leaf-to-leaf trunk, and a victim flow that shares only the trunk.

    Leaf A holds ``senders_far`` incast senders and the victim's sender; leaf B holds ``senders_near``
    incast senders, the incast receiver R and the victim's receiver W. The trunk A->B has the capacity of
    all of A's hosts (non-blocking), so without flow control the victim never shares a full link: only the
    port B->R is congested. The last flow is the victim (sender on A -> W on B).

    Links: A's hosts up (``senders_far + 1``), B's senders up (``senders_near``), trunk A->B, B->R, B->W.
    """
    far = _check(senders_far, "senders_far")
    near = _check(senders_near, "senders_near", low=0)
    _check_rate_size(rate_bytes_per_s, bytes_per_flow)
    c = float(rate_bytes_per_s)
    trunk = far + 1 + near
    to_r, to_w = trunk + 1, trunk + 2
    caps = np.full(trunk + 3, c)
    caps[trunk] = (far + 1) * c
    labels = (
        tuple(f"A{i}->leafA" for i in range(far + 1))
        + tuple(f"B{i}->leafB" for i in range(near))
        + ("leafA->leafB", "leafB->R", "leafB->W")
    )
    paths = (
        tuple((i, trunk, to_r) for i in range(far))
        + tuple((far + 1 + j, to_r) for j in range(near))
        + ((far, trunk, to_w),)
    )
    flows = (
        tuple(f"A{i}->R" for i in range(far))
        + tuple(f"B{j}->R" for j in range(near))
        + (f"A{far}->W (victim)",)
    )
    n = far + near + 1
    return Scenario(
        "victim", caps, labels, paths, np.full(n, float(bytes_per_flow)), flows, np.arange(n), to_r
    )


def _cross_leaf_permutation(hosts: int, per: int, rng: np.random.Generator) -> np.ndarray:
    """A uniform random permutation, repaired by swaps until no host sends within its own leaf."""
    dst = rng.permutation(hosts)
    leaf = np.arange(hosts) // per
    while (bad := np.flatnonzero(dst // per == leaf)).size:
        i = int(bad[0])
        ok = np.flatnonzero((dst // per != leaf[i]) & (leaf != dst[i] // per))
        j = int(rng.choice(ok))
        dst[i], dst[j] = dst[j], dst[i]
    return dst


def sprayed_permutation(
    leaves: int,
    hosts_per_leaf: int,
    spines: int,
    bytes_per_flow: float,
    rate_bytes_per_s: float = 50e9,
    *,
    spraying: str = "even",
    entropies: int = 256,
    seed: int = 0,
) -> Scenario:
    """A random permutation between hosts on different leaves of a non-blocking leaf-spine.

    Every host sends ``bytes_per_flow`` to one host on another leaf (a seeded derangement across leaves),
    split over the spines by ``spraying`` (:mod:`aifabric.transport.spraying`): ``ecmp`` (one hashed
    spine), ``ev`` (``entropies`` EVs hashed onto the spines), ``reps`` (the same EVs after REPS
    recycling) or ``even`` (the exact split). Links: host -> leaf, leaf -> host, leaf -> spine and
    spine -> leaf (``hosts_per_leaf x rate / spines`` each: non-blocking). One flow per (message, spine
    with bytes); ``message`` is the sending host.

    Raises
    ------
    ConfigError
        A count below its minimum, a non-positive size or rate, or an unknown ``spraying``.
    """
    n_leaf = _check(leaves, "leaves", low=2)
    per = _check(hosts_per_leaf, "hosts_per_leaf")
    n_spine = _check(spines, "spines")
    _check_rate_size(rate_bytes_per_s, bytes_per_flow)
    if spraying not in SPRAYING:
        raise ConfigError(f"spraying: unknown {spraying!r}; known: {', '.join(SPRAYING)}")
    hosts = n_leaf * per
    dst = _cross_leaf_permutation(hosts, per, np.random.default_rng(seed))
    c = float(rate_bytes_per_s)
    up_c = per * c / n_spine
    h_up, h_down = 0, hosts
    l_up = 2 * hosts
    s_down = l_up + n_leaf * n_spine
    caps = np.concatenate([np.full(2 * hosts, c), np.full(2 * n_leaf * n_spine, up_c)])
    src_leaf, dst_leaf = np.arange(hosts) // per, dst // per

    def path_load(w: np.ndarray) -> np.ndarray:
        up = np.zeros((n_leaf, n_spine))
        down = np.zeros((n_leaf, n_spine))
        np.add.at(up, src_leaf, w * c)
        np.add.at(down, dst_leaf, w * c)
        return np.maximum(up[src_leaf], down[dst_leaf]) / up_c

    weights = {
        "ecmp": lambda: ecmp_weights(hosts, n_spine, seed),
        "ev": lambda: ev_weights(hosts, n_spine, entropies, seed),
        "reps": lambda: reps_weights(hosts, n_spine, entropies, path_load, seed=seed),
        "even": lambda: even_weights(hosts, n_spine),
    }[spraying]()
    labels = (
        tuple(f"host{i}->leaf" for i in range(hosts))
        + tuple(f"leaf->host{i}" for i in range(hosts))
        + tuple(f"leaf{i}->spine{s}" for i in range(n_leaf) for s in range(n_spine))
        + tuple(f"spine{s}->leaf{i}" for i in range(n_leaf) for s in range(n_spine))
    )
    paths, flows, message, sizes = [], [], [], []
    for src in range(hosts):
        d = int(dst[src])
        for s in np.flatnonzero(weights[src] > 0).tolist():
            paths.append(
                (h_up + src, l_up + (src // per) * n_spine + s, s_down + (d // per) * n_spine + s, h_down + d)
            )
            flows.append(f"host{src}->host{d} via spine{s}")
            message.append(src)
            sizes.append(float(bytes_per_flow) * weights[src, s])
    return Scenario(
        f"permutation/{spraying}",
        caps,
        labels,
        tuple(paths),
        np.array(sizes),
        tuple(flows),
        np.array(message),
        l_up,
    )


SCENARIOS = ("incast", "victim", "permutation")


def run_scenario(scenario: Scenario, transport_name: str, config: FluidConfig | None = None) -> FluidResult:
    """:func:`simulate_fluid` of a scenario's flows under a transport."""
    return simulate_fluid(
        scenario.paths, scenario.bytes_per_flow, scenario.capacity_bytes_per_s, transport_name, config=config
    )

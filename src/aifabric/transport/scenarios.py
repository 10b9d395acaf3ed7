"""Small fabrics and traffic that show what transports do: incast, a victim flow, a sprayed permutation.

Each builder returns a :class:`Scenario`: links (capacity per direction, a label each) and flows (an
ordered path of link ids, bytes, start time), ready for :func:`aifabric.transport.fluidnet.simulate_fluid`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from aifabric.errors import ConfigError
from aifabric.transport.fluidnet import FluidConfig, FluidResult, simulate_fluid
from aifabric.transport.spraying import SPRAYING, ecmp_weights, ev_weights, even_weights, reps_weights

__all__ = [
    "SCENARIOS",
    "Scenario",
    "all_to_all",
    "chained_ring",
    "checkpoint_burst",
    "elephants_and_mice",
    "incast",
    "run_scenario",
    "sprayed_permutation",
    "victim",
]


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
    start_s : ndarray or None, shape (n_flows,)
        When each flow starts (None: all at 0).
    after : ndarray of int or None, shape (n_flows,)
        Chained steps: the flow each waits for (-1: none), see
        :func:`~aifabric.transport.fluidnet.simulate_fluid`.
    """

    name: str
    capacity_bytes_per_s: np.ndarray
    link_labels: tuple[str, ...]
    paths: tuple[tuple[int, ...], ...]
    bytes_per_flow: np.ndarray
    flow_labels: tuple[str, ...]
    message: np.ndarray
    watch_link: int
    start_s: np.ndarray | None = None
    after: np.ndarray | None = None

    def message_end_s(self, result: FluidResult | np.ndarray) -> np.ndarray:
        """When each message's last flow ended, s (from a result or an array of flow end times)."""
        ends = result.flow_end_s if isinstance(result, FluidResult) else np.asarray(result)
        out = np.full(int(self.message.max()) + 1, -np.inf)
        np.maximum.at(out, self.message, ends)
        return out

    def message_ideal_s(self) -> np.ndarray:
        """Each message's contention-free time alone, s, shape (n_messages,).

        ``max over links l of B(m, l) / C(l)``: the bytes ``B(m, l)`` message ``m`` puts through link ``l``
        at that link's capacity ``C(l)``. A message sprayed over ``k`` spine paths crosses its sender's NIC
        with all its bytes, so its ideal is ``bytes / NIC rate``, never ``bytes / (k x NIC rate)``.
        """
        n_msg = int(self.message.max()) + 1
        flows = np.repeat(np.arange(len(self.paths)), [len(p) for p in self.paths])
        links = np.concatenate([np.asarray(p, dtype=np.int64) for p in self.paths])
        on_link = sparse.coo_matrix(
            (self.bytes_per_flow[flows], (self.message[flows], links)),
            shape=(n_msg, self.capacity_bytes_per_s.size),
        ).tocsr()  # duplicates summed: B(m, l)
        return np.asarray(on_link.multiply(1.0 / self.capacity_bytes_per_s).max(axis=1).todense()).ravel()

    def message_slowdown(self, result: FluidResult) -> np.ndarray:
        """Each message's completion (last flow's end - first flow's start) over :meth:`message_ideal_s`."""
        first = np.full(int(self.message.max()) + 1, np.inf)
        np.minimum.at(first, self.message, result.flow_start_s)
        return (self.message_end_s(result) - first) / self.message_ideal_s()

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


def _one_flow_each(
    name: str,
    capacity_bytes_per_s: np.ndarray,
    link_labels: tuple[str, ...],
    paths: tuple[tuple[int, ...], ...],
    bytes_per_flow: np.ndarray,
    flow_labels: tuple[str, ...],
    watch_link: int,
    *,
    start_s: np.ndarray | None = None,
    after: np.ndarray | None = None,
) -> Scenario:
    """A :class:`Scenario` whose every message is one flow (flow i is message i); arguments as its
    attributes."""
    return Scenario(
        name,
        capacity_bytes_per_s,
        link_labels,
        paths,
        bytes_per_flow,
        flow_labels,
        np.arange(len(paths)),
        watch_link,
        start_s=start_s,
        after=after,
    )


def _chained_steps(hosts: int, steps: int, first: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every host's ``steps`` steps numbered from ``first``, host by host: (sending host, step number, the
    flow each step waits for: the same host's previous step, -1 for the first), shape (hosts x steps,)."""
    src = np.repeat(np.arange(hosts), steps)
    step = np.tile(np.arange(first, first + steps), hosts)
    return src, step, np.where(step > first, np.arange(src.size) - 1, -1)


def incast(n_senders: int, bytes_per_flow: float, rate_bytes_per_s: float = 50e9) -> Scenario:
    """``n_senders`` hosts on one switch each send ``bytes_per_flow`` to one receiver port.

    Links 0..n-1: sender NICs to the switch; link n: switch to the receiver (the incast port).
    """
    n = _check(n_senders, "n_senders")
    _check_rate_size(rate_bytes_per_s, bytes_per_flow)
    labels = tuple(f"host{i}->switch" for i in range(n)) + ("switch->receiver",)
    return _one_flow_each(
        "incast",
        np.full(n + 1, float(rate_bytes_per_s)),
        labels,
        tuple((i, n) for i in range(n)),
        np.full(n, float(bytes_per_flow)),
        tuple(f"host{i}->receiver" for i in range(n)),
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
    return _one_flow_each(
        "victim", caps, labels, paths, np.full(len(paths), float(bytes_per_flow)), flows, to_r
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
    fabric = _LeafSpine(n_leaf, per, n_spine, float(rate_bytes_per_s))
    dst = _cross_leaf_permutation(fabric.hosts, per, np.random.default_rng(seed))
    weights = {
        "ecmp": lambda: ecmp_weights(fabric.hosts, n_spine, seed),
        "ev": lambda: ev_weights(fabric.hosts, n_spine, entropies, seed),
        "reps": lambda: reps_weights(fabric.hosts, n_spine, entropies, fabric.spine_load(dst), seed=seed),
        "even": lambda: even_weights(fabric.hosts, n_spine),
    }[spraying]()
    paths, flows, message, sizes = [], [], [], []
    for src in range(fabric.hosts):
        d = int(dst[src])
        for s in np.flatnonzero(weights[src] > 0).tolist():
            paths.append(fabric.path(src, d, s))
            flows.append(f"host{src}->host{d} via spine{s}")
            message.append(src)
            sizes.append(float(bytes_per_flow) * weights[src, s])
    caps, labels = fabric.links()
    return Scenario(
        f"permutation/{spraying}",
        caps,
        labels,
        tuple(paths),
        np.array(sizes),
        tuple(flows),
        np.array(message),
        fabric.first_uplink,
    )


@dataclass(frozen=True)
class _LeafSpine:
    """A non-blocking leaf-spine: ``n_leaf`` leaves of ``per`` hosts, NICs of ``rate`` bytes/s per
    direction, ``n_spine`` spines. Links, in this order: host -> leaf, leaf -> host (``rate``), then
    leaf -> spine and spine -> leaf (:attr:`up_c` each), leaf-major."""

    n_leaf: int
    per: int
    n_spine: int
    rate: float

    @property
    def hosts(self) -> int:
        """Hosts on the fabric."""
        return self.n_leaf * self.per

    @property
    def up_c(self) -> float:
        """Capacity of one leaf -> spine or spine -> leaf link, bytes/s: ``per x rate / n_spine``."""
        return self.per * self.rate / self.n_spine

    @property
    def first_uplink(self) -> int:
        """Link id of leaf 0 -> spine 0."""
        return 2 * self.hosts

    def links(self) -> tuple[np.ndarray, tuple[str, ...]]:
        """Capacity (bytes/s per direction) and label of every link."""
        hosts, n_leaf, n_spine = self.hosts, self.n_leaf, self.n_spine
        caps = np.concatenate([np.full(2 * hosts, self.rate), np.full(2 * n_leaf * n_spine, self.up_c)])
        labels = (
            tuple(f"host{i}->leaf" for i in range(hosts))
            + tuple(f"leaf->host{i}" for i in range(hosts))
            + tuple(f"leaf{i}->spine{s}" for i in range(n_leaf) for s in range(n_spine))
            + tuple(f"spine{s}->leaf{i}" for i in range(n_leaf) for s in range(n_spine))
        )
        return caps, labels

    def path(self, src: int, dst: int, spine: int) -> tuple[int, int, int, int]:
        """Link ids from host ``src`` up through ``spine`` and down to host ``dst``."""
        l_up, per, n_spine = self.first_uplink, self.per, self.n_spine
        s_down = l_up + self.n_leaf * n_spine
        return (
            src,
            l_up + (src // per) * n_spine + spine,
            s_down + (dst // per) * n_spine + spine,
            self.hosts + dst,
        )

    def spine_load(self, dst: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """REPS's load of each host's path through each spine, for host i sending to ``dst[i]``: from
        weights (hosts, n_spine), the busier of the path's uplink and downlink as a share of ``up_c``, with
        every host sending at ``rate``."""
        src_leaf, dst_leaf = np.arange(self.hosts) // self.per, dst // self.per

        def path_load(w: np.ndarray) -> np.ndarray:
            up = np.zeros((self.n_leaf, self.n_spine))
            down = np.zeros((self.n_leaf, self.n_spine))
            np.add.at(up, src_leaf, w * self.rate)
            np.add.at(down, dst_leaf, w * self.rate)
            return np.maximum(up[src_leaf], down[dst_leaf]) / self.up_c

        return path_load


def _star(hosts: int, rate: float) -> tuple[np.ndarray, tuple[str, ...]]:
    """One switch and ``hosts`` hosts: link i is host i -> switch, link hosts + i is switch -> host i."""
    labels = tuple(f"host{i}->switch" for i in range(hosts)) + tuple(f"switch->host{i}" for i in range(hosts))
    return np.full(2 * hosts, float(rate)), labels


def all_to_all(
    hosts: int,
    bytes_per_peer: float,
    rate_bytes_per_s: float = 50e9,
    *,
    skew: float = 1.0,
    serial: bool = False,
) -> Scenario:
    """MoE expert-parallel all-to-all on one non-blocking switch: every host sends to every other.

    Host ``i`` sends ``bytes_per_peer`` to each peer, ``skew`` times that to host 0 (a hot expert: the
    routed tokens are not uniform; ``skew = 1`` is uniform). ``serial`` sends peer by peer, step k to
    host ``(i + k) mod n``, each step waiting for the previous one's acknowledgement (``after``); every
    step is then a permutation (no receiver has two senders). Otherwise every flow starts at 0. Flow
    ``i (n - 1) + k - 1`` is host i's step k. The watched link is the hot receiver's (switch -> host0).

    Raises
    ------
    ConfigError
        ``hosts`` < 2, a non-positive size or rate, ``skew`` < 1.
    """
    n = _check(hosts, "hosts", low=2)
    _check_rate_size(rate_bytes_per_s, bytes_per_peer)
    if not (skew >= 1 and np.isfinite(skew)):
        raise ConfigError(f"skew must be a finite number >= 1, got {skew!r}")
    caps, labels = _star(n, rate_bytes_per_s)
    src, step, chain = _chained_steps(n, n - 1, 1)
    dst = (src + step) % n
    sizes = np.where(dst == 0, skew, 1.0) * float(bytes_per_peer)
    kind = "serial" if serial else "at-once"
    return _one_flow_each(
        f"all-to-all/{kind}" + (f"/skew{skew:g}" if skew != 1 else ""),
        caps,
        labels,
        tuple((int(a), n + int(b)) for a, b in zip(src, dst, strict=True)),
        sizes,
        tuple(f"host{a}->host{b}" for a, b in zip(src, dst, strict=True)),
        n,
        after=chain if serial else None,
    )


def elephants_and_mice(
    elephants: int,
    elephant_bytes: float,
    mice: int,
    mouse_bytes: float,
    rate_bytes_per_s: float = 50e9,
) -> Scenario:
    """Collective-sized elephants into one host, and mice to the same host spread over their run.

    Hosts 0..E-1 each send ``elephant_bytes`` to the receiver (the last host) from t = 0; hosts E..E+M-1
    each send one mouse of ``mouse_bytes``, mouse j starting at ``(j + 1) / (M + 1)`` of the elephants'
    contention-free run ``E x elephant_bytes / rate``. The first E flows are the elephants, the rest the
    mice; the mice's flow completion time over their ideal (``FluidResult.slowdown``) is what the queue
    the elephants build costs them. Watched link: switch -> receiver.

    Notes
    -----
    The fluid FIFO shares a port in proportion to the bytes each flow has queued there, so a mouse's last
    bytes drain with time constant ``queue / C`` rather than leaving after the bytes ahead of them: the
    mice's fluid slowdown is exaggerated in proportion to the queue (an upper bound). Their FIFO
    completion, the sojourn behind the queue they meet plus ``size / rate``, is
    ``FluidResult.fifo_fct_s`` (the CLI reports both).

    Raises
    ------
    ConfigError
        A count below 1, a non-positive size or rate.
    """
    e = _check(elephants, "elephants")
    m = _check(mice, "mice")
    _check_rate_size(rate_bytes_per_s, elephant_bytes)
    _check_rate_size(rate_bytes_per_s, mouse_bytes)
    n = e + m + 1
    caps, labels = _star(n, rate_bytes_per_s)
    rx = n + n - 1
    run = e * float(elephant_bytes) / float(rate_bytes_per_s)
    starts = np.concatenate([np.zeros(e), (np.arange(m) + 1) / (m + 1) * run])
    return _one_flow_each(
        "elephants-and-mice",
        caps,
        labels,
        tuple((i, rx) for i in range(e + m)),
        np.concatenate([np.full(e, float(elephant_bytes)), np.full(m, float(mouse_bytes))]),
        tuple(f"elephant{i}" for i in range(e)) + tuple(f"mouse{j}" for j in range(m)),
        rx,
        start_s=starts,
    )


def checkpoint_burst(
    nodes: int,
    bytes_per_node: float,
    storage_targets: int,
    nic_bytes_per_s: float = 50e9,
    target_bytes_per_s: float = 50e9,
) -> Scenario:
    """Every node writes its checkpoint shard at once over the front-end: an incast onto the storage ports.

    Node ``i`` writes ``bytes_per_node`` to target ``i mod storage_targets`` (the storage issue's sharding:
    :func:`aifabric.storage.checkpoint.checkpoint_size` gives the bytes each writer holds). Links: node
    NICs up, then the switch -> target ports (``target_bytes_per_s`` each). On a lossless fabric the burst
    takes ``max over targets of (writers x bytes / target rate)`` against the NICs' ``bytes / nic rate``.
    Watched link: the first target's port.

    Raises
    ------
    ConfigError
        A count below 1, a non-positive size or rate.
    """
    n = _check(nodes, "nodes")
    t = _check(storage_targets, "storage_targets")
    _check_rate_size(nic_bytes_per_s, bytes_per_node)
    _check_rate_size(target_bytes_per_s, bytes_per_node)
    caps = np.concatenate([np.full(n, float(nic_bytes_per_s)), np.full(t, float(target_bytes_per_s))])
    labels = tuple(f"node{i}->frontend" for i in range(n)) + tuple(f"frontend->storage{j}" for j in range(t))
    return _one_flow_each(
        "checkpoint-burst",
        caps,
        labels,
        tuple((i, n + i % t) for i in range(n)),
        np.full(n, float(bytes_per_node)),
        tuple(f"node{i}->storage{i % t}" for i in range(n)),
        n,
    )


def chained_ring(hosts: int, steps: int, bytes_per_step: float, rate_bytes_per_s: float = 50e9) -> Scenario:
    """A ring collective run step by step: host i sends to host i+1 ``steps`` times, each step after the ACK
    of its previous one (a ring all-reduce is ``2 (n - 1)`` steps of ``size / n``).

    Flow ``i x steps + k`` is host i's step k. Every step is a permutation on one switch, so each takes
    ``bytes / rate`` plus the acknowledgement's round trip before the next (``after``).

    Raises
    ------
    ConfigError
        ``hosts`` < 2, ``steps`` < 1, a non-positive size or rate.
    """
    n = _check(hosts, "hosts", low=2)
    k = _check(steps, "steps")
    _check_rate_size(rate_bytes_per_s, bytes_per_step)
    caps, labels = _star(n, rate_bytes_per_s)
    src, step, after = _chained_steps(n, k, 0)
    return _one_flow_each(
        "chained-ring",
        caps,
        labels,
        tuple((int(a), n + (int(a) + 1) % n) for a in src),
        np.full(src.size, float(bytes_per_step)),
        tuple(f"host{a} step{b}" for a, b in zip(src, step, strict=True)),
        n + 1,
        after=after,
    )


SCENARIOS = ("incast", "victim", "permutation", "all-to-all", "mice", "checkpoint", "ring", "meta")


def run_scenario(
    scenario: Scenario,
    transport_name: str,
    config: FluidConfig | None = None,
    *,
    progress: Callable[[float], None] | None = None,
) -> FluidResult:
    """:func:`simulate_fluid` of a scenario's flows (and start times, chained steps) under a transport."""
    return simulate_fluid(
        scenario.paths,
        scenario.bytes_per_flow,
        scenario.capacity_bytes_per_s,
        transport_name,
        start_s=scenario.start_s,
        after=scenario.after,
        config=config,
        progress=progress,
    )

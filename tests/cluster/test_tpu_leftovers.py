"""TPU leftovers of issue 8: sourced ICI link rates, twisted tori, one default slice for API and CLI, and
one-line refusals (a TPU file without scale_out, the links/flow engines on a torus)."""

import collections
import itertools
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from aifabric import catalog
from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.tpu_slice import TpuSlice
from aifabric.cluster.twisted import twist_ok, twisted_distances
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.torus import slice_all_to_all_s, slice_diameter
from aifabric.engines.fabric import fabric_collective
from aifabric.engines.formula import formula_collective
from aifabric.errors import ConfigError

runner = CliRunner()
PRESETS = Path(__file__).resolve().parents[2] / "src" / "aifabric" / "cluster" / "presets"
US = 1e-6  # one ICI hop (catalogue hop_latency)


def _collective(*args: str):
    return runner.invoke(app, ["collective", *args])


def _refused(r, *needles: str) -> str:
    assert r.exit_code == 2, r.output
    line = r.stderr.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in r.output
    for needle in needles:
        assert needle in line
    return line


# --- 1. ICI link rates -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("link", "per_link", "per_chip_bidir", "links"),
    [
        # JAX scaling book tpus.md "ICI BW/link (one-way, bytes/s)" (corrected 2025-02-08, commit 7e97132);
        # per-chip figures: Cloud TPU v5p / v5e / v6e docs (bidirectional, per chip).
        ("tpu-v5p-ici", 9e10, 1200e9, 6),
        ("tpu-v5e-ici", 4.5e10, 400e9, 4),
        ("tpu-v6e-ici", 9e10, 800e9, 4),
        # v4: the book's 4.5e10 one way; no Google per-chip figure: 6 links x 9e10 bidirectional = 540e9.
        ("tpu-v4-ici", 4.5e10, 540e9, 6),
    ],
)
def test_ici_link_rates_are_the_scaling_books_one_way_figures(link, per_link, per_chip_bidir, links):
    s = catalog.scaleup(link)
    assert s.nccl_effective_per_link_bytes_per_s == per_link
    assert s.per_gpu_bidirectional_bytes_per_s == per_chip_bidir
    assert s.links_per_gpu == links
    # The book's rate is at most the vendor figure split over the links and directions (v5p: 100e9 on the
    # wire, 9e10 carried: 0.9); never above it (no double counting of directions).
    wire = per_chip_bidir / 2 / links
    assert per_link <= wire * (1 + 1e-12)


def test_v6e_send_recv_runs_at_one_books_link():
    # One 9e10 B/s link (book, v6e) and one 1 us hop: 1e9 / 9e10 + 1e-6 s.
    spec = preset("tpu-v5e-pod").with_changes(accelerator="tpu-v6e", **{"scale_up.link": "tpu-v6e-ici"})
    r = formula_collective("send_recv", 1e9, spec, Communicator.contiguous(spec, 2))
    assert r.time_s == pytest.approx(1e9 / 9e10 + US)


# --- 2. twisted tori ---------------------------------------------------------------------------------


def _twisted_graph(dims):
    """The twisted torus of sorted ``dims`` written out edge by edge (a second, independent construction):
    a wrap of a short axis (k) moves +-k along every long axis (2k). Edges carry their (axis, sign) class."""
    k = dims[0]
    adj = {}
    for p in itertools.product(*(range(d) for d in dims)):
        out = []
        for axis, step in itertools.product(range(3), (1, -1)):
            q = list(p)
            q[axis] += step
            if q[axis] in (-1, dims[axis]):
                q[axis] %= dims[axis]
                if dims[axis] == k:
                    q = [(q[o] + step * k) % dims[o] if dims[o] == 2 * k else q[o] for o in range(3)]
            out.append((tuple(q), (axis, step)))
        adj[p] = out
    return adj


def _class_loads(adj):
    """Per directed-link class, the traffic one source's uniform all-to-all puts on it, split evenly over
    every shortest path (path counting, Brandes-style accumulation)."""
    src = (0, 0, 0)
    dist, paths, order = {src: 0}, {src: 1}, [src]
    queue = collections.deque([src])
    while queue:
        u = queue.popleft()
        for v, _ in adj[u]:
            if v not in dist:
                dist[v], paths[v] = dist[u] + 1, 0
                queue.append(v)
                order.append(v)
            if dist[v] == dist[u] + 1:
                paths[v] += paths[u]
    load = collections.Counter()
    dep = dict.fromkeys(order, 0.0)  # sum over destinations t of (shortest paths through v)/(paths to t)
    for v in reversed(order):
        for u, _ in adj[v]:  # undirected: u -> v is on a shortest path iff dist[u] == dist[v] - 1
            if dist[u] == dist[v] - 1:
                back = next(c for w, c in adj[u] if w == v)
                share = paths[u] / paths[v] * (1 + dep[v])
                load[back] += share
                dep[u] += share
    return load


@pytest.mark.parametrize(
    ("dims", "mean_hops", "diameter"), [((4, 4, 8), 55 / 16, 6), ((4, 8, 8), 69 / 16, 6)]
)
def test_twisted_torus_loads_every_link_alike(dims, mean_hops, diameter):
    # Camara et al. (IEEE TPDS 2010): twisted mixed-radix tori are edge-symmetric, so a uniform all-to-all
    # loads all 6 directed link classes alike, each with mean_hops / 6 of the traffic per chip. Checked on
    # an independent edge-by-edge construction with shortest paths split evenly.
    loads = _class_loads(_twisted_graph(dims))
    n = dims[0] * dims[1] * dims[2]
    assert len(loads) == 6
    assert all(v / n == pytest.approx(mean_hops / 6) for v in loads.values())
    assert twisted_distances(dims) == (diameter, pytest.approx(mean_hops))


def test_twisted_all_to_all_against_the_plain_torus():
    # 4x4x8 plain: the long axis binds, m(8)/2 = 1 S / b; twisted: 55/96 S / b (mean 55/16 hops over 6
    # links): 96/55 = 1.745x faster. 4x8x8: 1 S / b against 69/96 S / b: 1.391x. Both below 2x: the plain
    # 4x4x8's narrowest cut (across its long axis) is 4 x 4 x 2 = 32 links; in the twisted one that cut
    # also crosses the 64 twisted wraps, and a cut across a short axis holds 32 + 32 = 64 links.
    for dims, twisted_share in (((4, 4, 8), 55 / 96), ((4, 8, 8), 69 / 96)):
        plain, twisted = (TpuSlice(dims, (True,) * 3, t) for t in (False, True))
        assert slice_all_to_all_s(1.0, plain, 1.0) == pytest.approx(1.0)
        assert slice_all_to_all_s(1.0, twisted, 1.0) == pytest.approx(twisted_share)
        assert 1 < 1 / twisted_share < 2
    assert [slice_diameter(TpuSlice((4, 4, 8), (True,) * 3, t)) for t in (False, True)] == [8, 6]


def test_cli_twisted_v5p_4x4x8_all_to_all():
    # v5p, b = 9e10 B/s: 55/96 x 1e9 / 9e10 + 6 hops x 1 us = 6365.7 + 6 us; plain: 1e9 / 9e10 + 8 us.
    plain = _collective("all_to_all", "-c", "tpu-v5p-pod", "--slice", "4x4x8", "-s", "1GB", "--json")
    twisted = _collective(
        "all_to_all", "-c", "tpu-v5p-pod", "--slice", "4x4x8", "--twisted", "-s", "1GB", "--json"
    )
    p, t = json.loads(plain.stdout)[0], json.loads(twisted.stdout)[0]
    assert p["time_s"] == pytest.approx(1e9 / 9e10 + 8 * US)
    assert t["time_s"] == pytest.approx(55 / 96 * 1e9 / 9e10 + 6 * US)
    assert (p["slice_twisted"], t["slice_twisted"]) == (False, True)


def test_twisted_all_reduce_keeps_its_bandwidth_and_shortens_its_latency():
    # All links are busy twisted or not: 2 x 127/128 x 1e9 / (6 x 9e10); latency 2 phases x diameter
    # (6 twisted, 8 plain) x 1 us.
    spec = preset("tpu-v5p-pod").with_changes(**{"scale_up.slice": [4, 4, 8]})
    bw = 2 * 127 / 128 * 1e9 / 540e9
    plain = formula_collective("all_reduce", 1e9, spec)
    twisted = formula_collective("all_reduce", 1e9, spec.with_changes(**{"scale_up.twisted": True}))
    assert plain.time_s == pytest.approx(bw + 16 * US)
    assert twisted.time_s == pytest.approx(bw + 12 * US)
    assert "twisted torus" in twisted.explanation


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["-c", "tpu-v5p-pod", "--slice", "4x4x4", "--twisted"], ["--twisted: ", "4x4x4", "2A=B=C"]),
        (["-c", "tpu-v5e-pod", "--twisted"], ["--twisted: ", "tpu-v5e", "never twisted"]),
        (["-c", "h100-ib-2node", "--twisted"], ["--twisted", "no TPU torus"]),
    ],
)
def test_twist_refused_where_the_shape_or_chip_has_none(args, needles):
    _refused(_collective("all_to_all", *args, "-s", "1MB"), *needles)


def test_twisted_yaml_with_a_shape_that_does_not_twist_is_refused(tmp_path):
    d = yaml.safe_load((PRESETS / "tpu-v5p-pod.yaml").read_text())
    d["scale_up"] = {**d["scale_up"], "slice": [4, 4, 4], "twisted": True}
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump(d))
    _refused(_collective("all_reduce", "-c", str(f), "-s", "1MB"), "scale_up.twisted", "4x4x4")
    d["scale_up"]["slice"] = [8, 4, 4]  # 4x4x8 in another order twists: runs, and says so
    f.write_text(yaml.safe_dump(d))
    r = _collective("all_to_all", "-c", str(f), "-s", "1GB", "--json")
    assert json.loads(r.stdout)[0]["slice_twisted"] is True


@given(st.tuples(*[st.sampled_from([2, 4, 8, 12, 16, 24, 32])] * 3))
def test_twistable_shapes_are_exactly_the_docs_rule(dims):
    a, b, c = sorted(dims)
    assert twist_ok(dims) == (a % 4 == 0 and (2 * a == b == c or 2 * a == 2 * b == c))


# --- 3. one default slice for the API and the CLI -----------------------------------------------------


@pytest.mark.parametrize("op", ["all_reduce", "all_to_all", "broadcast", "send_recv"])
def test_api_and_cli_run_the_same_default_slice(op):
    # The v5p pod (8,960 chips) is more than one slice: both run on 16x16x24 (6,144 chips; Cloud TPU v5p
    # docs), send_recv on two neighbouring chips. The CLI times all_to_all at whole bytes per peer, as
    # nccl-tests rounds its count (alltoall.cu AlltoAllGetCollByteCount): 1e9 // 6144 x 6144 = 999,997,440 B;
    # the API is given the size the CLI timed.
    cli = json.loads(_collective(op, "-c", "tpu-v5p-pod", "-s", "1GB", "--json").stdout)[0]
    assert cli["message_bytes"] == (999_997_440 if op == "all_to_all" else 1e9)
    api = formula_collective(op, cli["message_bytes"], preset("tpu-v5p-pod"))
    assert api.n_ranks == cli["n_ranks"] == (2 if op == "send_recv" else 6144)
    assert api.time_s == pytest.approx(cli["time_s"])


def test_api_refuses_the_whole_v5p_pod_as_one_slice():
    spec = preset("tpu-v5p-pod")
    with pytest.raises(ConfigError, match=r"ranks: 8960 chips .* largest holds 6144 chips \(16x16x24\)"):
        formula_collective("all_reduce", 1e9, spec, Communicator.contiguous(spec))


# --- 4. a TPU cluster file without scale_out ----------------------------------------------------------


@pytest.mark.parametrize("chips", [(8960, 8960), (128, 64)])
def test_tpu_file_without_scale_out_names_scale_out(tmp_path, chips):
    total, pod = chips
    f = tmp_path / "tpu.yaml"
    f.write_text(
        yaml.safe_dump(
            {
                "accelerator": "tpu-v5p",
                "gpus_per_node": 4,
                "gpus": total,
                "scale_up": {"kind": "torus", "gpus": pod},
            }
        )
    )
    line = _refused(_collective("all_reduce", "-c", str(f), "-s", "1GB"), "scale_out:", "scale_out: null")
    assert "tiers: 3" not in line
    with pytest.raises(ValueError, match="scale_out: missing on a TPU torus"):
        ClusterSpec.from_dict(yaml.safe_load(f.read_text()))


# --- 5. the links and flow engines on a torus ---------------------------------------------------------


@pytest.mark.parametrize("engine", ["links", "flow"])
def test_links_and_flow_refuse_a_torus_naming_the_engine_and_the_formula(engine):
    line = _refused(
        _collective("all_reduce", "-c", "tpu-v5e-pod", "--engine", engine, "-s", "1MB"),
        f"--engine {engine}",
        "use --engine formula",
    )
    assert line.startswith("error: --engine:")
    spec = preset("tpu-v5e-pod")
    with pytest.raises(ConfigError, match=f"engine: .*--engine {engine} asked.*--engine formula"):
        fabric_collective("all_reduce", 1e6, spec, Communicator.contiguous(spec, 16), engine=engine)

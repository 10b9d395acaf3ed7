"""GEMM time by shape: a measured throughput table, and the matrix products of a transformer layer.

A GPU multiplies a large square matrix near its measured peak, but a training step multiplies the shapes
its model has: (tokens x h) by (h x 3h/t) and so on. Small and skinny products fall far short of the peak:
each output tile pays a fixed prologue and epilogue (loading the first K-blocks, writing C) that a short
K loop cannot hide, and a grid of few tiles leaves SMs idle in its last wave (tile and wave quantisation,
NVIDIA's *Matrix Multiplication Background User's Guide*). Rather than model cuBLAS's kernel choice, this
module reads a table of MEASURED throughput by (b, m, n, k) and interpolates between the shapes it lists:

- :class:`GemmTable` holds one GPU's table (``presets/gemm_*.csv``, each with its source: H100 and B200)
  and returns the throughput of any (m, n, k) by multilinear interpolation in log2 of the sizes, clamped
  to the grid;
- :func:`layer_gemms` lists the forward matrix products of one transformer layer on one GPU (Megatron-LM
  tensor parallelism), and :func:`backward_gemms` their data- and weight-gradient products;
- :func:`userbuffer_gemms` splits them as Transformer Engine does when it overlaps the sequence-parallel
  collectives with them (Megatron-LM ``--tp-comm-overlap``): smaller products, each slower;
- :func:`pass_flops_per_s` turns a list of products into one throughput: total FLOPs / total time.

References
----------
.. [1] NVIDIA, "Matrix Multiplication Background User's Guide", Deep Learning Performance documentation,
   https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/ (tile and wave
   quantisation).
.. [2] OpenXLA ``xla/service/gpu/model/matmul_interpolator_data.h`` @8b757a8 (the H100 table;
   XLA's own cost model interpolates it the same way, ``matmul_interpolator.cc``) and @71feedd (the B200
   table, entry "sm_100").
.. [3] NVIDIA dgxc-benchmarking ``llama3.1/llama3.1_70b.yaml`` @8f5cbb3, ``ub_tp_comm_overlap_cfg`` (the
   userbuffers methods of NeMo's DGX H100 recipes; Transformer Engine ``module/base.py`` ``initialize_ub``
   has the same methods by default).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import NamedTuple

import numpy as np
from scipy.interpolate import RegularGridInterpolator

from aifabric.errors import ConfigError
from aifabric.training.models import ModelSpec

__all__ = [
    "Gemm",
    "GemmTable",
    "backward_gemms",
    "gemm_table",
    "layer_gemms",
    "pass_flops_per_s",
    "userbuffer_gemms",
]

#: Chunks of a product whose output Transformer Engine reduce-scatters while it computes (``method:
#: pipeline``, ``num_splits: 4`` for proj_fprop and fc2_fprop, reference [3]).
UB_PIPELINE_SPLITS = 4


class Gemm(NamedTuple):
    """``repeat`` products of an (m x k) by a (k x n) matrix: 2 m n k FLOPs each."""

    m: float
    n: float
    k: float
    repeat: float = 1.0

    @property
    def flops(self) -> float:
        """2 m n k x repeat."""
        return 2.0 * self.m * self.n * self.k * self.repeat


@dataclass(frozen=True, eq=False)
class GemmTable:
    """Measured dense GEMM throughput of one GPU on a grid of shapes.

    Parameters
    ----------
    name : str
        File name of the table.
    source : str
        Where the measurements come from.
    batches : tuple of int
        The b values of the grid (batched products), ascending.
    sizes : tuple of int
        The m, n and k values of the grid (one axis for all three), ascending.
    flops_per_s : numpy.ndarray
        Shape (len(batches), len(sizes), len(sizes), len(sizes)): FLOP/s measured at (b, m, n, k).

    Notes
    -----
    A product of M rows and N columns beyond the grid's largest size s is looked up as
    b = max(1, M / s) x max(1, N / s) batched products of at most s x s outputs: the same FLOPs and the same
    output tiles, hence the same waves over the SMs (cuBLAS tiles rows and columns alike), b clamped to the
    grid; k and small M, N are clamped to the grid: shapes beyond it get the nearest edge's throughput (an
    upper bound below the smallest size, a slight underestimate above the largest). Folding N matters on
    Blackwell, where a 4096-cube is still wave-quantised (B200: 1417 TFLOP/s at b = 1, 1670 at b = 4); on
    the H100 the edge is flat (786-810).

    :attr:`best_flops_per_s`, the grid's largest throughput, is the table's counterpart of a
    max-over-shapes measurement: the step model reads the table relative to it
    (:meth:`aifabric.training.step.StepModel.gemm_rates`).
    """

    name: str
    source: str
    batches: tuple[int, ...]
    sizes: tuple[int, ...]
    flops_per_s: np.ndarray = field(repr=False)
    _interp: RegularGridInterpolator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        axes = (np.log2(self.batches), *(np.log2(self.sizes),) * 3)
        grid = RegularGridInterpolator(axes, self.flops_per_s, method="linear")
        object.__setattr__(self, "_interp", grid)

    @classmethod
    def from_csv(cls, text: str, *, name: str) -> GemmTable:
        """Read ``b,m,n,k,tflops`` rows (``#`` lines: the source) covering a full grid.

        Raises
        ------
        ConfigError
            If a row is malformed or the rows do not cover every (b, m, n, k) of the grid once.
        """
        source = " ".join(
            line.lstrip("# ").strip() for line in text.splitlines() if line.startswith("#")
        ).strip()
        body = "\n".join(line for line in text.splitlines() if line and not line.startswith("#"))
        rows: dict[tuple[int, int, int, int], float] = {}
        try:
            for row in csv.DictReader(io.StringIO(body)):
                key = (int(row["b"]), int(row["m"]), int(row["n"]), int(row["k"]))
                rows[key] = float(row["tflops"]) * 1e12
        except (KeyError, TypeError, ValueError) as err:
            raise ConfigError(f"{name}: rows must be b,m,n,k,tflops numbers ({err})") from err
        batches = sorted({k[0] for k in rows})
        sizes = sorted({k[i] for k in rows for i in (1, 2, 3)})
        table = np.zeros((len(batches), len(sizes), len(sizes), len(sizes)))
        for i, b in enumerate(batches):
            for j, m in enumerate(sizes):
                for u, n in enumerate(sizes):
                    for v, k in enumerate(sizes):
                        value = rows.get((b, m, n, k))
                        if value is None or value <= 0:
                            raise ConfigError(f"{name}: no positive throughput for b={b} m={m} n={n} k={k}")
                        table[i, j, u, v] = value
        return cls(name=name, source=source, batches=tuple(batches), sizes=tuple(sizes), flops_per_s=table)

    def gemm_flops_per_s(self, m: float, n: float, k: float) -> float:
        """Throughput (FLOP/s) of one (m x k) by (k x n) product, interpolated in log2 of the sizes.

        >>> t = gemm_table("gemm_h100_sm90.csv")
        >>> round(t.gemm_flops_per_s(4096, 4096, 4096) / 1e12, 1)  # a listed shape: the measurement
        786.0
        """
        return self._lookup(float(m), float(n), float(k))

    @property
    def best_flops_per_s(self) -> float:
        """The largest throughput on the grid (FLOP/s): the best shape the table measured.

        >>> round(gemm_table("gemm_b200_sm100.csv").best_flops_per_s / 1e12, 1)  # b = 4, 4096-cube
        1670.5
        """
        return float(self.flops_per_s.max())

    @cache  # noqa: B019 - tables are module-level singletons (gemm_table), never freed
    def _lookup(self, m: float, n: float, k: float) -> float:
        lo, hi = self.sizes[0], self.sizes[-1]
        b = max(1.0, m / hi) * max(1.0, n / hi)  # output tiles beyond the grid: batched products
        b = min(max(b, self.batches[0]), self.batches[-1])
        point = [math.log2(b), *(math.log2(min(max(x, lo), hi)) for x in (m, n, k))]
        return float(self._interp(point)[0])


@cache
def gemm_table(name: str) -> GemmTable:
    """The table ``training/presets/<name>``, read once.

    Raises
    ------
    ConfigError
        If there is no such file.
    """
    path = resources.files("aifabric.training").joinpath(f"presets/{name}")
    if not path.is_file():
        raise ConfigError(f"gemm_table: no file training/presets/{name}")
    return GemmTable.from_csv(path.read_text(), name=name)


def layer_gemms(
    model: ModelSpec, tokens: float, tp: int, *, moe: bool = False, ep: int = 1, etp: int | None = None
) -> list[Gemm]:
    """The forward matrix products of one transformer layer on one GPU of a TP group.

    Megatron-LM's tensor parallelism splits the QKV and MLP-up columns and the output-projection and
    MLP-down rows over t GPUs; with sequence parallelism the tokens are gathered first, so every product
    has M = tokens rows (b s / c):

    - QKV: (T x h) by (h x (q + 2 kv) / t); output projection: (T x q / t) by (q / t x h);
    - MLP: (T x h) by (h x w f / t), w = 2 for a gated MLP, 1 else; then (T x f / t) by (f / t x h);
    - MoE (``moe``): each of the n_experts / ep local experts gets T top_k ep etp / (t n_experts) tokens
      (uniform routing: the etp x ep ranks of an expert group dispatch T / t tokens each, sequence-parallel,
      and an expert's etp ranks gather them) through the same two products of width f_e / etp; shared
      experts see all T tokens at width f_e / t. With etp = t (the default) that is T top_k ep / n_experts.

    The attention core (scores and the product with V) is not a weight GEMM and is left out; so are the
    router and biases.

    Parameters
    ----------
    model : ModelSpec
    tokens : float
        T, tokens of one microbatch on the GPU (b s / c).
    tp, ep : int
        Tensor- and expert-parallel degrees.
    etp : int, optional
        The experts' tensor-parallel degree; default tp.
    moe : bool
        An MoE layer (routed and shared experts) instead of a dense MLP.

    Returns
    -------
    list of Gemm
    """
    h, t = model.hidden_size, tp
    q, kv = model.n_heads * model.head_size, model.kv_heads * model.head_size
    w = 2 if model.gated_mlp else 1
    out = [Gemm(tokens, (q + 2 * kv) / t, h), Gemm(tokens, h, q / t)]
    if not moe:
        f = model.ffn_size
        return [*out, Gemm(tokens, w * f / t, h), Gemm(tokens, h, f / t)]
    fe = model.expert_ffn_size
    et = t if etp is None else etp
    local = model.n_experts / ep
    per_expert = tokens * model.top_k * ep * et / (t * model.n_experts)
    out += [Gemm(per_expert, w * fe / et, h, local), Gemm(per_expert, h, fe / et, local)]
    if model.n_shared_experts:
        s = model.n_shared_experts
        out += [Gemm(tokens, w * fe / t, h, s), Gemm(tokens, h, fe / t, s)]
    return out


def backward_gemms(forward: Iterable[Gemm]) -> list[Gemm]:
    """The backward products of forward products Y = X W, (m x k) by (k x n): the data gradient
    dX = dY W^T, (m x n) by (n x k), and the weight gradient dW = X^T dY, (k x m) by (m x n); each the
    forward's FLOPs, so the backward costs twice the forward."""
    out = []
    for g in forward:
        out += [Gemm(g.m, g.k, g.n, g.repeat), Gemm(g.k, g.n, g.m, g.repeat)]
    return out


def userbuffer_gemms(forward: Sequence[Gemm], tp: int, n_split: int) -> tuple[list[Gemm], list[Gemm]]:
    """Forward and backward products of a layer as Transformer Engine's userbuffers run them beside the
    sequence-parallel collectives (Megatron-LM ``--tp-comm-overlap``, reference [3]).

    The first ``n_split`` of ``forward`` alternate column-parallel (all-gather before: QKV, MLP up) and
    row-parallel (reduce-scatter after: projection, MLP down) products, as :func:`layer_gemms` lists them
    (4 in a dense layer; 2 in an MoE layer, whose experts are not userbuffer modules):

    - a column-parallel product and the data gradient of a row-parallel one (``ring_exchange``): each of
      the t ring steps multiplies the T / t rows just received, t products of T / t rows;
    - a row-parallel product (``pipeline``, ``num_splits`` = :data:`UB_PIPELINE_SPLITS`): 4 products of
      T / 4 rows, each chunk's reduce-scatter beside the next chunk;
    - the other backward products (``bulk``: the whole product beside the whole collective) keep their
      shape.

    The FLOPs are those of :func:`layer_gemms` and :func:`backward_gemms`; only the shapes change, and
    smaller products run slower on the measured table (:func:`pass_flops_per_s`).

    >>> from aifabric.training.models import get_model
    >>> fwd = layer_gemms(get_model("gpt3-175b"), 2048, 4)
    >>> split_fwd, _ = userbuffer_gemms(fwd, 4, 4)
    >>> [(g.m, g.repeat) for g in split_fwd]
    [(512.0, 4.0), (512.0, 4.0), (512.0, 4.0), (512.0, 4.0)]
    """
    fwd, bwd = list(forward), backward_gemms(forward)
    for i in range(min(n_split, len(fwd))):
        parts = tp if i % 2 == 0 else UB_PIPELINE_SPLITS
        fwd[i] = _chunked(fwd[i], parts)
        if i % 2 == 1:  # the data gradient of a row-parallel product: all-gather of dY before it
            bwd[2 * i] = _chunked(bwd[2 * i], tp)
    return fwd, bwd


def _chunked(g: Gemm, parts: int) -> Gemm:
    """``g`` as ``parts`` products of m / parts rows each: the same FLOPs."""
    return Gemm(g.m / parts, g.n, g.k, g.repeat * parts)


def pass_flops_per_s(table: GemmTable, gemms: Sequence[Gemm]) -> float:
    """Throughput of a sequence of products run one after another: sum of FLOPs / sum of times,

        X = sum_i F_i / sum_i (F_i / X_i),   X_i = table throughput of product i

    (the FLOP-weighted harmonic mean of the products' throughputs).

    Raises
    ------
    ValueError
        If ``gemms`` is empty or has no FLOPs.

    Examples
    --------
    A GPT-3 175B layer on one GPU of TP 8 with 2,048 tokens runs slower than a 4096-cube, which is listed
    at 786 TFLOP/s:

    >>> from aifabric.training.models import get_model
    >>> fwd = layer_gemms(get_model("gpt3-175b"), 2048, 8)
    >>> x = pass_flops_per_s(gemm_table("gemm_h100_sm90.csv"), fwd)
    >>> 600e12 < x < 786e12
    True
    """
    flops = sum(g.flops for g in gemms)
    if not flops > 0:
        raise ValueError(f"no FLOPs in {list(gemms)!r}")
    return flops / sum(g.flops / table.gemm_flops_per_s(g.m, g.n, g.k) for g in gemms)

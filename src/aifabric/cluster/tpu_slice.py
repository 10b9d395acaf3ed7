"""TPU slices: the sub-torus shapes a pod is cut into, and which of their axes wrap around.

A TPU job runs on a slice, not a whole pod: a box of chips (``4x4x8`` on v5p, ``8x16`` on v5e) whose axes
are rings (wraparound, a torus axis) or lines (no wraparound, a mesh axis). The shapes Google allows and
the wraparound rules are catalogue data (:class:`aifabric.catalog.loader.SliceRules`, sources there):

- v4, v5p, Ironwood: the sub-cube shapes ``2x2x1``, ``2x2x2``, ``2x2x4``, ``2x4x4`` (mesh on every axis),
  or whole ``4x4x4`` cubes (every axis a multiple of 4, up to the largest slice), a torus on every axis:
  the optical circuit switches close the rings of whole cubes only;
- v5e, v6e: 2D shapes ``1x1`` to ``16x16``; an axis wraps only at the full 16 chips (``8x16``: the long
  axis is a ring, the short one a line).

Given only a chip count, the shape is the most cube-like allowed one (Cloud TPU docs, "TPU types and
topologies": the default topology of a chip count is the most cube-like).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from aifabric.catalog.loader import SliceRules
from aifabric.cluster.twisted import TWIST_RULE, twist_ok
from aifabric.errors import ConfigError

if TYPE_CHECKING:
    from aifabric.cluster.spec import ClusterSpec

__all__ = [
    "PAIR",
    "TpuSlice",
    "allowed_shapes",
    "default_run",
    "default_slice",
    "check_torus_options",
    "cut_to_slice",
    "job_slice",
    "refuse_nccl_options",
    "chip_axes",
    "domain_slice",
    "domain_torus_dims",
    "largest_slice",
    "parse_slice",
    "resolve_slice",
    "single_pod",
    "slice_of",
    "spec_slice",
    "sub_box",
    "twist_slice",
    "with_slice",
    "with_twist",
]

#: Largest axis a cube-built slice may have (xpk's generator stops at 256 chips per axis).
_MAX_AXIS = 256


@dataclass(frozen=True)
class TpuSlice:
    """A slice: chips per axis (``dims``, as the user or Google writes them), wraparound per axis, and
    whether its wraparound links are twisted (:mod:`aifabric.cluster.twisted`)."""

    dims: tuple[int, ...]
    wrap: tuple[bool, ...]
    twisted: bool = False

    @property
    def chips(self) -> int:
        """Chips in the slice: the product of ``dims``."""
        return math.prod(self.dims)

    @property
    def label(self) -> str:
        """``4x4x8``."""
        return "x".join(map(str, self.dims))

    @property
    def axes(self) -> tuple[tuple[int, bool], ...]:
        """``(chips, wraps)`` of every axis of more than one chip (an axis of one chip has no link)."""
        return tuple((d, w) for d, w in zip(self.dims, self.wrap, strict=True) if d > 1)

    def describe(self) -> str:
        """``4x4x8 (torus 4, torus 4, torus 8)``, ``8x16 (mesh 8, torus 16)``, ``4x4x8 (twisted torus)``."""
        if self.twisted:
            return f"{self.label} (twisted torus)"
        kinds = ", ".join(f"{'torus' if w else 'mesh'} {d}" for d, w in self.axes) or "one chip"
        return f"{self.label} ({kinds})"


#: Two neighbouring chips, one ICI link each way: where send/recv runs (no slice shape, p2p only).
PAIR = TpuSlice((2,), (False,))


def parse_slice(value: str | Sequence[int], field: str = "--slice") -> tuple[int, ...]:
    """``"4x4x8"`` or ``[4, 4, 8]`` as chips per axis; ConfigError naming ``field`` and the value."""
    parts = value.lower().split("x") if isinstance(value, str) else list(value)
    try:
        dims = tuple(int(str(p).strip()) for p in parts)
    except ValueError:
        dims = ()
    if not 2 <= len(dims) <= 3 or min(dims) < 1:
        raise ConfigError(f"{field}: expected chips per axis as AxB or AxBxC (e.g. 4x4x8), got {value!r}")
    return dims


def domain_torus_dims(declared: Sequence[int] | None, chips: int, axes: int = 3) -> tuple[int, ...]:
    """A scale-up domain's torus shape: ``declared`` (``scale_up.torus_dims``), else the most cubic
    (``axes`` = 3) or most square (``axes`` = 2, then a trailing 1) factorisation of its ``chips``."""
    if declared:
        return tuple(int(d) for d in declared)
    best = (1, 1, chips)
    for a in range(1, chips + 1) if axes == 3 else (1,):
        if a**3 > chips:
            break
        if chips % a:
            continue
        for b in range(a, math.isqrt(chips // a) + 1):
            if (chips // a) % b == 0 and max(a, b, chips // a // b) < max(best):
                best = (a, b, chips // a // b)
    return tuple(sorted(best)) if axes == 3 else (best[1], best[2], 1)


def _rank(rules: SliceRules) -> int:
    """Axes of the generation's slices: 3 (v4, v5p, Ironwood) or 2 (v5e, v6e)."""
    return len(rules.shapes[0])


def _fits(shape: tuple[int, ...], pod_dims: tuple[int, ...]) -> bool:
    """The shape's sorted axes each fit the pod's (sorted, largest ``len(shape)`` axes)."""
    pod = sorted(sorted(pod_dims)[-len(shape) :]) if len(pod_dims) >= len(shape) else []
    return len(pod) == len(shape) and all(a <= b for a, b in zip(sorted(shape), pod, strict=True))


@cache
def allowed_shapes(rules: SliceRules, pod_dims: tuple[int, ...]) -> dict[tuple[int, ...], tuple[int, ...]]:
    """Every slice shape of ``rules`` that fits a pod of ``pod_dims``: sorted axes -> the shape as written.

    Listed shapes, and with ``rules.cube`` every ``A <= B <= C`` of multiples of the cube edge up to
    ``rules.max_chips`` chips (AI-Hypercomputer/xpk ``generate_tpu_topologies``).
    """
    out = {tuple(sorted(s)): tuple(s) for s in rules.shapes if math.prod(s) <= rules.max_chips}
    if rules.cube:
        c = rules.cube
        cubes = rules.max_chips // c**3
        top = _MAX_AXIS // c
        for i in range(1, top + 1):
            for j in range(i, top + 1):
                for k in range(j, min(top, cubes // (i * j)) + 1):
                    out[(c * i, c * j, c * k)] = (c * i, c * j, c * k)
    return {k: v for k, v in out.items() if _fits(k, pod_dims)}


def _wraps(rules: SliceRules, dims: tuple[int, ...]) -> tuple[bool, ...]:
    """Wraparound per axis: every axis of a slice of whole cubes; an axis of ``wrap_at`` chips."""
    whole_cubes = rules.cube is not None and all(d % rules.cube == 0 for d in dims)
    return tuple(whole_cubes or (rules.wrap_at is not None and d == rules.wrap_at) for d in dims)


def _shapes_text(rules: SliceRules, shapes: dict[tuple[int, ...], tuple[int, ...]]) -> str:
    listed = ", ".join("x".join(map(str, s)) for s in rules.shapes if tuple(sorted(s)) in shapes)
    if not rules.cube:
        return listed
    return f"{listed}, or whole {rules.cube}x{rules.cube}x{rules.cube} cubes up to {rules.max_chips} chips"


def slice_of(
    rules: SliceRules, dims: Sequence[int], pod_dims: tuple[int, ...], *, what: str, field: str = "--slice"
) -> TpuSlice:
    """The slice ``dims`` of a pod of ``pod_dims``, checked against ``rules`` (``what`` names the chip).

    Raises
    ------
    ConfigError
        Naming ``field``: the wrong number of axes, a shape that does not fit the pod, or one Google does
        not allow (the allowed shapes listed).
    """
    dims = tuple(int(d) for d in dims)
    label = "x".join(map(str, dims))
    if len(dims) != _rank(rules):
        form = "AxBxC" if _rank(rules) == 3 else "AxB"
        raise ConfigError(f"{field}: {what} slices have {_rank(rules)} axes ({form}), got {label}")
    if not _fits(dims, pod_dims):
        pod = "x".join(map(str, pod_dims))
        raise ConfigError(
            f"{field}: {label} does not fit the {pod} torus of one scale-up domain ({math.prod(pod_dims)} "
            "chips); a larger pod is the cluster's scale_up.gpus (chips per torus) and scale_up.torus_dims"
        )
    shapes = allowed_shapes(rules, pod_dims)
    if tuple(sorted(dims)) not in shapes:
        raise ConfigError(f"{field}: {label} is no {what} slice; slices: {_shapes_text(rules, shapes)}")
    return TpuSlice(dims, _wraps(rules, dims))


def default_slice(
    rules: SliceRules, chips: int, pod_dims: tuple[int, ...], *, what: str, field: str = "ranks"
) -> TpuSlice:
    """The most cube-like allowed slice of ``chips`` chips (smallest largest axis, then smallest next).

    Raises ConfigError naming ``field`` and listing the slice sizes when no slice holds ``chips``.
    """
    shapes = allowed_shapes(rules, pod_dims)
    fits = sorted((k for k in shapes if math.prod(k) == chips), key=lambda k: tuple(sorted(k, reverse=True)))
    if not fits:
        sizes = sorted({math.prod(k) for k in shapes})
        shown = ", ".join(map(str, sizes[:12])) + (f", ... {sizes[-1]}" if len(sizes) > 12 else "")
        raise ConfigError(
            f"{field}: {chips} chips make no {what} slice; slices hold {shown} chips "
            f"(shapes: {_shapes_text(rules, shapes)}); give --slice AxB{'xC' * (_rank(rules) == 3)}"
        )
    dims = shapes[fits[0]]
    return TpuSlice(dims, _wraps(rules, dims))


def twist_slice(rules: SliceRules | None, sl: TpuSlice, *, what: str) -> TpuSlice:
    """``sl`` wired as a twisted torus (``scale_up.twisted`` / ``--twisted``).

    Raises
    ------
    ConfigError
        Naming ``scale_up.twisted``: a generation whose slices are never twisted (catalogue
        ``slices.twisted``: v4 and v5p only), or a shape no twisted torus takes (:data:`TWIST_RULE`).
    """
    if rules is None or not rules.twisted:
        raise ConfigError(
            f"scale_up.twisted: {what} slices are never twisted (twisted tori: TPU v4 and v5p); "
            "drop --twisted"
        )
    if not twist_ok(sl.dims):
        raise ConfigError(
            f"scale_up.twisted: the {sl.label} slice cannot be twisted; twisted tori are {TWIST_RULE}"
        )
    return TpuSlice(sl.dims, sl.wrap, twisted=True)


def _pod_axes(rules: SliceRules | None, pod_dims: Sequence[int]) -> tuple[int, ...]:
    """The domain's axes as a slice writes them: a 2-D generation's pod, written AxBx1, has 2 axes."""
    if rules and not any(d > 1 for d in pod_dims[_rank(rules) :]):
        return tuple(pod_dims[: _rank(rules)])
    return tuple(pod_dims)


def _ring_axes(rules: SliceRules | None, pod_dims: Sequence[int]) -> tuple[bool, ...]:
    """Every axis of more than one chip a ring: the whole domain as its file describes it."""
    return tuple(d > 1 for d in _pod_axes(rules, pod_dims))


def domain_slice(rules: SliceRules | None, pod_dims: Sequence[int]) -> TpuSlice | None:
    """The whole domain as the slice of its shape, when the domain is one of the generation's slice shapes
    (a ``2x2x1`` Ironwood host, a ``4x4`` v5e VM); None for any other shape, which runs as the torus its
    file describes.

    Such a domain is that slice cut from a pod and wired as Google wires it: wraparound only on whole
    cubes (v4, v5p, Ironwood) or on an axis of the full 16 chips (v5e, v6e), Cloud TPU v5p docs ("Slices
    smaller than a full cube ... don't have wrap-around links") and the JAX scaling book ch. 2 ("a 4x4
    v5e slice has none"); its chips keep their ``2 x`` :func:`_rank` ICI ports, the unwired ones idle
    (:func:`chip_axes`).

    >>> from aifabric.catalog import scaleup
    >>> domain_slice(scaleup("tpu-ironwood-ici").slices, (2, 2, 1)).describe()
    '2x2x1 (mesh 2, mesh 2)'
    >>> domain_slice(scaleup("tpu-v5e-ici").slices, (16, 16, 1)).describe()
    '16x16 (torus 16, torus 16)'
    """
    if rules is None:
        return None
    dims = _pod_axes(rules, pod_dims)
    if len(dims) != _rank(rules) or tuple(sorted(dims)) not in allowed_shapes(rules, dims):
        return None
    return TpuSlice(dims, _wraps(rules, dims))


def chip_axes(rules: SliceRules | None, pod_dims: Sequence[int], *, declared: bool = False) -> int:
    """Torus axes a chip's ICI bandwidth is spread over, two ports (one link each way) an axis.

    A catalogue TPU part (``rules`` set, ``declared`` False): the generation's axes, whatever shape its
    domain is cut to. The per-link rate is a property of the chip (JAX scaling book ch. 2, "ICI BW/link
    (one-way)" per generation; Cloud TPU system-architecture docs: each chip has 4 (v5e, v6e) or 6 (v4,
    v5p, Ironwood) ICI links, the catalogue's ``links_per_gpu``), so links a shape leaves unwired idle and
    keep no share of the others' bandwidth: an Ironwood ``2x2x1``, ``4x4x1`` or ``8x1x1`` domain runs each
    link at ``B / 6``. A figure the cluster file declares (``scale_up.bandwidth``, ``declared`` True) or a
    torus part without slice rules: the chip's aggregate over the domain's own axes of more than one chip
    (a torus as its file describes it: ``8x1x1`` with 400 GB/s both ways is 2 links of 100 GB/s each way).

    >>> from aifabric.catalog import scaleup
    >>> rules = scaleup("tpu-ironwood-ici").slices
    >>> [chip_axes(rules, d) for d in ((2, 2, 1), (4, 4, 1), (8, 1, 1), (16, 24, 24))]
    [3, 3, 3, 3]
    >>> [chip_axes(rules, d, declared=True) for d in ((2, 2, 1), (8, 1, 1))]
    [2, 1]
    """
    if rules is not None and not declared:
        return _rank(rules)
    return max(1, sum(1 for d in pod_dims if d > 1))


def resolve_slice(
    rules: SliceRules | None,
    chips: int,
    pod_dims: tuple[int, ...],
    given: Sequence[int] | None = None,
    *,
    what: str,
) -> TpuSlice:
    """The slice a communicator of ``chips`` chips runs on, untwisted (:func:`twist_slice` twists it).

    ``given`` (``scale_up.slice`` / ``--slice``) when set, which must hold ``chips``; else, when ``chips``
    fills the domain, the domain as the slice of its shape (:func:`domain_slice`) or, for a shape no slice
    has, its torus (``pod_dims``, every axis a ring: the cluster as its file describes it); else the
    default slice of ``chips`` (:func:`default_slice`).

    Raises
    ------
    ConfigError
        A given slice of another size, a slice asked of a link without slice rules (``rules`` None), the
        whole pod when it is more than the largest slice (v5p: 8,960 chips, a slice at most 6,144: Cloud
        TPU v5p docs), or what :func:`slice_of` and :func:`default_slice` raise.
    """
    if not given and rules is not None and chips == math.prod(pod_dims) > rules.max_chips:
        big = largest_slice(rules, pod_dims, what=what)
        whole = "x".join(map(str, pod_dims))
        raise ConfigError(
            f"ranks: {chips} chips (the whole {whole} pod) make no {what} slice; "
            f"the largest holds {big.chips} chips ({big.label}): give --ranks {big.chips} or fewer"
        )
    if not given and chips == math.prod(pod_dims):
        return domain_slice(rules, pod_dims) or TpuSlice(
            _pod_axes(rules, pod_dims), _ring_axes(rules, pod_dims)
        )
    if not given and chips == 1:
        return TpuSlice((1,), (False,))  # one chip: no link, whatever the generation lists
    if rules is None:
        raise ConfigError(
            f"ranks: {chips} of the {math.prod(pod_dims)} chips of a {what} torus: its scale-up link gives "
            "no slice shapes (catalogue 'slices'); run on the whole domain"
        )
    if not given:
        return default_slice(rules, chips, pod_dims, what=what)
    sl = slice_of(rules, given, pod_dims, what=what, field="scale_up.slice")
    if chips < sl.chips and sl.chips % chips == 0:
        return sub_box(sl, chips)
    if sl.chips != chips:
        raise ConfigError(
            f"ranks: {chips} ranks on the {sl.label} slice of {sl.chips} chips; give --ranks {sl.chips}"
        )
    return sl


def sub_box(sl: TpuSlice, chips: int) -> TpuSlice:
    """The part of ``sl`` that ``chips`` consecutive ranks of a job on it fill: its axes in order, each
    whole (keeping its wraparound) until the last one the ranks reach, of which they hold a line (a ring
    only where they fill a wrapping axis). A job's groups (tensor, data, pipeline) are such boxes: XLA's
    device mesh lays each logical axis along physical torus axes (JAX ``mesh_utils.create_device_mesh``).
    A group whose ranks are strided over the slice is timed as the box of its size, the same link count
    per chip (every axis of a TPU generation runs at one bandwidth).

    Raises ConfigError naming ``ranks`` when ``chips`` ranks do not end on an axis boundary (3 of a 4x4).

    >>> sub_box(TpuSlice((16, 16), (True, True)), 32).describe()
    '16x2 (torus 16, mesh 2)'
    """
    dims: list[int] = []
    wrap: list[bool] = []
    left = chips
    for d, w in zip(sl.dims, sl.wrap, strict=True):
        take = d if left >= d else left
        if left % take or (take < d and d % take):
            raise ConfigError(f"ranks: {chips} ranks fill no box of the {sl.label} slice (axes in order)")
        dims.append(take)
        wrap.append(w and take == d)
        left //= take
    return TpuSlice(tuple(dims), tuple(wrap))


def spec_slice(spec: ClusterSpec, chips: int, *, pair: bool = False) -> TpuSlice | None:
    """The slice ``chips`` ranks of a TPU cluster run on (:func:`resolve_slice` with the cluster's
    ``scale_up.slice``, torus and slice rules); None off a torus or beyond one domain.

    ``pair`` (send/recv): two neighbouring chips joined by one ICI link each way, :data:`PAIR`, for
    point-to-point only; ConfigError naming ``ranks`` for any other count.
    """
    if spec.scale_up.kind != "torus" or chips > spec.domain_gpus:
        return None
    if pair:
        if chips != 2:
            raise ConfigError(
                f"ranks: send_recv on a TPU runs between 2 neighbouring chips (one ICI link each way); "
                f"give --ranks 2 or no --ranks/--slice, got {chips}"
            )
        return PAIR
    rules = spec.scaleup_link.slices
    pod = domain_torus_dims(spec.scale_up.torus_dims, spec.domain_gpus, len(rules.shapes[0]) if rules else 3)
    sl = resolve_slice(rules, chips, pod, spec.scale_up.slice, what=spec.accelerator)
    return twist_slice(rules, sl, what=spec.accelerator) if spec.scale_up.twisted else sl


def largest_slice(rules: SliceRules, pod_dims: tuple[int, ...], *, what: str) -> TpuSlice:
    """The most cube-like of the largest slices of ``rules`` that fit a pod of ``pod_dims``
    (v5p: ``16x16x24``, 6,144 chips, Cloud TPU v5p docs' largest single slice)."""
    most = max(math.prod(k) for k in allowed_shapes(rules, pod_dims))
    return default_slice(rules, most, pod_dims, what=what)


def default_run(spec: ClusterSpec, *, pair: bool = False) -> tuple[ClusterSpec, int | None, str | None]:
    """What a TPU run takes when neither ``--ranks`` nor ``--slice`` is given: ``(spec, ranks, note)``.

    The one place the default slice is decided: the CLI (``aifabric collective``) and the Python API
    (:func:`aifabric.engines.formula.formula_collective` without a communicator) both call it.

    ``pair`` (send/recv): 2 ranks, a neighbouring pair (:data:`PAIR`). ``scale_up.slice`` set: its chips
    (the YAML slice sets the ranks as ``--slice`` does). A pod larger than the generation's largest slice
    (v5p: 8,960 chips, largest slice 6,144): the largest slice, with a note saying so. Otherwise
    ``(spec, None, None)``: the cluster's default communicator.
    """
    rules = spec.scaleup_link.slices if spec.scale_up.kind == "torus" else None
    if rules is None or spec.n_gpus > spec.domain_gpus:
        return spec, None, None
    if pair:
        return spec, PAIR.chips, None
    if spec.scale_up.slice:
        return spec, math.prod(spec.scale_up.slice), None
    pod = domain_torus_dims(spec.scale_up.torus_dims, spec.domain_gpus, _rank(rules))
    if math.prod(pod) <= rules.max_chips:
        return spec, None, None
    big = largest_slice(rules, pod, what=spec.accelerator)
    note = (
        f"the {spec.domain_gpus}-chip pod is more than one {spec.accelerator} slice (at most "
        f"{rules.max_chips} chips): running on the largest slice, {big.label}; --slice or --ranks to choose"
    )
    return spec.with_changes(**{"scale_up.slice": list(big.dims)}), big.chips, note


def with_slice(spec: ClusterSpec, value: str, ranks: int | None) -> tuple[ClusterSpec, int]:
    """``spec`` cut to the slice ``value`` (``--slice 4x4x8``) and the slice's chips, the ranks it runs.

    Raises
    ------
    ConfigError
        Naming ``--slice``: a cluster that is no TPU torus, a malformed or disallowed shape
        (:func:`slice_of`), or ``ranks`` given and not the slice's chips.
    """
    dims = parse_slice(value, "--slice")
    if spec.scale_up.kind != "torus" or spec.scaleup_link.slices is None:
        raise ConfigError(
            f"--slice: {spec.name} is no TPU torus with slice shapes (scale_up.kind {spec.scale_up.kind})"
        )
    rules = spec.scaleup_link.slices
    pod = domain_torus_dims(spec.scale_up.torus_dims, spec.domain_gpus, len(rules.shapes[0]))
    sl = slice_of(rules, dims, pod, what=spec.accelerator)
    if ranks is not None and ranks != sl.chips:
        raise ConfigError(f"--slice: {sl.label} holds {sl.chips} chips but --ranks is {ranks}")
    return spec.with_changes(**{"scale_up.slice": list(dims)}), sl.chips


def single_pod(spec: ClusterSpec) -> bool:
    """Whether ``spec`` is one TPU pod (a single torus domain) whose generation has slice shapes: the
    cluster a job takes a slice of (:func:`job_slice`)."""
    return (
        spec.scale_up.kind == "torus"
        and spec.scaleup_link.slices is not None
        and spec.n_gpus <= spec.domain_gpus
    )


def cut_to_slice(spec: ClusterSpec, sl: TpuSlice) -> ClusterSpec:
    """``spec`` reduced to the one slice ``sl`` a job runs on: a single scale-up domain of the slice's
    chips (``scale_up.gpus``, ``torus_dims``, ``slice``), hosts of at most its chips (a 4-chip v5e slice
    runs on a 4-chip host, Cloud TPU docs' ct5lp-hightpu-4t). The pod's other chips run other jobs.

    Raises ConfigError when the cut cluster does not validate (the message names the field).
    """
    torus = [*sl.dims, *([1] * (3 - len(sl.dims)))]
    return spec.with_changes(
        **{
            "gpus": sl.chips,
            "nodes": None,
            "gpus_per_node": min(spec.gpus_per_node, sl.chips),
            "scale_up.gpus": sl.chips,
            "scale_up.torus_dims": torus,
            "scale_up.slice": list(sl.dims),
        }
    )


def job_slice(spec: ClusterSpec, *, nodes: int | None, value: str | None) -> tuple[ClusterSpec, str | None]:
    """The cluster a training job on a one-pod TPU cluster runs on, and a note when it was not asked for.

    ``value`` (``--slice 4x4x8``): that slice (:func:`slice_of`); ``nodes`` (``--nodes``): the most
    cube-like slice of ``nodes x gpus_per_node`` chips; neither: the pod, or its largest slice when the
    pod is more than one slice can hold (v5p: 8,960 chips, 6,144 at most), with a note saying so.
    ``spec`` returned as it is for a cluster that is no single TPU pod with slice shapes (``--slice``
    then refused).

    Raises ConfigError naming ``--slice`` or ``--nodes`` for a shape or size no slice has.
    """
    rules = spec.scaleup_link.slices if single_pod(spec) else None
    if rules is None:
        if value is not None:
            raise ConfigError(f"--slice: {spec.name} is no single TPU pod with slice shapes")
        return spec, None
    pod = domain_torus_dims(spec.scale_up.torus_dims, spec.domain_gpus, _rank(rules))
    if value is not None:
        sl = slice_of(rules, parse_slice(value), pod, what=spec.accelerator)
        _check_slice_hosts(sl, nodes, spec.gpus_per_node)
    elif nodes is not None:
        chips = nodes * spec.gpus_per_node
        sl = default_slice(rules, chips, pod, what=spec.accelerator, field=f"--nodes {nodes} ({chips} chips)")
    elif math.prod(pod) > rules.max_chips:
        sl = largest_slice(rules, pod, what=spec.accelerator)
        note = f"the {spec.domain_gpus}-chip pod is more than one slice: the job runs on the largest, "
        note += sl.label
        return cut_to_slice(spec, sl), f"{note}; --slice or --nodes to choose"
    else:
        return spec, None
    return cut_to_slice(spec, sl), None


def _check_slice_hosts(sl: TpuSlice, nodes: int | None, gpus_per_node: int) -> None:
    """Refuse ``--nodes`` given with a ``--slice`` on another number of hosts: a slice of c chips runs on
    ceil(c / gpus_per_node) hosts (one host of its c chips below a whole host, :func:`cut_to_slice`), so
    ``--nodes 4 --slice 8x8`` on v5e (8 chips a host) asks for 32 and 64 chips at once.

    Raises ConfigError naming both options and their values.
    """
    hosts = -(-sl.chips // gpus_per_node)
    if nodes is not None and nodes != hosts:
        raise ConfigError(
            f"--slice: {sl.label} holds {sl.chips} chips on {hosts} hosts of {gpus_per_node} but --nodes is "
            f"{nodes} ({nodes * gpus_per_node} chips); give one of the two"
        )


def with_twist(spec: ClusterSpec) -> ClusterSpec:
    """``spec`` with its slice wired as a twisted torus (``--twisted``: ``scale_up.twisted: true``).

    Raises ConfigError naming ``--twisted`` on a cluster that is no TPU torus; the twist itself is checked
    where the slice is known (:func:`twist_slice`, naming ``scale_up.twisted``).
    """
    if spec.scale_up.kind != "torus":
        raise ConfigError(f"--twisted: {spec.name} is no TPU torus (scale_up.kind {spec.scale_up.kind})")
    return spec.with_changes(**{"scale_up.twisted": True})


#: The protocols a TPU torus has: XLA moves whole messages over ICI, no NCCL LL/LL128 (``torus_cost``).
TORUS_PROTOCOLS = ("Simple",)


def check_torus_options(proto: str | None, convention: str | None) -> None:
    """Refuse the NCCL-only options on a TPU slice: ``--proto`` other than Simple, and ``--convention
    bidirectional`` (NVLink vendor arithmetic: both directions added, busbw above the chip's ICI).

    Raises ConfigError naming the option and value.
    """
    if proto is not None and proto not in TORUS_PROTOCOLS:
        raise ConfigError(
            f"--proto: {proto} does not apply on a TPU torus; possible: {', '.join(TORUS_PROTOCOLS)}"
        )
    if convention == "bidirectional":
        raise ConfigError(
            "--convention: bidirectional is NVLink vendor arithmetic (both directions added); a TPU torus "
            "reports per_direction only"
        )


def refuse_nccl_options(spec: ClusterSpec, given: dict[str, bool]) -> None:
    """Refuse the options that only NCCL reads (``{"--no-nvls": True, ...}``, each given or not) on a TPU
    torus, which runs XLA's collectives: they would be ignored, as ``--env`` NCCL variables are refused
    (:func:`aifabric.collectives.nccl_env.check_env`).

    Raises ConfigError naming the first option given.
    """
    named = [flag for flag, on in given.items() if on]
    if spec.scale_up.kind == "torus" and named:
        raise ConfigError(
            f"{named[0]}: a TPU torus ({spec.name}) runs XLA collectives, not NCCL; NCCL options do not apply"
        )

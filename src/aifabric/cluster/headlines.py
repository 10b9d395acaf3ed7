"""Which network each headline number belongs to, and checking a vendor's claims against a modelled cluster.

The second seed's four questions when reading an announcement: which network is the bandwidth figure
about, how big is the fast domain, how oversubscribed is each tier, and what bandwidth joins the cluster's
far ends. A GB200 NVL72's "130 TB/s" is 72 GPUs x 1.8 TB/s of NVLink (both directions added) inside one
rack, not the data centre: each GPU's scale-out NIC carries 400 Gb/s = 50 GB/s per direction.

Claims are read from text (``"130 TB/s"``, ``"100,000 GPUs"``, ``"800 Gb/s per GPU"``, ``"1.4 MW"``) and
compared with every modelled headline figure within 5%; a number that matches none is reported as not
verifiable, never silently accepted.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from aifabric.cluster.summary import ClusterSummary
from aifabric.units import format_bytes

__all__ = [
    "NETWORK_WORDS",
    "Claim",
    "Headline",
    "Verdict",
    "check_claims",
    "extract_claims",
    "format_figure",
    "headlines",
]

TOLERANCE = 0.05
"""Relative gap within which a claimed number matches a modelled one."""


@dataclass(frozen=True)
class Headline:
    """A modelled headline figure: ``value`` in SI (bytes/s, GPUs, W, FLOP/s), ``kind`` and the network it
    is of; ``precision`` names the number format of a compute figure (``bf16``, ``fp8``)."""

    name: str
    value: float
    kind: str
    network: str
    note: str
    precision: str | None = None


def _rate(value: float) -> str:
    return f"{value / 1e12:.4g} TB/s" if value >= 1e12 else f"{value / 1e9:.4g} GB/s"


def _watts(value: float) -> str:
    return f"{value / 1e6:.3g} MW" if value >= 1e6 else f"{value / 1e3:.4g} kW"


def _flops(value: float) -> str:
    return f"{value / 1e15:,.4g} PFLOPS" if value >= 1e15 else f"{value / 1e12:,.4g} TFLOPS"


#: How a headline figure of each kind is printed, in the unit vendors quote it in (bandwidth TB/s or GB/s,
#: power MW or kW, compute PFLOPS or TFLOPS, memory capacity GB or TB: "186 GB", NVIDIA's GB200 figure);
#: a kind not listed (count, node size) is a whole number.
_FORMATS: dict[str, Callable[[float], str]] = {
    "bandwidth": _rate,
    "power": _watts,
    "compute": _flops,
    "memory": format_bytes,
}


def format_figure(value: float, kind: str) -> str:
    """A headline figure with its unit (:data:`_FORMATS`).

    >>> format_figure(1.86e11, "memory"), format_figure(129.6e12, "bandwidth"), format_figure(72, "count")
    ('186 GB', '129.6 TB/s', '72')
    """
    fmt = _FORMATS.get(kind)
    return fmt(value) if fmt is not None else f"{value:,.0f}"


def headlines(s: ClusterSummary) -> list[Headline]:
    """The headline figures of a cluster, each with the network it belongs to.

    Examples
    --------
    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.cluster.summary import summarize
    >>> h = {x.name: x for x in headlines(summarize(preset("gb200-nvl72", gpus=72)))}
    >>> round(h["scale-up domain bandwidth"].value / 1e12, 1), h["scale-up domain bandwidth"].network
    (129.6, 'scale-up')
    """
    out = [
        Headline("GPUs", float(s.n_gpus), "count", "cluster", "accelerators in the cluster"),
        Headline(
            "fast-domain size", float(s.domain_gpus), "count", "scale-up", "GPUs joined by the scale-up link"
        ),
        Headline("GPUs per node", float(s.spec.gpus_per_node), "node size", "node", "GPUs of one server"),
    ]
    out += _scale_up_headlines(s)
    if s.spec.scale_out is not None:
        out += _scale_out_headlines(s)
    for net in ("front-end", "storage"):
        rung = next((r for r in s.rungs if r.network == net), None)
        if rung is not None:
            per_gpu = rung.per_direction_bytes_per_s
            out.append(Headline(f"{net} per GPU", per_gpu, "bandwidth", net, rung.note))
    if s.power is not None and s.power.total_watts:
        note = (
            "GPUs, hosts and every network"
            if s.power.compute_watts
            else "every network; no GPU or host power figure in the catalogue (power.yaml): left out"
        )
        out.append(Headline("power", s.power.total_watts, "power", "cluster", note))
    return out + _memory_headlines(s) + _compute_headlines(s)


#: The catalogue's dense tensor peaks (accelerators.yaml, each with its datasheet): the number format a
#: vendor writes, the field, what the figure is. NVIDIA's datasheets give FP16 and BF16 as one figure
#: ("FP16/BF16", also on GB200 NVL72's page), and so does AMD's MI300X sheet: an FP16 claim is checked
#: against the BF16 peak.
_PEAKS: dict[str, tuple[str, str]] = {
    "bf16": ("peak_bf16_flops", "BF16"),
    "fp16": ("peak_bf16_flops", "BF16"),
    "fp8": ("peak_fp8_flops", "FP8"),
}


def _compute_headlines(s: ClusterSummary) -> list[Headline]:
    """The GPUs' dense tensor peaks (catalogue ``peak_bf16_flops``, ``peak_fp8_flops``), per GPU, in the fast
    domain and in all: a GB200 NVL72 rack is 72 x 2.5 PFLOPS = 180 PFLOPS of dense FP16/BF16, the figure
    NVIDIA's GB200 NVL72 page quotes. Then, where the vendor quotes "with sparsity" figures (catalogue
    ``sparse_peak_ratio``), the same peaks with 2:4 structured sparsity: that page's "720 PFLOPS FP8" is
    72 x 5 PFLOPS dense x 2. Dense first, so a dense figure wins a tie. Compute, not a network: listed
    last."""
    acc = s.spec.accelerator_spec
    out: list[Headline] = []
    ratio = acc.sparse_peak_ratio
    variants = [("", "dense tensor peak", 1.0)]
    if ratio is not None:
        variants.append(
            (" with sparsity", f"tensor peak with 2:4 structured sparsity ({ratio:g} x dense)", ratio)
        )
    for suffix, what, factor in variants:
        for field_name, label in dict(_PEAKS.values()).items():
            peak = getattr(acc, field_name)
            if peak is not None:
                out += _peak_headlines(
                    s, f"{label} peak{suffix}", f"{label} {what}", peak * factor, label.lower()
                )
    return out


def _peak_headlines(s: ClusterSummary, name: str, note: str, peak: float, precision: str) -> list[Headline]:
    """One tensor peak per GPU, in the fast domain and in all (one entry where the domain is the cluster)."""
    out = [Headline(f"{name} per GPU", peak, "compute", "compute", f"one GPU's {note}", precision)]
    sizes = {s.domain_gpus: "fast domain", s.n_gpus: "cluster"}
    out += [
        Headline(
            f"{name}, {where}", peak * n, "compute", "compute",
            f"{n} GPUs x {peak / 1e12:,.6g} TFLOPS {note}", precision,
        )
        for n, where in sizes.items()
    ]  # fmt: skip
    return out


def _memory_headlines(s: ClusterSummary) -> list[Headline]:
    """The GPUs' HBM, capacity and bandwidth, per GPU, in the fast domain and in all (the catalogue's vendor
    figures; a GB200 NVL72 rack: 72 x 186 GB = 13.4 TB, 72 x 8 TB/s = 576 TB/s, NVIDIA's GB200 NVL72
    page, which quotes them per rack, as it does its 130 TB/s of NVLink). Memory, not a network: listed
    after every network figure, so a network figure wins a tie."""
    acc = s.spec.accelerator_spec
    cap, bw = acc.hbm_capacity_bytes, acc.hbm_bandwidth_bytes_per_s
    out = [
        Headline("HBM capacity per GPU", cap, "memory", "memory", "one GPU's HBM"),
        Headline("HBM bandwidth per GPU", bw, "bandwidth", "memory", "one GPU's memory read bandwidth"),
    ]
    sizes = {s.domain_gpus: "fast domain", s.n_gpus: "cluster"}  # one entry where the domain is the cluster
    for n, where in sizes.items():
        out += [
            Headline(f"HBM capacity, {where}", cap * n, "memory", "memory", f"{n} GPUs x {cap / 1e9:.4g} GB"),
            Headline(
                f"HBM bandwidth, {where}", bw * n, "bandwidth", "memory", f"{n} GPUs x {bw / 1e12:.3g} TB/s"
            ),
        ]
    return out


def _scale_up_headlines(s: ClusterSummary) -> list[Headline]:
    """The scale-up domain's bandwidth, per domain and per GPU (both directions added, and one where the
    documented figure adds both); none without a scale-up rung."""
    up = next((r for r in s.rungs if r.network == "scale-up"), None)
    if up is None:
        return []
    out = [
        Headline(
            "scale-up domain bandwidth",
            up.documented_bytes_per_s * s.domain_gpus,
            "bandwidth",
            "scale-up",
            f"{s.domain_gpus} GPUs x {up.documented_bytes_per_s / 1e12:.3g} TB/s {up.level}, "
            "both directions "
            "added, inside one domain (not the data centre)",
        ),
        Headline(
            "scale-up per GPU",
            up.documented_bytes_per_s,
            "bandwidth",
            "scale-up",
            f"{up.level} per GPU, both directions added "
            f"({up.per_direction_bytes_per_s / 1e9:.4g} GB/s each way)",
        ),
    ]
    if up.per_direction_bytes_per_s != up.documented_bytes_per_s:
        out.append(
            Headline(
                "scale-up per GPU, one direction",
                up.per_direction_bytes_per_s,
                "bandwidth",
                "scale-up",
                f"{up.level} per GPU, one direction",
            )
        )
    return out


def _scale_out_headlines(s: ClusterSummary) -> list[Headline]:
    """The scale-out NIC rate per GPU, per node (server) and in all, and the bisection bandwidth in all and
    per GPU. A DGX H100's compute fabric is eight single-port ConnectX-7 of 400 Gb/s (NVIDIA DGX H100
    datasheet): 3.2 Tb/s per node, the figure its announcements quote."""
    nic = s.spec.nic_line_rate_bytes_per_s
    bisection = s.bisection_bytes_per_s
    return [
        Headline(
            "scale-out per GPU",
            nic,
            "bandwidth",
            "scale-out",
            f"NIC line rate per GPU, one direction ({nic * 8 / 1e9:g} Gb/s)",
        ),
        Headline(
            "scale-out per node",
            nic * s.spec.gpus_per_node,
            "bandwidth",
            "scale-out",
            f"NIC line rate of one server, one direction ({s.spec.gpus_per_node} GPUs x "
            f"{nic * 8 / 1e9:g} Gb/s)",
        ),
        Headline(
            "scale-out total", nic * s.n_gpus, "bandwidth", "scale-out", "all NICs added, one direction"
        ),
    ] + (_bisection_headlines(s, bisection) if s.tiers or s.spec.n_domains > 1 else [])  # no leaf: no far end


def _injected_bisection(s: ClusterSummary, bisection: float) -> tuple[float, str]:
    """The far-end bandwidth the GPUs can drive: the fabric's bisection, at most what half of them inject
    (:attr:`~aifabric.cluster.spec.ClusterSpec.nic_injection_bytes_per_s`, NIC line rate at most the PCIe
    path to it, the cap the formula engine's ``nic_effective_bytes_per_s`` puts on every GPU)::

        far end = min( bisection,  N/2 x min(B_nic, B_pcie) )

    and ``"; capped by ..."`` when the PCIe path binds (else ``""``): GPUDirect RDMA moves a GPU's bytes
    over its own x16 link before any NIC, so 400 Gb/s behind PCIe Gen4 x16 (28.8 GB/s of bulk DMA) puts
    28.8 GB/s, not 50, on the wire.
    """
    spec = s.spec
    injected = s.n_gpus / 2 * spec.nic_injection_bytes_per_s
    if injected >= bisection:
        return bisection, ""
    host, nic = spec.nic_host_link_bytes_per_s, spec.nic_line_rate_bytes_per_s
    gen = str(spec.accelerator_spec.pcie).capitalize()
    return injected, (
        f"; capped by each GPU's PCIe {gen} x16 path to its NIC, {host / 1e9:.1f} GB/s, below the NIC's "
        f"{nic / 1e9:.1f} GB/s (fabric bisection {bisection / 1e12:.3g} TB/s)"
    )


def _bisection_headlines(s: ClusterSummary, bisection: float) -> list[Headline]:
    """The scale-out bisection, whole and per GPU (where a Clos is built, or the cluster has several
    domains), as far as the GPUs' PCIe paths let them drive it (:func:`_injected_bisection`)."""
    far, cap = _injected_bisection(s, bisection)
    return [
        Headline(
            "far-end bandwidth (bisection)",
            far,
            "bandwidth",
            "scale-out",
            f"one half of the GPUs to the other, one direction{cap}",
        ),
        Headline(
            "far-end bandwidth per GPU",
            far / (s.n_gpus / 2),
            "bandwidth",
            "scale-out",
            f"bisection / (N/2), one direction{cap}",
        ),
    ]


@dataclass(frozen=True)
class Claim:
    """A number read from an announcement: ``value`` in SI, ``kind`` (bandwidth, count, power, memory: a
    capacity in bytes, compute: FLOP/s), its text; ``precisions`` the number formats a compute claim names
    (``("fp16", "bf16")`` for "of FP16/BF16"; empty: not said); ``network`` the network (or memory) the
    words after it name (:data:`NETWORK_WORDS`)."""

    text: str
    value: float
    kind: str
    per_gpu: bool = False
    per_node: bool = False  # "per node" (server, system, host): one server's figure
    precisions: tuple[str, ...] = ()
    network: str | None = None  # the network the words after it name ("of NVLink": scale-up); None: none

    def __post_init__(self) -> None:
        # the figure times its unit or suffix may overflow where the figure alone did not ("1e306M GPUs")
        if not math.isfinite(self.value):
            raise ValueError(f"announcement: {self.text!r} is not a finite number (it overflows a float)")


_UNITS = {
    "pb/s": (1e15, "bandwidth"),
    "tb/s": (1e12, "bandwidth"),
    "gb/s": (1e9, "bandwidth"),
    "mb/s": (1e6, "bandwidth"),
    "gw": (1e9, "power"),
    "mw": (1e6, "power"),
    "kw": (1e3, "power"),
    "pb": (1e15, "memory"),
    "tb": (1e12, "memory"),
    "gb": (1e9, "memory"),
    "pib": (2.0**50, "memory"),
    "tib": (2.0**40, "memory"),
    "gib": (2.0**30, "memory"),
    # FLOP/s: "PFLOPS", "PFLOP/s" (read as "pflops") and the words ("exaFLOPS")
    **{f"{p}flops": (v, "compute") for p, v in (("e", 1e18), ("p", 1e15), ("t", 1e12))},
    **{f"{p}flops": (v, "compute") for p, v in (("exa", 1e18), ("peta", 1e15), ("tera", 1e12))},
}
#: The units a claim is read in: FLOP/s ("PFLOPS", "PFLOPs", "PFLOP/s", "petaflops"), bytes or bits per
#: second ("TB/s", "Gb/s", "Tbit/s", "Gbps"), watts; the byte capacities follow where each pattern needs them.
_RATE_UNITS = r"[EPT]FLOP(?:S|s|/s)|(?i:(?:exa|peta|tera)flops)|[PTGM](?:[bB]|bit)/s|[PTGM]bps|[GMk]W"
_CLAIM = re.compile(
    r"(?P<sign>(?<![\w.,-])[-\u2212])?"  # a minus sign, kept: "-130 TB/s" is not 130 TB/s
    r"(?<![\w.,])(?P<num>\d[\d,]*(?:\.\d+)?(?:[eE][+-]?\d+)?)"  # not the 100 of "H100"
    r"(?:\s*(?P<unit>" + _RATE_UNITS + r"|[PTG]i?B)\b"
    # "180 PFLOPS of FP16/BF16" (NVIDIA's GB200 NVL72 page): the number formats a compute figure is of
    r"(?:(?:\s+of)?\s+(?P<precision>(?:FP|BF|TF)\d+(?:/(?:FP|BF|TF)\d+)*)\b)?(?P<per>\s+per\s+(?:(?P<gpu>GPU|accelerator|chip)|(?P<server>server|node|system|host))\b)?"
    # "72 B200 GPUs": a model between; "a 72-GPU NVLink domain" (NVIDIA's GB200 NVL72 page): a hyphen;
    # "100k GPUs" (xAI's Colossus): a thousands (k) or millions (M) suffix, also after a space ("100 k GPUs")
    # "100K+ GPUs": a lower bound, read as its figure; "8-GPU servers": one node's size, not the cluster's
    r"|(?:\s?(?P<mult>[kKM]))?\+?(?:\s+(?:[A-Za-z][\w-]*\s+)?|-)(?P<count>GPUs?|accelerators?|chips?)\b"
    r"(?P<node>(?:\s+[A-Za-z][\w-]*)?\s+(?:servers?|nodes?|systems?|trays?|hosts?|machines?|boxes)\b)?)",
)
#: The words after a figure that name what it is of, and the network of the headline figures that name
#: it: "130 TB/s of NVLink" (NVIDIA's GB200 NVL72 page) is the scale-up domain's, "13.5 TB of HBM3e" the
#: GPUs' memory. A claim that names one is held against that network's figures only.
NETWORK_WORDS: dict[str, str] = {
    "nvlink": "scale-up",
    "nvswitch": "scale-up",
    "ici": "scale-up",
    "scale-up": "scale-up",
    "infiniband": "scale-out",
    "scale-out": "scale-out",
    "front-end": "front-end",
    "hbm": "memory",
    "memory": "memory",
}
_NETWORK = re.compile(
    r"\s+(?:of\s+)?(?:(?:the|total|aggregate)\s+)?"
    rf"(?P<net>(?i:{'|'.join(map(re.escape, NETWORK_WORDS))}))(?:\d\w*)?\b"  # "HBM3e", "NVLink5"
)
#: A figure that is no number, written where a claim's number goes ("nan TB/s", "inf GPUs"): Python's float
#: reads these words, the claim pattern does not, so without this they would vanish from the table.
_NOT_A_NUMBER = re.compile(
    r"(?<![\w.,])[-+\u2212]?(?i:nan|inf(?:inity)?)\b\s*"
    r"(?:" + _RATE_UNITS + r"\b|[PTG]i?B\b|(?:[A-Za-z][\w-]*\s+)?GPUs?\b)"
)
#: A number followed by what looks like a unit of the claim pattern's kinds (a metric prefix and bytes,
#: bits, watts or FLOPs: "130 TB/z", "720 PFLOPZ"), to be held against the units the pattern reads: a
#: mistyped unit would otherwise be read as another quantity ("TB" of "TB/z": a capacity) or vanish.
_UNIT_LIKE = re.compile(
    r"(?<![\w.,])\d[\d,]*(?:\.\d+)?(?:[eE][+-]?\d+)?\s*"
    r"(?P<unit>(?:[kMGTPE]i?(?:[Bb]|W|FLOP|flop)|(?i:exa|peta|tera)(?i:flop))\w*(?:/[A-Za-z]\w*)?)"
)
_KNOWN_UNIT = re.compile(_RATE_UNITS + r"|[PTG]i?B")


def _unknown_unit(text: str) -> str | None:
    """The first figure in ``text`` written with a unit-like word the claim pattern does not read ("130
    TB/z", "720 PFLOPZ"), as written; None when every one is a known unit."""
    for m in _UNIT_LIKE.finditer(text):
        if not _KNOWN_UNIT.fullmatch(m["unit"]):
            return m[0]
    return None


#: The suffixes a count is written with: "100k GPUs" is 100,000.
_COUNT_MULTIPLIERS = {None: 1.0, "k": 1e3, "K": 1e3, "M": 1e6}
#: What a claim's figure can be of, for the refusal of one at or below 0.
_NO_FIGURE = "no bandwidth, count, power, memory or FLOPS"


def _figure(m: re.Match[str]) -> float:
    """The number of one matched claim; ValueError naming the claim when it is below 0, 0 or not finite
    ("1e400" overflows to infinity): no link, GPU count, power, memory or FLOPS is any of those."""
    if m["sign"]:
        raise ValueError(f"announcement: {m[0]!r} is negative; {_NO_FIGURE} is below 0")
    num = float(m["num"].replace(",", ""))
    if not math.isfinite(num):
        raise ValueError(f"announcement: {m[0]!r} is not a finite number (it overflows a float)")
    if num == 0:
        raise ValueError(f"announcement: {m[0]!r} is zero; {_NO_FIGURE} is 0")
    return num


def _count_claim(m: re.Match[str], num: float) -> Claim:
    """A GPU count ("100k GPUs") or a node size ("8-GPU servers"); ValueError naming the claim when the
    count is not a whole number of GPUs ("0.5 GPUs")."""
    value = num * _COUNT_MULTIPLIERS[m["mult"]]
    if math.isfinite(value) and not value.is_integer():
        raise ValueError(f"announcement: {m[0]!r} is not a whole number of GPUs")
    return Claim(m[0], value, "node size" if m["node"] else "count")


#: The number formats a compute figure is quoted in: IEEE 754-2019's binary16/32/64 (FP16, FP32, FP64),
#: bfloat16 (BF16), NVIDIA's TensorFloat-32 (TF32, A100 whitepaper), the OCP Microscaling Formats v1.0
#: spec's FP8 (E4M3, E5M2), FP6 and FP4 elements. "FP9" is none of them: a misspelling, not a claim.
NUMBER_FORMATS = ("fp4", "fp6", "fp8", "fp16", "bf16", "tf32", "fp32", "fp64")


def _precisions(m: re.Match[str], kind: str) -> tuple[str, ...]:
    """The number formats claim ``m`` of ``kind`` names ("of FP16/BF16": ``("fp16", "bf16")``); ValueError
    naming the word when one is no number format ("FP9") or follows a figure that is no FLOPS ("5 PB/s
    FP8": a number format is what a compute figure is counted in)."""
    if not m["precision"]:
        return ()
    words = m["precision"].split("/")
    if kind != "compute":
        raise ValueError(
            f"announcement: {m[0]!r} names {m['precision']} after {m['unit']}; a number format qualifies a "
            "FLOPS figure, not a bandwidth, power or memory"
        )
    if unknown := [w for w in words if w.lower() not in NUMBER_FORMATS]:
        raise ValueError(
            f"announcement: {unknown[0]!r} in {m[0]!r} is no number format; possible: "
            f"{', '.join(f.upper() for f in NUMBER_FORMATS)}"
        )
    return tuple(w.lower() for w in words)


def extract_claims(text: str) -> list[Claim]:
    """Numbers with units in ``text``: bandwidths (bits when the unit has a lower-case b), GPU counts (also
    "72-GPU", "100k GPUs"), power, memory capacities ("13.5 TB of HBM3e", "186 GB per GPU").

    Examples
    --------
    >>> [(c.kind, c.value) for c in extract_claims("72 GPUs, 130 TB/s of NVLink, 800 Gb/s per GPU")]
    [('count', 72.0), ('bandwidth', 130000000000000.0), ('bandwidth', 100000000000.0)]
    >>> [c.value for c in extract_claims("a 72-GPU NVLink domain; Colossus: 100k GPUs")]
    [72.0, 100000.0]
    >>> [(c.kind, c.value) for c in extract_claims("13.5 TB of HBM3e, 576 TB/s of memory bandwidth")]
    [('memory', 13500000000000.0), ('bandwidth', 576000000000000.0)]
    >>> [c.network for c in extract_claims("200 TB/s of NVLink, 13.5 TB of HBM3e, 3 PB/s")]
    ['scale-up', 'memory', None]

    Raises
    ------
    ValueError
        A figure written with a minus sign ("-130 TB/s"), zero or not finite ("1e400 TB/s", "nan TB/s"): no
        bandwidth, count or power is below 0, 0, infinite or NaN; a GPU count that is no whole
        number ("0.5 GPUs"); a figure whose unit-like word is no unit read here ("130 TB/z", "720 PFLOPZ").
    """
    if bad := _NOT_A_NUMBER.search(text):
        raise ValueError(f"announcement: {bad[0]!r} is not a finite number")
    if typo := _unknown_unit(text):
        raise ValueError(
            f"announcement: {typo!r} has a unit this reader does not know; write one of TB/s, Gb/s, Gbps, "
            "MW, TB, TiB, PFLOPS (or PFLOP/s, petaflops), or GPUs for a count"
        )
    out: list[Claim] = []
    for m in _CLAIM.finditer(text):
        num = _figure(m)
        if m["count"]:
            out.append(_count_claim(m, num))
            continue
        unit = m["unit"]
        low = (
            unit.lower().replace("/s", "s") if "flop" in unit.lower() else unit.lower().replace("bit/", "b/")
        )
        per_gpu, per_node = m["gpu"] is not None, m["server"] is not None
        net = _NETWORK.match(text, m.end())
        network = NETWORK_WORDS[net["net"].lower()] if net else None
        if low.endswith("bps"):
            scale, kind = _UNITS[low[0] + "b/s"]
            out.append(Claim(m[0], num * scale / 8, kind, per_gpu, per_node, network=network))
            continue
        scale, kind = _UNITS[low]
        bits = kind == "bandwidth" and unit[1] == "b"
        precisions = _precisions(m, kind)
        value = num * scale / (8 if bits else 1)
        out.append(Claim(m[0], value, kind, per_gpu, per_node, precisions, network))
    return out


@dataclass(frozen=True)
class Verdict:
    """``status`` is ``matches`` (with the ``figure`` it matches), ``differs`` or ``cannot verify``."""

    claim: Claim
    status: str
    figure: Headline | None
    note: str


#: How a per-GPU figure of each kind is shown in a "differs" note: divisor and unit.
_PER_GPU_UNITS = {"bandwidth": (1e9, "GB/s"), "memory": (1e9, "GB"), "compute": (1e12, "TFLOPS")}


def check_claims(s: ClusterSummary, claims: list[Claim]) -> list[Verdict]:
    """Compare each claim with the modelled headline figures of its kind (within 5%); a claim that names
    its network (``Claim.network``) with that network's figures only."""
    figs = headlines(s)
    return [_verdict(s, figs, c) for c in claims]


def _verdict(s: ClusterSummary, figs: list[Headline], c: Claim) -> Verdict:
    """One claim's verdict: the figure it matches; else "differs" with the modelled figures it is to be
    held against (a count, a node size, a per-GPU or per-node figure, the figures of the network it names);
    else "cannot verify", naming the figures of its kind there are."""
    # a compute claim that names its number format is checked against that format's peak only
    same = [h for h in figs if h.kind == c.kind and (not c.precisions or h.precision in c.precisions)]
    if c.network is not None:  # "200 TB/s of NVLink": the scale-up figures, not the HBM's 576 TB/s
        same = [h for h in same if h.network == c.network]
    hit = next((h for h in same if abs(c.value / h.value - 1) <= TOLERANCE), None) if c.value else None
    if hit is not None:
        return Verdict(c, "matches", hit, f"{hit.name} ({hit.network}): {hit.note}")
    if c.kind == "count" and same:
        return Verdict(c, "differs", None, f"modelled: {s.n_gpus} GPUs, fast domain {s.domain_gpus}")
    if c.kind == "node size":
        return Verdict(c, "differs", None, f"modelled: {s.spec.gpus_per_node} GPUs per node")
    if c.per_gpu and (per_gpu := [h for h in same if "per GPU" in h.name]):
        scale, unit = _PER_GPU_UNITS[c.kind]
        have = ", ".join(f"{h.name} {h.value / scale:.4g} {unit}" for h in per_gpu)
        return Verdict(c, "differs", None, f"modelled per GPU: {have}")
    if c.per_node and (per_node := [h for h in same if "per node" in h.name]):
        have = ", ".join(f"{h.name} {h.value / 1e9:.4g} GB/s" for h in per_node)
        return Verdict(c, "differs", None, f"modelled per node: {have}")
    if c.network is not None and same:
        have = ", ".join(f"{h.name} {format_figure(h.value, h.kind)}" for h in same)
        return Verdict(c, "differs", None, f"modelled {c.network}: {have}")
    known = ", ".join(h.name for h in same or [h for h in figs if h.kind == c.kind]) or "none"
    of = f" of {'/'.join(p.upper() for p in c.precisions)}" if c.precisions else ""
    on = f" of the {c.network} network" if c.network is not None else ""
    return Verdict(
        c, "cannot verify", None, f"no modelled {c.kind} figure{of}{on} is within 5% (have: {known})"
    )

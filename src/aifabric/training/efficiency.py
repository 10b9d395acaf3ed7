"""How fast a GPU computes in practice: measured GEMM and HBM efficiencies, one documented source each.

The step-time model (:mod:`aifabric.training.step`) runs every matrix-multiply FLOP at
``peak_bf16_flops x gemm_efficiency`` and every byte of memory-bound element-wise work at
``hbm_bandwidth x hbm_efficiency``. Both constants come from microbenchmarks recorded in
``presets/compute.yaml`` with their source; they are the same for every model and layout and are never
fitted to a training run. The catalogue's datasheet figures (:mod:`aifabric.catalog`) supply the peaks.

Notes
-----
Why the A100 figure is a fixed-shape measurement (230 TFLOP/s, n = 8192 square) and not the maximum over
shapes of the MAMF table (271.2 TFLOP/s, 86.9 %): a training step multiplies the shapes its model has, not
the best one a search finds; and Table 1 of Narayanan et al. ran 2021 software. With the MAMF figure (and
datasheet HBM) the three Table 1 rows of the shared case file come out +19 %, +11 % and +19 % high; with
the fixed-shape one, -1.5 %, -3.6 % and +1.5 %. Hopper and Blackwell entries use the MAMF table for want of
a fixed-shape measurement, so they are optimistic by the same kind of margin. H100, H200, B200 and GB200 also
carry a measured table of GEMM throughput by shape (``gemm_table``, :mod:`aifabric.training.gemm`; OpenXLA's
sm_90 and sm_100 tables, the GB200 reading the B200's): with it the weight GEMMs of a step run at their own
shapes' throughput relative to the table's best shape, at the entry's measured large-GEMM level, and the
MAMF figure times only the attention core. No such table is recorded for the A100, so its Table 1 rows keep
the fixed-shape figure. The B200 and GB200 also carry OpenXLA's FP8 table of the same sm_100 runs
(``fp8_gemm_table``): under FP8 their layers' products lose what an FP8 product of that shape loses (more than
a BF16 one: twice the FLOPs per tile load), at the entry's FP8 level. OpenXLA's sm_90 FP8 figures exceed the
H100's dense FP8 peak and are not used; the H100 keeps the BF16 table's shapes for FP8, an upper bound.

One source measures the other figures the same way on every GPU it covers: Microsoft's Azure
AI-benchmarking-guide (``Azure_Results/ND_*_results.md``). Its HBM figures are BabelStream; the profiles use
its "Mul" kernel (b = x c, the kernel of Mu Li's A100 figure, which it reproduces: 1.61 TB/s). Its GEMMs are
cuBLASLt at m = n = k = 8192 with random data after 10,000 warm-up iterations, so the clock is the one the
power limit sustains on real data; it publishes FP8 for Hopper and Blackwell, which sets
``fp8_gemm_efficiency`` (H100 0.65, GB200 0.58 of the FP8 peak, against 0.80 and 0.73 for BF16 searches:
FP8 buys x1.62 on an H100, not the datasheet's x2). Its A100 FP16 figure (253.7 TFLOP/s, 0.81) is not used
for ``gemm_efficiency``: it would put three asserted A100 training rows 16-22 % high
(``tests/training/test_training_public.py``), and it gives no BF16 figure for the other GPUs to match.

Two more measurements close part of the gap between Hopper's short-run figures and what training runs
sustain. (1) The power limit: a GEMM on random data held for minutes runs at the clock the board's power
limit allows, below the clock of a short benchmark; huggingface/gpu-fryer's sustained cuBLAS 8192^3 BF16
figures (H100 SXM ~730, GB200 ~1550, A100 SXM ~270 TFLOP/s) set ``sustained_gemm_efficiency``, and every
short-run 16-bit rate is scaled by :attr:`ComputeProfile.power_limit_ratio` (H100: 730 / 794.5 = 0.919; the
A100's 230 is already below its sustained 270, so 1). (2) The attention core: FlashAttention-2 reaches a
third of the H100's peak (Azure: 327.9 TFLOP/s forward + backward at d = 128, s = 8,192; "FlashAttention-2
achieving only 35% utilization on the H100", Shah et al. 2024, arXiv:2407.08608), not the 80 % of a large
GEMM; ``attention_efficiency`` records it and :attr:`ComputeProfile.attention_core_efficiency` converts it to
the step's count (0.568 of peak on the H100 for the causal kernel).

Parts measured by others stand in only where the datasheets give the same compute: the H800 reads the H100
SXM's figures (same GH100 die, clocks and HBM3; only NVLink is cut), and an entry's ``borrowed:`` takes one
figure from another entry's measurement, named in the summary: the MI325X its attention core from the
MI300X (same CDNA 3 die and peak), the B300 its from the B200's FlashAttention-4 run. The GB200 does not
borrow it: with it 11 asserted GB200 rows come out 15-22 % fast (``presets/compute.yaml``), so its attention
core stays at the GEMM rate, as its summary says. The H20 (another configuration of the
die, 148 TFLOPS) has no entry. TPUs are timed with XLA's own matmul on the chip (v5e: JAX's Pallas guide,
92 % of peak at 8192^3; v6e: tpu-recipes' microbenchmark, 90 %; TPU7x: accelerator-microbenchmarks, 83 %
of a TensorCore's half of the chip's peak); a TPU has no SMs, so no overlap contention is charged, and no
published splash-attention figure, so its attention core runs at the GEMM rate (an upper bound).

Examples
--------
>>> p = compute_profile("a100-sxm-80gb")
>>> round(p.gemm_efficiency * 312)  # TFLOP/s: the measured 230
230
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache

from aifabric import catalog
from aifabric.catalog.loader import catalog_generation
from aifabric.errors import ConfigError
from aifabric.package_data import load_package_yaml
from aifabric.training.gemm import GemmTable, gemm_table

__all__ = ["ComputeProfile", "compute_profile", "list_compute_profiles"]


@dataclass(frozen=True, slots=True)
class ComputeProfile:
    """Measured efficiencies of one accelerator.

    Parameters
    ----------
    gemm_efficiency : float
        Dense 16-bit matrix-multiply throughput as a fraction of the datasheet peak, in (0, 1].
    hbm_efficiency : float, default 1.0
        Streaming memory bandwidth as a fraction of the datasheet HBM bandwidth, in (0, 1].
    source : str, default ""
        Where the figures come from.
    accelerator : str, default ""
        Catalogue key of the accelerator.
    sm_count : int, default 0
        Streaming multiprocessors of the GPU; 0: unknown (no overlap contention is charged).
    comm_sms : int, default 0
        SMs a concurrent NCCL collective kernel occupies (``presets/compute.yaml`` gives the measurement).
    gemm_table : GemmTable, optional
        Measured GEMM throughput by shape (:mod:`aifabric.training.gemm`); None: every GEMM runs at
        ``gemm_efficiency``.
    fp8_gemm_table : GemmTable, optional
        Measured FP8 GEMM throughput by shape, for the layers' products under ``StepOptions(fp8=True)``;
        None: FP8 products lose what ``gemm_table`` says the same BF16 shape loses (an upper bound: an FP8
        product does twice the FLOPs per tile load, so its fixed per-tile costs weigh more).
    fp8_gemm_efficiency : float, optional
        Dense FP8 (E4M3) matrix-multiply throughput as a fraction of the datasheet FP8 peak, in (0, 1];
        None: not measured (FP8 GEMMs then run at ``gemm_efficiency`` of the FP8 peak, an upper bound).
    sustained_gemm_efficiency : float, optional
        Dense 16-bit GEMM throughput on random data held for a minute or more (the clock the power limit
        sustains), as a fraction of the peak, in (0, 1]; None: not measured (no power limit charged). See
        :attr:`power_limit_ratio`.
    attention_efficiency : float, optional
        Measured FlashAttention forward + backward throughput (head width 128, no causal mask, the
        benchmark's own FLOP count: 3.5 forwards of 4 s^2 a d) as a fraction of the 16-bit peak, in (0, 1];
        None: the attention core runs at ``gemm_efficiency``, an upper bound the summary names. See
        :attr:`attention_core_efficiency`.
    attention_kernel : str, default "FlashAttention-2"
        The kernel ``attention_efficiency`` was measured with (FlashAttention-4 on Blackwell).
    borrowed : tuple of (str, str), default ()
        ``(field, accelerator)``: the figures that part's entry measured on the same die, standing in for
        this one's (``borrowed:`` in ``presets/compute.yaml``), as the summary says.

    Raises
    ------
    ConfigError
        If an efficiency is not in (0, 1], or ``comm_sms`` is negative or not below ``sm_count``.
    """

    gemm_efficiency: float
    hbm_efficiency: float = 1.0
    source: str = ""
    accelerator: str = ""
    sm_count: int = 0
    comm_sms: int = 0
    gemm_table: GemmTable | None = None
    fp8_gemm_table: GemmTable | None = None
    fp8_gemm_efficiency: float | None = None
    sustained_gemm_efficiency: float | None = None
    attention_efficiency: float | None = None
    attention_kernel: str = "FlashAttention-2"
    borrowed: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        for name in ("gemm_efficiency", "hbm_efficiency", *_OPTIONAL_FRACTIONS):
            value = getattr(self, name)
            if value is None and name in _OPTIONAL_FRACTIONS:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
                raise ConfigError(f"{name} must be in (0, 1], got {value!r}")
        if self.sm_count < 0 or self.comm_sms < 0 or (self.sm_count and self.comm_sms >= self.sm_count):
            raise ConfigError(
                f"comm_sms must be >= 0 and below sm_count, got comm_sms={self.comm_sms}, "
                f"sm_count={self.sm_count}"
            )

    @property
    def overlap_contention(self) -> float:
        """f = comm_sms / sm_count: the share of the SMs a concurrent collective takes from compute.

        While a collective of x seconds overlaps compute of c seconds, the compute runs on the other
        1 - f of the SMs, so the pair takes max(x, c + f x) (:func:`aifabric.training.step.overlapped_s`).
        0 when the SM count is unknown.

        >>> round(compute_profile("h100-sxm").overlap_contention, 3)  # 24 of 132 SMs
        0.182
        """
        return self.comm_sms / self.sm_count if self.sm_count else 0.0

    @property
    def power_limit_ratio(self) -> float:
        """r = min(1, sustained_gemm_efficiency / gemm_efficiency): the share of the short-run GEMM rate the
        power limit lets a long run keep; 1 when no sustained figure is recorded.

        A GEMM on random data switches more transistors per cycle than the short benchmarks that set
        ``gemm_efficiency`` and the GEMM table can heat the part to; when the board reaches its power limit
        the driver lowers the SM clock (Horace He, "Strangely, Matrix Multiplications on GPUs Run Faster
        When Given 'Predictable' Data!", thonking.ai, 2024: A100 8192^3 at 295 TFLOP/s on zeros, 257 on
        randn; "matmuls on the H100 are primarily not compute or bandwidth limited, they are power
        limited"). A training step multiplies random-like data for hours, so every 16-bit tensor-core rate
        measured in a short run is scaled by r (:class:`~aifabric.training.step.StepModel`). The
        sustained figure is huggingface/gpu-fryer's (README, reference table: cuBLAS 8192^3 on random
        data for 60 s or more). On the A100 it is above the profile's figure (270 against 230 TFLOP/s), so
        r = 1 there.

        >>> round(compute_profile("h100-sxm").power_limit_ratio, 3)  # 730 / 794.5 TFLOP/s
        0.919
        >>> compute_profile("a100-sxm-80gb").power_limit_ratio
        1.0
        """
        if self.sustained_gemm_efficiency is None:
            return 1.0
        return min(1.0, self.sustained_gemm_efficiency / self.gemm_efficiency)

    @property
    def attention_core_efficiency(self) -> float:
        """The attention core's rate over the Megatron-LM count, as a fraction of the peak, before the
        power limit: (12 / 7) x ``attention_efficiency``, or ``gemm_efficiency`` when none is measured.

        The step counts 3 F per layer (forward F = 4 s a d per token over the whole sequence, backward
        2 F, :func:`~aifabric.training.flops.attention_core_forward_flops_per_token`). FlashAttention's
        backward recomputes the scores (its benchmark counts 2.5 F for it, 3.5 F in all) and a causal
        kernel skips the blocks above the diagonal, half of them: it takes 3.5 (F / 2) / X seconds at a
        measured rate X, so the counted 3 F run at 3 X / 1.75 = 12 X / 7. Causal blocks on the diagonal
        run a little slower than full ones (an upper bound, then). A figure measured on the causal kernel
        converts the same way: the benchmark halves its count there. Can exceed 1: a rate per counted FLOP.

        >>> round(compute_profile("h100-sxm").attention_core_efficiency, 3)  # 327.9 TFLOP/s, FA2
        0.568
        """
        if self.attention_efficiency is None:
            return self.gemm_efficiency
        return 12.0 / 7.0 * self.attention_efficiency

    @property
    def upper_bound(self) -> bool:
        """Whether the GEMM figure is the best shape of a max-over-shapes search (MAMF): an upper bound.

        A model multiplies the shapes it has, not the best one a search finds, so step times built on such a
        figure are optimistic (Hopper and Blackwell entries of ``presets/compute.yaml``).
        """
        text = self.source.lower()
        return "mamf" in text or "maximum achievable matmul" in text

    @property
    def short_source(self) -> str:
        """The source in a few words, e.g. ``"A100 GEMM, Mu Li transformers-benchmarks"``."""
        gpu = _SHORT_GPU.get(self.accelerator, self.accelerator)
        text = self.source.lower()
        if "transformers-benchmarks" in text:
            where = "Mu Li transformers-benchmarks"
        elif self.upper_bound:
            where = "MAMF search, stas00/ml-engineering"
        elif self.source:
            where = self.source if len(self.source) <= 60 else self.source[:57].rstrip() + "..."
        else:
            where = "given by the caller"
        return f"{gpu} GEMM, {where}" if gpu else where

    def summary(self) -> str:
        """One line: the GEMM efficiency used and its source.

        >>> gemm, core = compute_profile("a100-sxm-80gb").summary().split("; ")
        >>> gemm
        'compute at 73.7% of peak (A100 GEMM, Mu Li transformers-benchmarks)'
        >>> core
        'attention core at that rate (no attention measurement: the GEMM rate stands in)'
        >>> compute_profile("mi325x").summary().split("; ")[-1]
        "attention core at FlashAttention-2's measured 25.1% of peak (measured on the MI300X)"
        >>> compute_profile("h100-sxm").summary().split(";")[0]
        'weight GEMMs by shape (measured table gemm_h100_sm90.csv)'
        >>> compute_profile("h100-sxm").summary().split("; ")[-1]
        'held at 91.9% of those rates by the power limit (sustained random-data GEMM)'
        """
        flat = f"{self.gemm_efficiency:.1%} of peak ({self.short_source})"
        if self.gemm_table is not None:
            text = f"weight GEMMs by shape (measured table {self.gemm_table.name}); {self._core_text(flat)}"
        else:
            text = f"compute at {flat}; {self._core_text('that rate')}"
        lent = dict(self.borrowed).get("hbm_efficiency")
        if lent is not None:
            text += f"; HBM at {self.hbm_efficiency:.1%} of the datasheet ({self._lender(lent)})"
        if self.power_limit_ratio < 1.0:
            text += (
                f"; held at {self.power_limit_ratio:.1%} of those rates by the power limit (sustained "
                "random-data GEMM)"
            )
        return text

    def _core_text(self, gemm_rate: str) -> str:
        """The attention core's rate and what it was measured with, or that the GEMM rate stands in."""
        if self.attention_efficiency is None:
            return f"attention core at {gemm_rate} (no attention measurement: the GEMM rate stands in)"
        core = f"attention core at {self.attention_kernel}'s measured {self.attention_efficiency:.1%} of peak"
        lent = dict(self.borrowed).get("attention_efficiency")
        return core if lent is None else f"{core} ({self._lender(lent)})"

    @staticmethod
    def _lender(accelerator: str) -> str:
        """``"measured on the MI300X"``: whose measurement stands in."""
        return f"measured on the {_SHORT_GPU.get(accelerator, accelerator)}"

    def caution(self) -> str | None:
        """A warning when the GEMM figure is an upper bound (:attr:`upper_bound`) and no measured table
        times the weight GEMMs by shape, else None."""
        if not self.upper_bound or self.gemm_table is not None:
            return None
        return (
            f"the {_SHORT_GPU.get(self.accelerator, self.accelerator) or 'GPU'} GEMM efficiency comes from "
            "a max-over-shapes search (MAMF): an upper bound for a model's GEMMs, so these predictions are "
            "optimistic"
        )


#: Fields of a profile that an entry may leave out (None: not measured).
_OPTIONAL_FRACTIONS = ("fp8_gemm_efficiency", "sustained_gemm_efficiency", "attention_efficiency")

# Catalogue key -> the name people use, for one-line summaries.
_SHORT_GPU = {
    "a100-sxm-80gb": "A100",
    "h100-sxm": "H100",
    "h200-sxm": "H200",
    "b200": "B200",
    "gb200": "GB200",
    "mi300x": "MI300X",
    "h800-sxm": "H800",
    "b300": "B300",
    "mi325x": "MI325X",
    "mi355x": "MI355X",
    "tpu-v5e": "TPU v5e",
    "tpu-v6e": "TPU v6e",
    "tpu-ironwood": "TPU7x",
}


def _optional_float(value: object) -> float | None:
    """``float(value)``, or None when the entry leaves the field out."""
    return None if value is None else float(value)  # type: ignore[arg-type]


def _table(entry: dict, field: str) -> GemmTable | None:
    """The GEMM table an entry names under ``field``, or None when it names none."""
    return gemm_table(entry[field]) if field in entry else None


#: Figures an entry may take from another entry's measurement (``borrowed:``: the same die, or for want of
#: any, the nearest measured part of the generation, which the entry's comment names).
_BORROWABLE = ("attention_efficiency", "hbm_efficiency")


def _lent(data: dict, key: str) -> dict[str, object]:
    """The figures entry ``key`` takes from a same-die entry (``borrowed: {field: accelerator}``), each the
    lender's own measurement; ConfigError naming the field for one it may not take or that is not measured."""
    out: dict[str, object] = {}
    for name, lender in (data[key].get("borrowed") or {}).items():
        own = data.get(lender, {})
        value = own.get(name)
        if name not in _BORROWABLE or value is None or name in (own.get("borrowed") or {}):
            raise ConfigError(
                f"presets/compute.yaml {key}.borrowed.{name}: {lender!r} has no measured {name} to lend "
                f"(borrowable: {', '.join(_BORROWABLE)})"
            )
        out[name] = value
        if name == "attention_efficiency" and "attention_kernel" in own:
            out["attention_kernel"] = own["attention_kernel"]
    return out


def _profile(data: dict, key: str) -> ComputeProfile:
    """The :class:`ComputeProfile` of entry ``key``, with the figures it borrows from its die's entry."""
    entry = {**data[key], **_lent(data, key)}
    return ComputeProfile(
        gemm_efficiency=float(entry["gemm_efficiency"]),
        hbm_efficiency=float(entry.get("hbm_efficiency", 1.0)),
        source=" ".join(str(entry["source"]).split()),
        accelerator=key,
        sm_count=int(entry.get("sm_count", 0)),
        comm_sms=int(entry.get("comm_sms", 0)),
        gemm_table=_table(entry, "gemm_table"),
        fp8_gemm_table=_table(entry, "fp8_gemm_table"),
        attention_kernel=str(entry.get("attention_kernel", "FlashAttention-2")),
        borrowed=tuple((str(k), str(v)) for k, v in (entry.get("borrowed") or {}).items()),
        **{name: _optional_float(entry.get(name)) for name in _OPTIONAL_FRACTIONS},
    )


@cache
def _shipped_profiles() -> dict[str, ComputeProfile]:
    data = load_package_yaml("aifabric.training", "presets/compute.yaml")
    return {key: _profile(data, key) for key in data}


def _user_profile(key: str, label: str, entry: catalog.ComputeEntry) -> ComputeProfile:
    """A user catalogue's ``compute`` entry as a profile, checked as the shipped ones are (ConfigError
    ``file: compute.key: ...``, one line)."""
    try:
        return ComputeProfile(
            gemm_efficiency=entry.gemm_efficiency,
            hbm_efficiency=entry.hbm_efficiency,
            source=" ".join(entry.source.split()),
            accelerator=key,
            sm_count=entry.sm_count,
            comm_sms=entry.comm_sms,
            **{name: getattr(entry, name) for name in _OPTIONAL_FRACTIONS},
        )
    except ConfigError as err:
        raise ConfigError(f"{label}: {err}") from None


@lru_cache(maxsize=4)
def _merged_profiles(generation: int) -> dict[str, ComputeProfile]:
    users = {key: _user_profile(key, label, e) for key, (label, e) in catalog.user_compute().items()}
    return {**_shipped_profiles(), **users}


def _profiles() -> dict[str, ComputeProfile]:
    """The shipped profiles, then the user catalogue's ``compute`` entries over them (a key both give: the
    user's), for the catalogue now in use."""
    return _merged_profiles(catalog_generation())


def list_compute_profiles() -> list[str]:
    """Accelerators with a recorded profile.

    >>> "h100-sxm" in list_compute_profiles()
    True
    """
    return list(_profiles())


def compute_profile(accelerator: str) -> ComputeProfile:
    """The recorded :class:`ComputeProfile` of a catalogue accelerator.

    Parameters
    ----------
    accelerator : str
        Catalogue key (``ClusterSpec.accelerator``), e.g. ``"h100-sxm"``.

    Raises
    ------
    ConfigError
        If no measurement is recorded for it; the message lists those that are.
    """
    profiles = _profiles()
    if accelerator not in profiles:
        raise ConfigError(
            f"accelerator: no measured compute efficiency for {accelerator!r} in "
            f"training/presets/compute.yaml or the user catalogue (known: {', '.join(profiles)}); give a "
            f"measured one in a catalogue file: 'compute: {{{accelerator}: {{gemm_efficiency: ..., "
            "source: ...}}' with --catalog FILE (or AIFABRIC_CATALOG, ~/.config/aifabric/catalog)"
        )
    return profiles[accelerator]

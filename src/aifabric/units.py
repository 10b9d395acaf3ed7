"""Quantities at the edges: "400 Gb/s", "900 GB/s", "140 GB", "5 us", "15 W".

The core of aifabric works in SI units only: bytes, seconds, bytes/second (per direction), watts, FLOP/s.
Human strings are parsed here, once, and never inside a model. Bits and bytes are told apart by the case of
the ``b``: ``Gb/s`` and ``Gbps`` are gigabits per second, ``GB/s`` and ``GBps`` gigabytes per second. Decimal
prefixes (k, M, G, T, P) are powers of 1000; binary prefixes (KiB, MiB, GiB, TiB) powers of 1024.

A plausibility check catches the common bits/bytes mix-up: a network interface quoted at "400 GB/s" is
3.2 Tb/s, more than any NIC shipped (ConnectX-9 is 1.6 Tb/s), so :func:`parse_nic_bandwidth` rejects it.
"""

from __future__ import annotations

import math
import re
from enum import Enum
from typing import NoReturn

from aifabric.errors import UnitError

__all__ = [
    "Direction",
    "format_bandwidth",
    "format_bytes",
    "format_time",
    "one_size",
    "parse_bandwidth",
    "parse_bytes",
    "parse_latency",
    "parse_line_rate",
    "parse_memory_bandwidth",
    "parse_nic_bandwidth",
    "parse_power",
    "parse_time",
]

_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}
_NUMBER = r"(?P<num>[-+]?(?:\d+(?:[.,_]\d+)*|\.\d+)(?:[eE][-+]?\d+)?)"

#: Highest per-direction NIC rate aifabric accepts without complaint, bits/s (ConnectX-9 is 1.6 Tb/s).
MAX_PLAUSIBLE_NIC_BITS_PER_S = 1.6e12
#: Lowest per-direction NIC rate aifabric accepts, bits/s: the slowest adapter in the catalogue, ``bmc-1g``
#: (the 1 GbE RJ45 out-of-band management port, NVIDIA DGX H100 user guide); every data-path NIC of an AI
#: cluster is faster. tests/catalog keep it equal to the catalogue's slowest NIC.
MIN_PLAUSIBLE_NIC_BITS_PER_S = 1e9


#: Largest message a rank can pass to a collective, bytes (1 TiB). NCCL takes device buffers, so a rank's
#: message lives in one GPU's memory: at most 288 GB of HBM3e (B300, MI355X datasheets), or 624 GB on a
#: GH200 counting its Grace's 480 GB LPDDR5X (NVIDIA GH200 datasheet). 1 TiB is above every one of them.
MAX_MESSAGE_BYTES = 2.0**40


class Direction(str, Enum):
    """How a bandwidth figure counts directions.

    ``per_direction`` is what one direction of a full-duplex link carries (how NICs are quoted);
    ``bidirectional`` adds both directions (how NVIDIA quotes NVLink: "900 GB/s" is 450 GB/s each way).
    """

    PER_DIRECTION = "per_direction"
    BIDIRECTIONAL = "bidirectional"


def _number(text: str, field: str, raw: str) -> float:
    try:
        return float(text.replace(",", "").replace("_", ""))
    except ValueError as err:
        raise UnitError(f"{field}: cannot read a number in {raw!r}") from err


def _finite(out: float, field: str, value: object) -> None:
    """Refuse NaN and the infinities (``.nan`` in YAML, ``1e999 GB``): no quantity is either."""
    if not math.isfinite(out):
        raise UnitError(f"{field}: {value!r} is not a finite number")


def _prefix(prefix: str, field: str, raw: str) -> float:
    if prefix in _BINARY:
        return _BINARY[prefix]
    if prefix in _DECIMAL:
        return _DECIMAL[prefix]
    raise UnitError(f"{field}: unknown unit prefix {prefix!r} in {raw!r}")


def parse_bytes(value: str | float | int, *, field: str = "size") -> float:
    """Parse a size in bytes: ``"140 GB"``, ``"4 GiB"``, ``"512MB"``, ``"8 Gb"`` (bits), ``1e9``.

    Parameters
    ----------
    value : str or number
        A number (bytes) or a string with a unit ``B`` (bytes) or ``b``/``bit`` (bits, divided by 8).
    field : str
        Name of the field, used in error messages.

    Returns
    -------
    float
        Bytes, >= 0.

    Raises
    ------
    UnitError
        If the string cannot be read or the value is negative.

    Examples
    --------
    >>> parse_bytes("140 GB")
    140000000000.0
    >>> parse_bytes("1 GiB")
    1073741824.0
    >>> parse_bytes("8 Gb")
    1000000000.0
    """
    if isinstance(value, bool):
        raise UnitError(f"{field}: expected a size, got {value!r}")
    if isinstance(value, int | float):
        out = float(value)
    else:
        raw = str(value).strip()
        m = re.fullmatch(_NUMBER + r"\s*(?P<pre>Ki|Mi|Gi|Ti|Pi|[kKMGTP]?)(?P<unit>B|bytes?|b|bits?)?", raw)
        if not m:
            raise UnitError(f"{field}: cannot read a size in {raw!r} (examples: '140 GB', '4 GiB', '1e9')")
        out = _number(m["num"], field, raw) * _prefix(m["pre"], field, raw)
        if m["unit"] in ("b", "bit", "bits"):
            out /= 8.0
    _finite(out, field, value)
    if out < 0:
        raise UnitError(f"{field}: size must be >= 0 bytes, got {value!r}")
    return out


def one_size(text: str, field: str) -> float:
    """A message size from the command line: finite, a whole number of bytes, at least 1 and at most
    :data:`MAX_MESSAGE_BYTES` (see :func:`parse_bytes`). ``"1.5 GiB"`` is whole bytes; ``"1.5B"`` is not.
    A decimal prefix's rounding (``1.1 GB`` = 1100000000.0000002 in binary floating point) is within
    ``1e-9`` relative and rounded.

    Raises UnitError naming ``field``.

    >>> one_size("1 GiB", "--size")
    1073741824.0
    >>> one_size("1.1 GB", "--size")
    1100000000.0
    """
    if str(text).strip().startswith("-"):
        raise UnitError(f"{field}: a message must be > 0 bytes (at least 1 byte), got {text!r}")
    value = parse_bytes(text, field=field)  # NaN and infinity refused there
    if value < 1:
        raise UnitError(f"{field}: a message must be > 0 bytes (at least 1 byte), got {text!r}")
    if value > MAX_MESSAGE_BYTES:
        raise UnitError(
            f"{field}: {text!r} is above 1 TiB, more than any GPU's memory (288 GB HBM on B300/MI355X, "
            "624 GB on GH200 with its LPDDR5X), where a rank's message must fit"
        )
    whole = round(value)
    if abs(value - whole) > 1e-9 * value:
        raise UnitError(f"{field}: a message is a whole number of bytes, got {text!r} ({value:g} bytes)")
    return float(whole)


def parse_bandwidth(value: str | float | int, *, field: str = "bandwidth") -> float:
    """Parse a rate into bytes per second: ``"400 Gb/s"``, ``"900 GB/s"``, ``"50 Gbps"``, ``"1.6 Tb/s"``.

    The direction convention is not in the string; the caller says what it means (see :class:`Direction`).

    Parameters
    ----------
    value : str or number
        A number (bytes/s) or a string ``<number> <prefix><b|B>/s`` or ``<number> <prefix><b|B>ps``.
    field : str
        Name of the field, used in error messages.

    Returns
    -------
    float
        Bytes per second, > 0.

    Raises
    ------
    UnitError
        If the string cannot be read or the rate is not positive.

    Examples
    --------
    >>> parse_bandwidth("400 Gb/s")
    50000000000.0
    >>> parse_bandwidth("900 GB/s")
    900000000000.0
    """
    if isinstance(value, bool):
        raise UnitError(f"{field}: expected a bandwidth, got {value!r}")
    if isinstance(value, int | float):
        out = float(value)
    else:
        raw = str(value).strip()
        m = re.fullmatch(
            _NUMBER + r"\s*(?P<pre>Ki|Mi|Gi|Ti|[kKMGTP]?)(?P<unit>B|b|bit|byte)(?:/s|ps|its/s|ytes/s)", raw
        )
        bare = re.fullmatch(_NUMBER, raw)
        if (
            bare and not _number(bare["num"], field, raw) > 0
        ):  # '0' or '-5': the value is the error, not the missing unit
            raise UnitError(f"{field}: bandwidth must be > 0, got {value!r}")
        if not m:
            raise UnitError(
                f"{field}: cannot read a bandwidth in {raw!r} (examples: '400 Gb/s' bits, '900 GB/s' bytes)"
            )
        out = _number(m["num"], field, raw) * _prefix(m["pre"], field, raw)
        if m["unit"] in ("b", "bit"):
            out /= 8.0
    _finite(out, field, value)
    if not out > 0:
        raise UnitError(f"{field}: bandwidth must be > 0, got {value!r}")
    return out


def parse_line_rate(value: str | float | int, *, field: str = "speed") -> float:
    """Parse a port's per-direction line rate, written in bits per second, into bytes/s.

    Every NIC, switch and transceiver datasheet quotes its line rate in bits per second ("400 Gb/s",
    "400GbE", "NDR 400 Gb/s"), so a byte unit ("400 GB/s", i.e. 3.2 Tb/s) is the bits/bytes mix-up and
    is refused rather than read eight times too fast.

    Raises
    ------
    UnitError
        If the value cannot be read (:func:`parse_bandwidth`) or carries a byte unit.

    Examples
    --------
    >>> parse_line_rate("400 Gb/s")
    50000000000.0
    """
    if isinstance(value, str) and re.search(r"(B/s|Bps|bytes?/s)\s*$", value.strip()):
        _slip(field, "line rates are quoted in bits", value, value.strip().replace("B", "b"))
    return parse_bandwidth(value, field=field)


def _slip(field: str, quoted: str, value: str, meant: str) -> NoReturn:
    """Refuse a bits/bytes slip: one line naming the field, the convention, the value and the likely one."""
    raise UnitError(
        f"{field}: {quoted} per second, got {value!r}; write {meant!r} if that is the datasheet figure"
    )


def parse_memory_bandwidth(value: str | float | int, *, field: str = "hbm_bandwidth") -> float:
    """Parse a memory bandwidth, written in bytes per second, into bytes/s.

    Every GPU datasheet quotes its memory bandwidth in bytes per second (H100 SXM "3.35 TB/s", L40S
    "864 GB/s"), so a bit unit ("2000 Gb/s", i.e. 250 GB/s) is the bits/bytes mix-up and is refused rather
    than read eight times too slow: the reverse of :func:`parse_line_rate`.

    Raises
    ------
    UnitError
        If the value cannot be read (:func:`parse_bandwidth`) or carries a bit unit.

    Examples
    --------
    >>> parse_memory_bandwidth("3.35 TB/s")
    3350000000000.0
    """
    if isinstance(value, str) and re.search(r"(b/s|bps|bits?/s)\s*$", value.strip()):
        meant = value.strip().replace("b/s", "B/s").replace("bps", "Bps")
        _slip(field, "memory bandwidth is quoted in bytes", value, meant)
    return parse_bandwidth(value, field=field)


def parse_nic_bandwidth(
    value: str | float | int,
    *,
    field: str = "nic_speed",
    lowest_bits_per_s: float = MIN_PLAUSIBLE_NIC_BITS_PER_S,
) -> float:
    """Parse a NIC's per-direction line rate and reject implausible figures.

    Returns bytes/s. A rate above 1.6 Tb/s (ConnectX-9, the fastest NIC in the catalogue) is almost surely
    bits and bytes mixed up ("400 GB/s" is 3.2 Tb/s), and raises; so does one below ``lowest_bits_per_s``
    (default :data:`MIN_PLAUSIBLE_NIC_BITS_PER_S`, 1 Gb/s: the slowest adapter in the catalogue), which no
    network adapter of a cluster runs at ("1 b/s" would predict a 1 GiB transfer in 2.7e2 years).

    Raises
    ------
    UnitError
        If the value cannot be read, is not positive, exceeds 1.6 Tb/s or is below ``lowest_bits_per_s``.

    Examples
    --------
    >>> parse_nic_bandwidth("800 Gb/s") / 1e9  # GB/s
    100.0
    """
    out = parse_bandwidth(value, field=field)
    if out * 8 > MAX_PLAUSIBLE_NIC_BITS_PER_S * 1.0001:
        raise UnitError(
            f"{field}: {value!r} is {out * 8 / 1e12:.1f} Tb/s per direction, above any NIC made "
            f"(ConnectX-9: 1.6 Tb/s)"
            + (f"; did you mean {str(value).replace('B', 'b')!r} (bits)?" if "B" in str(value) else "")
        )
    if out * 8 < lowest_bits_per_s * 0.9999:
        raise UnitError(
            f"{field}: {value!r} is {out * 8:.3g} b/s per direction, below any network adapter "
            f"(the slowest in the catalogue, a 1 GbE management port: {lowest_bits_per_s / 1e9:g} Gb/s)"
        )
    return out


def parse_time(value: str | float | int, *, field: str = "time") -> float:
    """Parse a duration into seconds: ``"5 us"``, ``"1.2 ms"``, ``"2 s"``, ``"300 ns"``, ``2e-6``.

    Raises
    ------
    UnitError
        If the string cannot be read or the value is negative.

    Examples
    --------
    >>> parse_time("5 us") * 1e6
    5.0
    """
    scale = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "min": 60.0, "h": 3600.0}
    if isinstance(value, bool):
        raise UnitError(f"{field}: expected a duration, got {value!r}")
    if isinstance(value, int | float):
        out = float(value)
    else:
        raw = str(value).strip()
        m = re.fullmatch(_NUMBER + r"\s*(?P<unit>s|ms|us|µs|ns|min|h)?", raw)
        if not m:
            raise UnitError(f"{field}: cannot read a duration in {raw!r} (examples: '5 us', '1.2 ms')")
        out = _number(m["num"], field, raw) * scale[m["unit"] or "s"]
    _finite(out, field, value)
    if out < 0:
        raise UnitError(f"{field}: duration must be >= 0, got {value!r}")
    return out


#: The longest latency one network hop, port or transport may have, seconds: 1 s is 200,000 km of fibre at
#: 5 us/km (``catalog/data`` DCI ``fibre_delay``), five times round the Earth, against the catalogue's
#: 2.7-50 us NICs and sub-microsecond to microsecond switches; a larger figure is a unit slip ('3 h' for
#: '3 us'), not a network. The same bound as the host launch cost per GPU (``--launch-us``).
MAX_LATENCY_S = 1.0


def parse_latency(value: str | float | int, *, field: str = "latency") -> float:
    """Parse a hop, port or transport latency into seconds, as :func:`parse_time`, at most
    :data:`MAX_LATENCY_S`.

    Raises
    ------
    UnitError
        As :func:`parse_time`, or naming ``field`` and ``value`` above :data:`MAX_LATENCY_S`.

    Examples
    --------
    >>> parse_latency("2.7 us") * 1e6
    2.7
    >>> parse_latency("3 h")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    aifabric.errors.UnitError: latency: '3 h' is above 1 s, ... (e.g. '3 us')
    """
    out = parse_time(value, field=field)
    if out > MAX_LATENCY_S:
        raise UnitError(
            f"{field}: {value!r} is above {MAX_LATENCY_S:g} s, longer than light takes round the Earth five "
            "times in fibre; a hop's latency is microseconds (e.g. '3 us')"
        )
    return out


def parse_power(value: str | float | int, *, field: str = "power") -> float:
    """Parse a power into watts: ``"15 W"``, ``"1.2 kW"``, ``"10.2 kW"``.

    Examples
    --------
    >>> parse_power("1.5 kW")
    1500.0
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        out = float(value)
    else:
        raw = str(value).strip()
        m = re.fullmatch(_NUMBER + r"\s*(?P<pre>[kMG]?)W", raw)
        if not m:
            raise UnitError(f"{field}: cannot read a power in {raw!r} (example: '15 W')")
        out = _number(m["num"], field, raw) * _DECIMAL[m["pre"]]
    _finite(out, field, value)
    if out < 0:
        raise UnitError(f"{field}: power must be >= 0, got {value!r}")
    return out


def format_bytes(n_bytes: float) -> str:
    """Format bytes with a decimal prefix: ``format_bytes(1.4e11) == '140 GB'``.

    >>> format_bytes(1.4e11)
    '140 GB'
    """
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n_bytes) >= scale:
            return f"{n_bytes / scale:.4g} {prefix}B"
    return f"{n_bytes:.4g} B"


def format_bandwidth(bytes_per_s: float) -> str:
    """Format bytes/s as GB/s (decimal): ``format_bandwidth(5e10) == '50 GB/s'``.

    >>> format_bandwidth(5e10)
    '50 GB/s'
    """
    return f"{bytes_per_s / 1e9:.4g} GB/s"


def format_time(seconds: float) -> str:
    """Format seconds with the best unit: ``format_time(2.5e-5) == '25 us'``.

    >>> format_time(2.5e-5)
    '25 us'
    """
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds / 1e-9:.4g} ns"

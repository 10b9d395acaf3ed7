"""The GPU-name scan skips the regexes whose model name a text lacks (start-up of ``nccl-tests compare``,
issue 9): the same answers as scanning with every pattern."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from aifabric.discovery import inference
from aifabric.discovery.inference import _GPU_NAMES, _gpu_from_text

#: Words people and nccl-tests write around GPU names, the names in several cases, and near misses.
WORDS = ["H100", "h100 pcie", "H100-NVL", "A100 80GB PCIe", "a100-pcie", "GB200", "B200", "xH100", "H1000",
         "MI300X", "V100-SXM2-32GB", "Tesla V100", "L40S", "p4d.24xlarge", "NVIDIA", "80GB", "é", " ", "\n",
         "-", "H20"]  # fmt: skip


def _every_pattern(text: str) -> tuple[str | None, str | None]:
    for pattern, key in _GPU_NAMES:
        match = re.search(pattern, text, re.IGNORECASE)
        if match:
            return key, match.group(0)
    return None, None


@settings(max_examples=300)
@given(st.lists(st.sampled_from(WORDS), max_size=12).map("".join))
def test_same_gpu_as_scanning_every_pattern(text: str) -> None:
    assert _gpu_from_text(text) == _every_pattern(text)


def test_every_pattern_has_its_model_name() -> None:
    # the word each pattern is filtered on starts every alternative of the pattern
    for pattern, _ in _GPU_NAMES:
        word = inference._GPU_WORDS[pattern]
        assert all(alt.lower().startswith(f"\\b{word}") for alt in pattern.split("|"))
    assert _gpu_from_text("8 x NVIDIA H100 80GB HBM3") == ("h100-sxm", "H100")  # case 01's GPU


#: Non-ASCII characters, some matching an ASCII letter under re.IGNORECASE (dotless i, Kelvin sign, long
#: s, dotted I) and some none (dash, times, section sign), among pieces of GPU names.
ODD = ["ı", "\u212a", "ſ", "İ", "—", "×", "§", "é", "M", "300X", "L40", "S", "H100", " ", "A100-", "PC", "IE",
       "NVL", "\n"]  # fmt: skip


@settings(max_examples=300)
@given(st.lists(st.sampled_from(ODD), max_size=12).map("".join))
def test_same_gpu_as_scanning_every_pattern_in_non_ascii_text(text: str) -> None:
    assert _gpu_from_text(text) == _every_pattern(text)


def test_a_text_with_a_character_that_matches_an_ascii_letter_is_scanned_whole() -> None:
    # every code point beyond ASCII that re.IGNORECASE matches to an ASCII letter or digit
    odd = [chr(c) for c in range(128, 0x110000) if re.fullmatch("[a-z0-9]", chr(c), re.IGNORECASE)]
    assert odd and all(inference._lowered(f"8 x {c}") is None for c in odd)
    assert _gpu_from_text("8 x Mı300X — run") == ("mi300x", "Mı300X")  # the dotless i matches MI300X's I
    assert inference._lowered("8 × H100 — §") == "8 × h100 — §"  # case 03's characters: filtered

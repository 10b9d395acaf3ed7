"""The check every ``MISSED`` table of a published-figures test file runs on its entries."""

from __future__ import annotations

import pytest


def assert_still_missed(measured: float, product: float, published: float) -> None:
    """``measured`` (the product's figure now) is still the recorded ``product`` figure (1 %), and still more
    than 10 % from the ``published`` one: a fix of the mechanism shows up as a failure here, and the entry
    then moves into an agreement test."""
    assert measured == pytest.approx(product, rel=0.01)
    assert abs(measured - published) > 0.10 * published


def assert_miss_is_described(entry: tuple[float, float, str], tolerance: float = 0.10) -> None:
    """A ``MISSED`` entry (product, published, diagnosis) cites its source tag, says measured vs predicted
    and lies more than ``tolerance`` from the published figure."""
    product, published, why = entry
    assert why.startswith("[") and " vs " in why
    assert abs(product - published) > tolerance * published

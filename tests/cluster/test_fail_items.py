"""The one reading of --fail (:mod:`aifabric.cluster.fail_items`)."""

import pytest

from aifabric.cluster.fail_items import fail_items
from aifabric.errors import ConfigError


def test_none_and_no_values_are_no_failure():
    assert fail_items(None, ("leaf",)) == []
    assert fail_items((), ("leaf",)) == []


def test_comma_separated_and_repeated_values_read_alike():
    assert fail_items("leaf:0, spine:*", ("leaf", "spine")) == fail_items(
        ["leaf:0", "spine:*"], ("leaf", "spine")
    )


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (" ", "empty value"),
        ("leaf:0,,leaf:1", "empty item"),
        ("leaf", "KIND:ARG"),
        ("leaf:", "KIND:ARG"),
        ("bmc:1", "unknown failure kind 'bmc'"),
    ],
)
def test_unreadable_values_are_refused_naming_fail(value, needle):
    with pytest.raises(ConfigError, match="^--fail: ") as err:
        fail_items(value, ("leaf", "spine"))
    assert needle in str(err.value)

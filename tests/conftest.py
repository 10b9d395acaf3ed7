"""Suite-wide test settings: hypothesis runs derandomized (the same examples on every run), so CI is
deterministic; a failing example is printed with its reproduction blob."""

import pytest
from hypothesis import settings

from aifabric import catalog

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("ci")


@pytest.fixture
def fresh_catalog(monkeypatch, tmp_path):
    """The shipped catalogue only, before and after the test: no ``AIFABRIC_CATALOG``, no config folder;
    a test that reads user catalogue files (``--catalog``, inline parts) leaves nothing behind."""
    monkeypatch.delenv("AIFABRIC_CATALOG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    catalog.reload_catalog()
    yield
    catalog.reload_catalog()

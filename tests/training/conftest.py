"""Shared data of the training tests: Narayanan et al. (SC'21, arXiv:2104.04473) Table 1.

Columns: preset name, parameters as printed (billions), heads a, hidden h, layers l, TP t, PP p, GPUs n,
global batch B (sequences). Microbatch b and virtual stages v come from Megatron-LM
``examples/sc21/run_table_1.sh`` @79a3bb6 (``--num-layers-per-virtual-pipeline-stage``: v = l / (p x that)).
Three rows are also in /work/shared/cases/training/megatron_table1_subset.csv; test_training_flops.py checks
that they agree.

Tests receive a row through the ``table1_row`` argument (parametrised here by ``pytest_generate_tests``) and
the case file's rows through the ``table1_csv`` fixture.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

TABLE1 = [
    # name,                  P_B,    a,   h,     l,   t, p,  n,    B,    b,  v
    ("megatron-gpt-1.7b", 1.7, 24, 2304, 24, 1, 1, 32, 512, 16, 1),
    ("megatron-gpt-3.6b", 3.6, 32, 3072, 30, 2, 1, 64, 512, 16, 1),
    ("megatron-gpt-7.5b", 7.5, 32, 4096, 36, 4, 1, 128, 512, 16, 1),
    ("megatron-gpt-18.4b", 18.4, 48, 6144, 40, 8, 1, 256, 1024, 8, 1),
    ("megatron-gpt-39.1b", 39.1, 64, 8192, 48, 8, 2, 512, 1536, 4, 1),
    ("megatron-gpt-76.1b", 76.1, 80, 10240, 60, 8, 4, 1024, 1792, 2, 3),  # 5 layers per virtual stage
    ("megatron-gpt-145.6b", 145.6, 96, 12288, 80, 8, 8, 1536, 2304, 2, 2),  # 5
    ("megatron-gpt-310.1b", 310.1, 128, 16384, 96, 8, 16, 1920, 2160, 1, 2),  # 3
    ("megatron-gpt-529.6b", 529.6, 128, 20480, 105, 8, 35, 2520, 2520, 1, 3),  # 1
    ("megatron-gpt-1008b", 1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 1, 1),
]

# A copy of the shared case file (Narayanan et al. SC'21 Table 1, three rows), kept with the tests so that a
# fresh clone runs them.
CSV_PATH = Path(__file__).resolve().parent / "data" / "megatron_table1_subset.csv"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "table1_row" in metafunc.fixturenames:
        metafunc.parametrize("table1_row", TABLE1, ids=[row[0] for row in TABLE1])


@pytest.fixture
def table1() -> list[tuple]:
    """All ten rows of Table 1."""
    return TABLE1


@pytest.fixture
def table1_csv() -> list[dict[str, str]]:
    """Rows of the case file (copied from the shared cases)."""
    with CSV_PATH.open() as fh:
        return list(csv.DictReader(fh))

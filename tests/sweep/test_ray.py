"""``--executor ray`` (optional extra aifabric[ray]): the same sweep on a local Ray gives the same rows.

Ray is in the `test` extra, so CI runs this (one local Ray of 2 CPUs for the module, about 5 s to start);
skipped only where ray is not installed.
"""

from __future__ import annotations

import faulthandler

import pandas as pd
import pytest

from aifabric.sweep.db import ResultDB
from aifabric.sweep.grid import SweepSpec
from aifabric.sweep.parallel import columns_for, run_into_db

ray = pytest.importorskip("ray")

GRID = {
    "cluster": "dgx-h100-superpod",
    "vary": {
        "nodes": [4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048],
        "scale_out.nic": ["connectx-7", "connectx-8"],
    },
    "collectives": [
        {"op": op, "sizes": ["1 KiB", "32 KiB", "1 MiB", "32 MiB", "1 GiB"]}
        for op in ("all_reduce", "all_gather", "all_to_all", "reduce_scatter", "broadcast")
    ],
}


#: Seconds after which a hung Ray (a worker that never starts, a lost raylet) ends the test run with every
#: thread's traceback instead of hanging CI; the module takes about 20 s on 2 cores.
HANG_S = 240


@pytest.fixture(scope="module")
def local_ray():
    # Ray's testing advice: fixed resources, one cluster per module, no dashboard; a small object store
    faulthandler.dump_traceback_later(HANG_S, exit=True)
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=200 * 2**20)
        yield
    finally:
        ray.shutdown()
        faulthandler.cancel_dump_traceback_later()


def _frame(db) -> pd.DataFrame:
    store = ResultDB(db, columns_for(SweepSpec.from_dict(GRID)))
    try:
        return store.to_pandas()
    finally:
        store.close()


def test_ray_gives_the_rows_of_the_local_executor(local_ray, tmp_path):
    spec = SweepSpec.from_dict(GRID)
    assert run_into_db(spec, tmp_path / "serial.db", executor="local") == (500, 0)
    assert run_into_db(spec, tmp_path / "ray.db", executor="ray", workers=2, batch=32) == (500, 0)
    assert ray.is_initialized()  # a Ray the caller started is left running
    pd.testing.assert_frame_equal(_frame(tmp_path / "serial.db"), _frame(tmp_path / "ray.db"))
    assert run_into_db(spec, tmp_path / "ray.db", executor="ray") == (0, 500)  # resume on Ray too

"""aws-ofi-nccl's region tuner as catalogue data (catalog/data/aws_ofi_tuner.yaml ``tuner``), each release's
tables read from aws/aws-ofi-nccl's src/tuner/nccl_ofi_regions.c / .cpp at its tag, and the plugin's own
polygon geometry ported (is_inside_region, extend_region)."""

import math

import pytest

from aifabric.catalog.aws_ofi_tuner import (
    extend_region,
    is_inside_region,
    region_choices,
    tuner_default,
    tuner_platform,
    tuner_regions,
    tuner_release,
)
from aifabric.errors import ConfigError

MiB = 2**20
GiB = 2**30
MAX_SIZE, MAX_RANKS = 100.0 * GiB, 1024.0 * 1024  # nccl_ofi_tuner_region.h TUNER_MAX_SIZE / _RANKS


def _log2(p: tuple[float, float]) -> tuple[float, float]:
    return (math.log2(p[0]), math.log2(p[1]))


def test_the_tuner_runs_by_default_from_the_release_that_built_it_into_the_net_plugin():
    # v1.16.0 src/Makefile.am: "By bundling the tuner in the net plugin, we cause the tuner to be used by
    # default on NCCL 2.21 or later"; v1.14.0-v1.15.0 ship it as a library NCCL_TUNER_PLUGIN must name
    assert tuner_release("1.15.0") is None and tuner_release("1.14.2") is None
    default = tuner_default()
    assert (default["default_from"], default["nccl_loads_from"]) == ("1.16.0", "2.21.5")
    assert "OFI_NCCL_TUNER_TYPE=Internal" in default["turned_off_by"]


def test_releases_read_the_tables_and_the_plane_of_their_regions_file():
    # the regions file is unchanged from v1.16.0 to v1.16.3 and from v1.21.0 to v1.21.1; v1.19.0 moved
    # is_inside_region and extend_region into the log2 plane (p.transform_log2())
    old, new = tuner_release("1.16.3"), tuner_release("1.21.1")
    assert old is not None and new is not None
    assert (old.version, old.scale) == ("1.16.0", "linear")
    assert (new.version, new.scale) == ("1.21.0", "log2")
    assert tuner_release() is new
    with pytest.raises(ConfigError, match="ofi_nccl_version"):
        tuner_release("one")


def test_the_plugins_own_extend_region_check():
    # v1.21.1 tests/unit/region_based_tuner.cpp: the line (8, 64)-(16, 1024) leaves the box at
    # y = TUNER_MAX_RANKS, x = 2^((log2(MAX_RANKS) - log2(1024)) / slope + log2(16)), slope 4 in log2
    x, y = extend_region((8.0, 64.0), (16.0, 1024.0), (MAX_SIZE, MAX_RANKS), log2=True)
    assert y == MAX_RANKS
    assert x == pytest.approx(2 ** ((20 - 10) / 4 + 4))


def test_the_plugins_own_is_inside_region_check():
    # v1.21.1 tests/unit/region_based_tuner.cpp test_is_inside_region: a five-vertex polygon in the log2
    # plane; its vertices are on its edge (0), its listed inner points inside (1)
    e = extend_region((48.0 * MiB, 16.0), (288.0 * MiB, 128.0), (MAX_SIZE, MAX_RANKS), log2=True)
    corners = [e, (288.0 * MiB, 128.0), (48.0 * MiB, 16.0), (4.0 * MiB, 2.0), (MAX_SIZE, 2.0)]
    polygon = tuple(_log2(c) for c in corners)
    far = _log2((2 * MAX_SIZE, 2 * MAX_RANKS))
    assert [is_inside_region(v, polygon, far) for v in polygon] == [0] * 5
    inner = [(16.0 * MiB, 4.0), (GiB, 4.0), (32.0 * GiB, 4.0), (64.0 * MiB, 16.0), (64.0 * GiB, 16.0)]
    inner += [(512.0 * MiB, 128.0), (64.0 * GiB, 256.0), (MAX_SIZE - 10.0, 128.0), (e[0] - 10, e[1] - 10)]
    assert [is_inside_region(_log2(p), polygon, far) for p in inner] == [1] * len(inner)
    # above the polygon's upper edge, which runs from (4 MiB, 2) through (48 MiB, 16) and (288 MiB, 128)
    outer = [(MiB, 64.0), (8.0 * MiB, 32.0), (64.0 * MiB, 256.0), (256.0 * MiB, 2048.0)]
    assert [is_inside_region(_log2(p), polygon, far) for p in outer] == [-1] * len(outer)


@pytest.mark.parametrize("version", ["1.16.3", "1.21.1"])
def test_p5_all_reduce_switches_protocol_where_the_hyperpod_log_steps(version: str):
    # crazyguitar/aws-gpu-communication-benchmark data/nccl_all_reduce.csv (NCCL 2.28.7, aws-ofi-nccl
    # 1.16.3, the plugin's tuner loaded): busbw steps 280 -> 347 between 1 and 2 GiB on 4 x p5.48xlarge
    # and 279 -> 351 between 2 and 4 GiB on 8; the p5 / p5e table for 8 ranks a node switches ring/LL128
    # to ring/Simple at those sizes
    release = tuner_release(version)
    assert release is not None
    picks = {
        (n, s): region_choices(release, "p5.48xlarge", 8 * n, n, "all_reduce", s)[0]
        for n, s in ((4, GiB), (4, 2 * GiB), (8, 2 * GiB), (8, 4 * GiB))
    }
    assert picks == {
        (4, GiB): ("ring", "LL128"),
        (4, 2 * GiB): ("ring", "Simple"),
        (8, 2 * GiB): ("ring", "LL128"),
        (8, 4 * GiB): ("ring", "Simple"),
    }


def test_the_tuner_leaves_two_nodes_other_layouts_and_other_instances_to_nccl():
    release = tuner_release()
    assert release is not None
    # "Skip when two nodes or lesser because the regions are not well defined"
    assert region_choices(release, "p5.48xlarge", 16, 2, "all_reduce", GiB) == ()
    # the p5 / p5e table has all_reduce alone for 8 ranks a node; 4 ranks a node has no table
    assert region_choices(release, "p5.48xlarge", 32, 4, "all_gather", GiB) == ()
    assert tuner_regions(release, "p5.48xlarge", 16, 4, "all_reduce") == ()
    # p4d / p4de have no tuner platform (nccl_ofi_tuner_process_config.h)
    assert tuner_platform("p4d.24xlarge") is None
    assert tuner_platform("p5e.48xlarge") == tuner_platform("p5.48xlarge") == "p5_p5e"


def test_p6_b300_has_tables_from_the_release_that_added_its_platform():
    # v1.18.0 added NCCL_OFI_TUNER_P6_B300 and region_init_internal_p6_b300
    v17, v18 = tuner_release("1.17.3"), tuner_release("1.18.0")
    assert v17 is not None and v18 is not None
    assert tuner_regions(v17, "p6-b300.48xlarge", 64, 8, "all_reduce") == ()
    assert tuner_regions(v18, "p6-b300.48xlarge", 64, 8, "all_reduce") != ()

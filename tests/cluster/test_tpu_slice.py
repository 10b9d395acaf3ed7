"""TPU slices: Google's shapes per generation, wraparound per axis, the default shape of a chip count."""

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from aifabric import catalog
from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.tpu_slice import allowed_shapes, default_slice, slice_of
from aifabric.errors import ConfigError

V5P = catalog.scaleup("tpu-v5p-ici").slices
V5E = catalog.scaleup("tpu-v5e-ici").slices
V5P_POD = (16, 20, 28)
V5E_POD = (16, 16, 1)
runner = CliRunner()
PRESETS = Path(__file__).resolve().parents[2] / "src" / "aifabric" / "cluster" / "presets"


@pytest.mark.parametrize(
    ("chips", "shape"),
    # Cloud TPU v5p docs, "most common single-slice shapes": each chip count's listed (most cube-like) shape.
    [(4, "2x2x1"), (8, "2x2x2"), (32, "2x4x4"), (64, "4x4x4"), (128, "4x4x8"), (256, "4x8x8")]
    + [(512, "8x8x8"), (1024, "8x8x16"), (2048, "8x16x16"), (4096, "16x16x16"), (6144, "16x16x24")],
)
def test_v5p_default_shape_is_googles_listed_shape(chips, shape):
    assert default_slice(V5P, chips, V5P_POD, what="tpu-v5p").label == shape


@pytest.mark.parametrize(
    ("chips", "shape", "wrap"),
    # Cloud TPU v5e docs: 1x1 ... 16x16; wraparound only on a full 16-chip axis (JAX scaling book, ch. 2:
    # "A TPU v5e 8x16 will have a wraparound on the longer axis"; a 4x4 has none).
    [(4, "2x2", (False, False)), (64, "8x8", (False, False)), (128, "8x16", (False, True))]
    + [(256, "16x16", (True, True))],
)
def test_v5e_shapes_and_wraparound(chips, shape, wrap):
    sl = default_slice(V5E, chips, V5E_POD, what="tpu-v5e")
    assert (sl.label, sl.wrap) == (shape, wrap)


def test_v5p_wraparound_only_on_whole_cubes():
    # Cloud TPU v5p docs: "All 4x4x4 and larger slices have full 3D torus connectivity"; scaling book: "a
    # 2x2x4 won't have any wraparounds".
    assert slice_of(V5P, (2, 2, 4), V5P_POD, what="v5p").wrap == (False, False, False)
    assert slice_of(V5P, (4, 4, 8), V5P_POD, what="v5p").wrap == (True, True, True)
    assert slice_of(V5P, (8, 4, 4), V5P_POD, what="v5p").label == "8x4x4"  # any orientation


def test_slices_fit_the_pod_and_the_largest_slice():
    shapes = allowed_shapes(V5P, V5P_POD)
    assert max(a * b * c for a, b, c in shapes) == 6144  # v5p docs: largest single slice 16x16x24
    assert (16, 16, 24) in shapes and (16, 16, 28) not in shapes and (4, 4, 32) not in shapes  # pod 16x20x28
    assert allowed_shapes(V5P, (4, 4, 4)).keys() == {(1, 2, 2), (2, 2, 2), (2, 2, 4), (2, 4, 4), (4, 4, 4)}


@pytest.mark.parametrize(
    ("dims", "needle"),
    [((3, 3, 3), "3x3x3 is no v5p slice"), ((4, 4), "3 axes"), ((32, 32, 32), "does not fit the 16x20x28")],
)
def test_bad_shapes_are_refused(dims, needle):
    with pytest.raises(ConfigError, match=needle):
        slice_of(V5P, dims, V5P_POD, what="v5p")


def test_a_chip_count_no_slice_holds_is_refused_with_the_sizes():
    with pytest.raises(
        ConfigError, match=r"ranks: 7 chips make no tpu-v5p slice; slices hold 4, 8, 16, 32, 64"
    ):
        default_slice(V5P, 7, V5P_POD, what="tpu-v5p")


def test_cluster_yaml_slice_field():
    v5e = yaml.safe_load((PRESETS / "tpu-v5e-pod.yaml").read_text())  # the file, then a slice in it
    v5e["scale_up"]["slice"] = "8x16"
    assert ClusterSpec.from_dict(v5e).scale_up.slice == (8, 16)
    with pytest.raises(ConfigError, match="scale_up.slice: 8x12 is no tpu-v5e slice"):
        ClusterSpec.from_dict({**v5e, "scale_up": {**v5e["scale_up"], "slice": [8, 12]}})
    with pytest.raises(ConfigError, match="scale_up.slice: only a TPU torus"):
        preset("dgx-h100-superpod").with_changes(**{"scale_up.slice": "2x2x1"})


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--ranks", "7"], "ranks: 7 chips make no tpu-v5p slice"),
        (["--slice", "3x3x3"], "--slice: 3x3x3 is no tpu-v5p slice"),
        (["--slice", "4x4x8", "--ranks", "64"], "--slice: 4x4x8 holds 128 chips but --ranks is 64"),
        (["--slice", "4xx4"], "--slice: expected chips per axis"),
    ],
)
def test_cli_refuses_bad_slices_in_one_line(args, needle):
    r = runner.invoke(app, ["collective", "--cluster", "tpu-v5p-pod", "--size", "1GiB", *args])
    assert r.exit_code == 2 and needle in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_cli_slice_on_a_gpu_cluster_is_refused():
    r = runner.invoke(app, ["collective", "--cluster", "dgx-h100-superpod", "--slice", "2x2x1", "-s", "1GiB"])
    assert r.exit_code == 2 and "--slice: dgx-h100-superpod is no TPU torus" in r.stderr


def test_cli_json_echoes_the_slice():
    r = runner.invoke(
        app, ["collective", "--cluster", "tpu-v5p-pod", "--slice", "4x4x8", "-s", "1GiB", "--json"]
    )
    assert r.exit_code == 0
    out = json.loads(r.stdout)[0]
    assert (out["slice"], out["slice_wraparound"], out["n_ranks"]) == ("4x4x8", [True, True, True], 128)
    r = runner.invoke(app, ["collective", "--cluster", "tpu-v5p-pod", "--ranks", "16", "-s", "1GiB"])
    assert r.exit_code == 0 and "TPU slice 2x2x4 (mesh 2, mesh 2, mesh 4)" in r.stdout

"""TPU slice defects of the new-user trial (issue 8): each bad input refused in one line naming the option."""

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.spec import ClusterSpec
from aifabric.errors import ConfigError

runner = CliRunner()
PRESETS = Path(__file__).resolve().parents[2] / "src" / "aifabric" / "cluster" / "presets"


def _run(*args: str):
    return runner.invoke(app, ["collective", *args])


def _refused(r, needle: str) -> None:
    assert r.exit_code == 2, r.output
    assert needle in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def _pod(name: str, **scale_up) -> dict:
    d = yaml.safe_load((PRESETS / f"{name}.yaml").read_text())
    d["scale_up"] = {**d["scale_up"], **scale_up}
    return d


def _write(tmp_path: Path, d: dict) -> str:
    path = tmp_path / "tpu.yaml"
    path.write_text(yaml.safe_dump(d))
    return str(path)


def test_send_recv_runs_on_a_neighbouring_pair():
    # One v5p ICI link: 9e10 B/s per direction (JAX scaling book tpus.md, ICI BW/link one-way; Google's
    # 1200 GB/s both ways / 2 / 6 links = 100 GB/s is the wire rate); T = S / b + 1 hop of 1 us.
    for extra in ([], ["--ranks", "2"]):
        r = _run("send_recv", "-c", "tpu-v5p-pod", "-s", "1GB", "--json", *extra)
        assert r.exit_code == 0, r.output
        out = json.loads(r.stdout)[0]
        assert out["n_ranks"] == 2 and out["slice"] == "2"
        assert out["time_s"] == pytest.approx(1e9 / 90e9 + 1e-6)
    # v5e: 4.5e10 B/s per link per direction (JAX scaling book, ICI BW/link one-way; the Cloud TPU v5e
    # docs' 400 / 2 / 4 = 50 GB/s is the wire rate).
    r = _run("send_recv", "-c", "tpu-v5e-pod", "-s", "1GB", "--json")
    assert json.loads(r.stdout)[0]["time_s"] == pytest.approx(1e9 / 45e9 + 1e-6)


@pytest.mark.parametrize("extra", [["--ranks", "4"], ["--slice", "2x2x1"]])
def test_send_recv_on_more_chips_says_what_to_give(extra):
    _refused(_run("send_recv", "-c", "tpu-v5p-pod", "-s", "1GiB", *extra), "give --ranks 2")


def test_v5p_pod_defaults_to_the_largest_slice_and_says_so():
    # Cloud TPU v5p docs: largest single slice 16x16x24 = 6,144 chips of the 8,960-chip pod.
    r = _run("all_reduce", "-c", "tpu-v5p-pod", "-s", "1GiB")
    assert r.exit_code == 0
    assert "TPU slice 16x16x24 (torus 16, torus 16, torus 24)" in r.stdout
    assert "running on the largest slice, 16x16x24" in r.stdout
    r = _run("all_reduce", "-c", "tpu-v5p-pod", "-s", "1GiB", "--json")
    out = json.loads(r.stdout)[0]
    assert (out["n_ranks"], out["slice"]) == (6144, "16x16x24")
    # the same answer as asking for it
    same = json.loads(
        _run("all_reduce", "-c", "tpu-v5p-pod", "-s", "1GiB", "--json", "--slice", "16x16x24").stdout
    )
    assert same[0]["time_s"] == out["time_s"]


def test_whole_v5p_pod_is_refused_with_the_largest_slice():
    _refused(
        _run("all_reduce", "-c", "tpu-v5p-pod", "-s", "1GiB", "--ranks", "8960"),
        "ranks: 8960 chips (the whole 16x20x28 pod) make no tpu-v5p slice; the largest holds 6144 chips",
    )


def test_v5e_pod_reports_two_axes():
    r = _run("all_gather", "-c", "tpu-v5e-pod", "-s", "1GiB", "--json")
    out = json.loads(r.stdout)[0]
    assert (out["slice"], out["slice_wraparound"]) == ("16x16", [True, True])
    given = json.loads(
        _run("all_gather", "-c", "tpu-v5e-pod", "-s", "1GiB", "--json", "--slice", "16x16").stdout
    )
    assert given[0]["slice"] == "16x16" and given[0]["time_s"] == out["time_s"]
    assert (
        "TPU slice 16x16 (torus 16, torus 16)\n"
        in _run("all_gather", "-c", "tpu-v5e-pod", "-s", "1GiB").stdout
    )


def test_yaml_slice_sets_the_ranks_and_cli_slice_overrides_it(tmp_path):
    path = _write(tmp_path, _pod("tpu-v5p-pod", slice=[4, 4, 8]))
    r = _run("all_reduce", "-c", path, "-s", "1GiB", "--json")
    assert r.exit_code == 0, r.output
    assert (json.loads(r.stdout)[0]["n_ranks"], json.loads(r.stdout)[0]["slice"]) == (128, "4x4x8")
    r = _run("all_reduce", "-c", path, "-s", "1GiB", "--json", "--slice", "4x4x4")
    assert (json.loads(r.stdout)[0]["n_ranks"], json.loads(r.stdout)[0]["slice"]) == (64, "4x4x4")


def test_two_d_generation_refuses_a_three_d_torus(tmp_path):
    d = _pod("tpu-v5e-pod", gpus=8960, torus_dims=[16, 20, 28])
    d["gpus"] = 8960
    with pytest.raises(
        ConfigError, match=r"scale_up.torus_dims: tpu-v5e is a 2-D torus of at most 256 chips"
    ):
        ClusterSpec.from_dict(d)
    _refused(_run("all_reduce", "-c", _write(tmp_path, d), "-s", "1GiB"), "scale_up.torus_dims: tpu-v5e")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        # Cloud TPU v5e docs: 16 GB HBM per chip; 100 GiB and 16 GiB (17.18 GB) are both over.
        (["-s", "100GiB"], "--size: 107.4 GB is more than the 16 GB HBM of one tpu-v5e chip"),
        (["-s", "16GiB"], "--size: 17.18 GB is more than the 16 GB HBM"),
        (["--min", "1GiB", "--max", "32GiB"], "--max: 34.36 GB is more than the 16 GB HBM"),
        (["--min", "16.5GB"], "--min: 16.5 GB is more than the 16 GB HBM"),
    ],
)
def test_a_message_over_the_chips_hbm_is_refused(args, needle):
    _refused(_run("all_gather", "-c", "tpu-v5e-pod", *args), needle)


def test_default_sweep_stops_at_the_hbm():
    r = _run("all_gather", "-c", "tpu-v5e-pod", "--min", "1GiB", "--json")
    assert [x["message_bytes"] for x in json.loads(r.stdout)] == [
        2**30,
        2**31,
        2**32,
        2**33,
    ]  # 16 GiB > 16 GB
    assert _run("all_gather", "-c", "tpu-v5e-pod", "-s", "16GB").exit_code == 0


def test_proto_other_than_simple_is_refused_naming_proto():
    _refused(
        _run("all_reduce", "-c", "tpu-v5p-pod", "--slice", "4x4x4", "-s", "1GiB", "--proto", "LL"),
        "--proto: LL does not apply on a TPU torus; possible: Simple",
    )
    assert (
        _run(
            "all_reduce", "-c", "tpu-v5p-pod", "--slice", "4x4x4", "-s", "1GiB", "--proto", "Simple"
        ).exit_code
        == 0
    )


def test_bidirectional_convention_is_refused_on_a_torus():
    _refused(
        _run(
            "all_reduce",
            "-c",
            "tpu-v5p-pod",
            "--slice",
            "4x4x4",
            "-s",
            "1GiB",
            "--convention",
            "bidirectional",
        ),
        "--convention: bidirectional is NVLink vendor arithmetic",
    )

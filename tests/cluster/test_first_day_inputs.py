"""What a new cluster's file and an announcement may say, and how each mistake is refused with the way out:
a catalogue link written as the scale-up kind, NVLink's bytes figure typed in bits, a figure that names its
network, the tables an unrecorded NCCL release is priced with."""

import pytest

from aifabric.cluster.headlines import check_claims, extract_claims
from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.summary import summarize
from aifabric.collectives.tiers import tier_model

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py


def _spec(**scale_up: object) -> ClusterSpec:
    return ClusterSpec.from_dict({"name": "x", "accelerator": "h100-sxm", "nodes": 2, "scale_up": scale_up})


@pytest.mark.parametrize("kind", ["nvlink5-gb200-nvl4", "mesh"])
def test_a_kind_that_is_a_link_or_none_says_how_a_mesh_is_declared(kind):
    # a switchless mesh is a full-mesh catalogue link (scaleup.yaml topology: full_mesh) under kind nvswitch
    with pytest.raises(ValueError, match=r"scale_up.kind") as err:
        _spec(kind=kind)
    assert "'kind: nvswitch" in str(err.value) and "nvlink5-gb200-nvl4" in str(err.value)


@pytest.mark.parametrize("figure", ["900 Gb/s", "900 Gbps", "900 Gbit/s"])
def test_nvlink_bytes_figure_typed_in_bits_is_refused(figure):
    # NVIDIA H100 datasheet: "NVLink 900GB/s"; 900 Gb/s would be 112.5 GB/s, below PCIe Gen5 x16 (128 GB/s)
    with pytest.raises(ValueError, match=r"did you mean '900 GB/s' \(bytes\)") as err:
        _spec(kind="nvswitch", bandwidth=figure)
    assert "NVLink 4" in str(err.value)


def test_nvlink_figure_written_correctly_in_bits_is_read():
    # 900 GB/s both ways = 7.2 Tb/s: the same link in bits, read as 900 GB/s (450 GB/s each way)
    spec = _spec(kind="nvswitch", bandwidth="7.2 Tb/s")
    assert spec.scale_up.bandwidth_bytes_per_s == pytest.approx(900e9)


def test_a_figure_naming_its_network_is_held_against_that_network_only():
    # GB200 NVL72: 72 x 8 TB/s = 576 TB/s of HBM bandwidth, 72 x 1.8 TB/s = 129.6 TB/s of NVLink (NVIDIA's
    # GB200 NVL72 page). 576 TB/s "of NVLink" is not the HBM's figure; 576 TB/s "of memory bandwidth" is.
    s = summarize(preset("gb200-nvl72", gpus=72))
    nvlink, memory, bare = check_claims(s, extract_claims("576 TB/s of NVLink, 576 TB/s of memory, 576 TB/s"))
    assert nvlink.status == "differs" and "129.6 TB/s" in nvlink.note
    assert memory.status == "matches" and memory.figure is not None and memory.figure.network == "memory"
    assert bare.status == "matches"


def test_an_unrecorded_release_names_the_recorded_tables_and_a_recorded_one_none():
    # nccl_releases.yaml records 2.25.1 then 2.27.3: 2.26.2 runs 2.25.1's tables
    spec = preset("dgx-h100-superpod", nodes=2)
    (note,) = tier_model(spec, nccl_version="2.26.2").tables_notes
    assert "recorded at 2.25.1" in note
    assert tier_model(spec, nccl_version="2.25.1").tables_notes == ()
    assert tier_model(spec).tables_notes == ()

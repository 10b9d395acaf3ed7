"""The cloud instance a log or topology file names brings its NIC speed and count when the file gives none
(discovery/instances.py; catalog/data/cloud_instances.yaml)."""

from __future__ import annotations

import pytest
from tests.discovery.test_evidence_compare import _log

from aifabric.discovery.compare import compare_nccl_tests
from aifabric.discovery.instances import instance_with_nics, instances_in_text


def test_instances_are_found_in_order_and_matched_to_the_gpu() -> None:
    text = "bench on p4d.24xlarge\nthen 2 x ND96isr_H100_v5 and an a3-megagpu-8g"
    found = instances_in_text(text)
    assert [(m.instance.key, m.line) for m in found] == [("p4d", 1), ("azure-ndv5", 2), ("gcp-a3-mega", 2)]
    # two H100 instances: the first named wins; an instance of another GPU says nothing of this one's NICs
    assert instance_with_nics("h100-sxm", found).instance.key == "azure-ndv5"
    assert instance_with_nics("b200", found) is None
    # an instance whose page gives no port speed (p6-b200: 3200 Gbps EFAv4, no interface count) brings none
    assert instance_with_nics("b200", instances_in_text("p6-b200.48xlarge")) is None


@pytest.mark.parametrize(
    ("named", "gbps", "sharing"),
    [
        # AWS EC2 P5 page: p5.48xlarge 3200 Gbps as 32 x 100 Gb/s EFA, 4 per H100
        ("2 x p5.48xlarge", 100, {"nics_per_gpu": 4, "gpus_per_nic": 1}),
        # Azure ND H100 v5 page: 8 x 400 Gb/s NDR, one per GPU
        ("2 x ND96isr_H100_v5", 400, {"nics_per_gpu": 1, "gpus_per_nic": 1}),
        # GCP A3 High: 4 x 200 Gb/s NICs per VM (GKE GPUDirect-TCPX docs), 2 H100s a NIC
        ("2 x a3-highgpu-8g", 200, {"nics_per_gpu": 1, "gpus_per_nic": 2}),
    ],
)
def test_compare_takes_the_nics_of_the_instance_the_log_names(named: str, gbps: int, sharing: dict) -> None:
    # the log's rank lines say H100 on 2 nodes of 8; the text above the table names the instance
    table = compare_nccl_tests(f"# {named}\n" + _log([], 300.0)).tables[0]
    so = table.spec.scale_out
    assert so.nic_speed_bytes_per_s == pytest.approx(gbps * 1e9 / 8)
    assert {"nics_per_gpu": so.nics_per_gpu, "gpus_per_nic": so.gpus_per_nic} == sharing
    notes = table.assumptions
    assert any(f"{gbps} Gb/s per NIC from" in a and "give --nic-speed to override" in a for a in notes)
    assert not any("400 Gb/s NIC per GPU assumed" in a for a in notes)


def test_an_explicit_nic_speed_and_an_unnamed_instance_keep_their_rules() -> None:
    log = "# 2 x p5.48xlarge\n" + _log([], 300.0)
    given = compare_nccl_tests(log, nic_speed="200 Gb/s").tables[0]
    assert given.spec.scale_out.nic_speed_bytes_per_s == pytest.approx(25e9)
    assert given.spec.scale_out.nics_per_gpu == 1 and not any("per NIC from" in a for a in given.assumptions)
    bare = compare_nccl_tests(_log([], 300.0)).tables[0]
    assert bare.spec.scale_out.nic_speed_bytes_per_s == pytest.approx(50e9)
    assert any("one 400 Gb/s NIC per GPU assumed (give --nic-speed)" in a for a in bare.assumptions)
    # a p4d (A100) named above an H100 log says nothing of its NICs
    other = compare_nccl_tests("# p4d.24xlarge\n" + _log([], 300.0)).tables[0]
    assert other.spec.scale_out.nic_speed_bytes_per_s == pytest.approx(50e9)


def test_a_text_naming_no_instance_is_scanned_once() -> None:
    # the one scan of every pattern finds what the patterns one by one find: nothing, or the instances
    assert instances_in_text("8 x H100 — xp5.48xlarge, p5.48xlargex") == ()
    found = instances_in_text("— on p5.48xlarge then ND96asr_v4")
    assert [(m.instance.key, m.written, m.line) for m in found] == [("p5", "p5.48xlarge", 1),
                                                                 ("azure-ndv4", "ND96asr_v4", 1)]  # fmt: skip

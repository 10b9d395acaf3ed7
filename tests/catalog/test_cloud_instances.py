"""Cloud instance types carry the NICs their vendor pages state (catalog/data/cloud_instances.yaml)."""

from __future__ import annotations

import pytest

from aifabric import catalog
from aifabric.catalog.cloud import cloud_instances

#: Scale-out bandwidth per instance, Gb/s, as each vendor page states it (the ``source`` of each entry):
#: AWS EC2 P4 / P5 instance pages (p4d/p4de 400 Gbps EFA, p5/p5e/p5en 3200 Gbps), Azure ND A100 v4 / ND H100
#: v5 / ND H200 v5 / ND GB200 v6 series pages (8 x 200 HDR, 8 x 400 NDR, 4 x 400 NDR), Google Cloud (A3 Mega
#: 8 x 200, A3 High 4 x 200, A3 Ultra and A4 8 x 400, A4X 4 x 400).
STATED_GBPS = {
    "p4de": 400,
    "p4d": 400,
    "p5en": 3200,
    "p5e": 3200,
    "p5": 3200,
    "azure-ndv4": 1600,
    "azure-ndmv4": 1600,
    "azure-ndv5-h200": 3200,
    "azure-ndv5": 3200,
    "azure-nd-gb200": 1600,
    "gcp-a3-ultra": 3200,
    "gcp-a3-mega": 1600,
    "gcp-a3-high": 800,
    "gcp-a4x": 1600,
    "gcp-a4": 3200,
}


def test_port_speed_times_port_count_is_the_stated_instance_bandwidth() -> None:
    by_key = {i.key: i for i in cloud_instances()}
    for key, gbps in STATED_GBPS.items():
        inst = by_key[key]
        assert inst.nic_speed_bytes_per_s is not None and inst.nics is not None, key
        assert inst.nic_speed_bytes_per_s * 8 / 1e9 * inst.nics == pytest.approx(gbps), key


def test_fields_are_catalogue_keys_and_left_out_where_the_page_is_silent() -> None:
    for inst in cloud_instances():
        catalog.accelerator(inst.accelerator)
        if inst.nic is not None:
            part = catalog.nic(inst.nic)
            # the NIC part runs at the port speed the instance states
            assert part.line_rate_bytes_per_s == pytest.approx(inst.nic_speed_bytes_per_s), inst.key
        if inst.transport is not None:
            assert catalog.transport(inst.transport).scope == "net", inst.key
        assert (inst.nic_speed_bytes_per_s is None) == (inst.key not in STATED_GBPS), inst.key
    # p6-b200: 3200 Gbps EFAv4 on the page, but not its interface count: no port speed is guessed
    p6 = next(i for i in cloud_instances() if i.key == "p6-b200")
    assert (p6.nic_speed_bytes_per_s, p6.nics, p6.transport) == (None, None, "efa-srd")

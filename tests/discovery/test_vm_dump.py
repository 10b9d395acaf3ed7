"""A VM's NCCL topology dump is not modelled as an NVSwitch board (issue 9 item 4; trial 9 item 12).

Trial 9's dump lists two sm 80 GPUs directly under the CPU with no PCIe switch and no NVLink: the VM warning
was given, yet "NVSwitch board assumed" predicted 240 GB/s for one node. NCCL lists the NVLinks it finds
(``graph/xml.cc``); a VM that hides them connects the GPUs over PCIe or host memory.
"""

from __future__ import annotations

from pathlib import Path

from aifabric.discovery.node import inspect_node_text

VM_XML = (Path(__file__).parent / "data" / "trial9" / "vm_two_gpus_off_cpu.xml").read_text()


def test_a_vm_dump_is_modelled_over_pcie_and_says_so() -> None:
    (node,) = inspect_node_text(VM_XML, source="vm.xml")
    assert "vm" in {w.code for w in node.warnings}
    assert node.spec.scale_up.kind != "nvswitch"
    assert any("(a VM): no NVSwitch board assumed" in note for note in node.assumptions)
    assert not any("NVSwitch board assumed (" in note for note in node.assumptions)

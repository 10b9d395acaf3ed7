"""The cloud instance a file names, and the NICs its vendor page gives when the file carries no NIC speed.

NCCL topology files of cloud VMs often leave the NIC speed out (Azure's ``ndv4-topo.xml``: NCCL reads it
from the IB device at run time, case 17) and nccl-tests logs never print it, but the text around them often
names the instance (``ND96asr_v4``, ``a4-highgpu-8g``). ``catalog/data/cloud_instances.yaml`` gives each
instance's NIC port speed and count from its vendor page (:mod:`aifabric.catalog.cloud`). Order of precedence
where a NIC speed is needed: the caller's ``--nic-speed``, a speed the file itself carries, the instance the
file names for the GPU modelled, then the stated default.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from aifabric.catalog.cloud import CloudInstance, cloud_instances

__all__ = ["InstanceMention", "instance_nic_note", "instance_with_nics", "instances_in_text"]


@dataclass(frozen=True)
class InstanceMention:
    """A cloud instance type named in a text: the catalogue entry, the words as written and the 1-based
    line."""

    instance: CloudInstance
    written: str
    line: int


def instances_in_text(text: str) -> tuple[InstanceMention, ...]:
    """Every recorded cloud instance type a text names, once each, in order of first appearance.

    >>> found = instances_in_text("x\\nan ND96asr_v4 VM, a p5.48xlarge")
    >>> [(m.instance.key, m.written, m.line) for m in found]
    [('azure-ndv4', 'ND96asr_v4', 2), ('p5', 'p5.48xlarge', 2)]
    """
    instances = cloud_instances()
    if not instances or _any_instance(instances).search(text) is None:
        return ()
    found = []
    for order, instance in enumerate(instances):
        match = re.search(rf"\b(?:{instance.pattern})\b", text, re.IGNORECASE)
        if match:
            found.append((match.start(), order, match.group(0), instance))
    found.sort(key=lambda f: (f[0], f[1]))
    return tuple(
        InstanceMention(inst, written, text.count("\n", 0, start) + 1) for start, _, written, inst in found
    )


@cache
def _any_instance(instances: tuple[CloudInstance, ...]) -> re.Pattern[str]:
    """Every instance's pattern in one: it matches a text wherever one of them does (a regular expression
    tries each alternative at each position), so a text it does not match names no instance.

    Optimisation: a log scanned for all 17 patterns one after the other took ~9 ms per table of a
    20 kB log (nccl-tests compare of case 03, seven tables); the one scan ~1.4 ms.
    """
    alternatives = "|".join(f"(?:{i.pattern})" for i in instances)
    return re.compile(rf"\b(?:{alternatives})\b", re.IGNORECASE)


def instance_with_nics(accelerator: str, mentions: Sequence[InstanceMention]) -> InstanceMention | None:
    """The first named instance that carries ``accelerator`` (catalogue key) and whose page gives its NIC
    speed; None when there is none (an instance of another GPU says nothing of this node's NICs).

    >>> ndv4 = instances_in_text("NDv5 and NDv4 VMs")
    >>> instance_with_nics("a100-sxm-40gb", ndv4).instance.key, instance_with_nics("b200", ndv4)
    ('azure-ndv4', None)
    """
    return next(
        (
            m
            for m in mentions
            if m.instance.accelerator == accelerator and m.instance.nic_speed_bytes_per_s is not None
        ),
        None,
    )


def instance_nic_note(mention: InstanceMention, where: str) -> str:
    """The sentence saying which NICs were taken from the instance ``mention`` names (line of ``where``).

    >>> m = instances_in_text("an ND96asr_v4 VM")[0]
    >>> instance_nic_note(m, "the file")  # doctest: +NORMALIZE_WHITESPACE
    "NIC speed not in the input: 200 Gb/s per NIC from 'ND96asr_v4' (the file line 1: azure-ndv4, 8 NICs
    per instance, catalog/data/cloud_instances.yaml); give --nic-speed to override"
    """
    inst = mention.instance
    count = f", {inst.nics} NICs per instance" if inst.nics is not None else ""
    runs = inst.transport
    plugin = (
        f"; its NCCL transport {runs} is not applied (a spec with scale_out.transport: {runs} applies it)"
        if runs not in (None, "ib-verbs")
        else ""
    )
    return (
        f"NIC speed not in the input: {inst.nic_speed_text} per NIC from {mention.written!r} ({where} line "
        f"{mention.line}: {inst.key}{count}, catalog/data/cloud_instances.yaml); give --nic-speed to "
        f"override{plugin}"
    )

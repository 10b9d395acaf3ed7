"""The hardware catalogue: every figure with its source, loaded into SI units.

Parts (:mod:`aifabric.catalog.loader`, merged with user catalogue files and inline cluster parts), NCCL's
tuning tables per release (:mod:`aifabric.catalog.nccl`) and transports with the NCCL environment that
steers them (:mod:`aifabric.catalog.transport`).
"""

from aifabric.catalog.loader import (
    AcceleratorSpec,
    CpuSpec,
    DciSpec,
    NicSpec,
    OpticSpec,
    ScaleUpSpec,
    StorageSystemSpec,
    SwitchSpec,
    SystemPowerSpec,
    accelerator,
    add_parts,
    catalog_names,
    catalog_sources,
    cpu,
    cpu_for_cpuid,
    dci,
    default_leaf_switch,
    module_at,
    nic,
    optic,
    optic_for_speed,
    reload_catalog,
    scaleup,
    storage,
    switch,
    system_power,
    use_catalog_files,
)
from aifabric.catalog.nccl import NcclRelease, nccl_release, nccl_release_versions
from aifabric.catalog.rccl import rccl_release, rccl_release_versions
from aifabric.catalog.transport import NcclEnv, TransportSpec, resolve_transport, transport, transport_names

__all__ = [
    "AcceleratorSpec",
    "CpuSpec",
    "NcclEnv",
    "NcclRelease",
    "DciSpec",
    "NicSpec",
    "OpticSpec",
    "ScaleUpSpec",
    "StorageSystemSpec",
    "SwitchSpec",
    "TransportSpec",
    "SystemPowerSpec",
    "accelerator",
    "add_parts",
    "catalog_names",
    "catalog_sources",
    "cpu",
    "cpu_for_cpuid",
    "nccl_release",
    "nccl_release_versions",
    "rccl_release",
    "rccl_release_versions",
    "dci",
    "default_leaf_switch",
    "nic",
    "optic",
    "module_at",
    "optic_for_speed",
    "reload_catalog",
    "resolve_transport",
    "scaleup",
    "storage",
    "switch",
    "transport",
    "transport_names",
    "use_catalog_files",
    "system_power",
]

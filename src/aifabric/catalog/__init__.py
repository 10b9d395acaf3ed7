"""The hardware catalogue: every figure with its source, loaded into SI units."""

from aifabric.catalog.loader import (
    AcceleratorSpec,
    NicSpec,
    OpticSpec,
    ScaleUpSpec,
    SwitchSpec,
    accelerator,
    catalog_names,
    nic,
    optic,
    optic_for_speed,
    scaleup,
    switch,
)

__all__ = [
    "AcceleratorSpec",
    "NicSpec",
    "OpticSpec",
    "ScaleUpSpec",
    "SwitchSpec",
    "accelerator",
    "catalog_names",
    "nic",
    "optic",
    "optic_for_speed",
    "scaleup",
    "switch",
]

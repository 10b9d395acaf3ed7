"""Exports of a cluster to other simulators, and readers of those files (for round trips).

- :mod:`~aifabric.interop.graph`: the Topology as undirected cables (the common ground of every format);
- :mod:`~aifabric.interop.ns3`: ASTRA-sim's ns-3 backend topology file and SimAI's variant of it;
- :mod:`~aifabric.interop.astra`: ASTRA-sim's analytical network YAML;
- :mod:`~aifabric.interop.htsim`: htsim's fat-tree ``.topo``;
- :mod:`~aifabric.interop.chakra`: Chakra execution traces (ASTRA-sim's workload) of a collective or a
  training step, and their reader;
- :mod:`~aifabric.interop.export`: one front door, :func:`~aifabric.interop.export.export_cluster`.

The formats and their sources are described in ``docs/interop.md``.
"""

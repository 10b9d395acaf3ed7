"""One front door for the exports: :func:`export_cluster` writes a cluster in another simulator's format.

=========  ==========================================================================================
format     files
=========  ==========================================================================================
astra-sim  ``network.yml`` (analytical backend, :mod:`~aifabric.interop.astra`) and ``topology.txt``
           (ns-3 backend: every GPU, switch and cable, :mod:`~aifabric.interop.ns3`)
htsim      ``cluster.topo`` (fat tree of the scale-out, :mod:`~aifabric.interop.htsim`), ``hosts.csv``
           (htsim host -> GPU id) and, given a collective, ``collective.cm`` (its scale-out flows)
simai      ``topology.txt`` (SimAI's ns-3 variant, :mod:`~aifabric.interop.ns3`)
=========  ==========================================================================================
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.topology import Topology, build_topology
from aifabric.collectives.algorithms import build_plan
from aifabric.errors import ConfigError
from aifabric.interop.astra import analytical_network, write_analytical
from aifabric.interop.graph import cables
from aifabric.interop.htsim import host_order, write_connection_matrix, write_htsim
from aifabric.interop.ns3 import write_ns3, write_simai

__all__ = ["FORMATS", "SITE_FORMATS", "export_cluster"]


def _astra(topo: Topology, out: Path) -> list[Path]:
    return [
        write_analytical(analytical_network(topo), out / "network.yml"),
        write_ns3(cables(topo), out / "topology.txt"),
    ]


def _htsim(topo: Topology, out: Path) -> list[Path]:
    topo_file = write_htsim(topo, out / "cluster.topo")
    hosts = out / "hosts.csv"
    hosts.write_text("host,gpu\n" + "".join(f"{h},{g}\n" for h, g in enumerate(host_order(topo).tolist())))
    return [topo_file, hosts]


def _simai(topo: Topology, out: Path) -> list[Path]:
    spec = topo.spec
    gpu_type = spec.accelerator.split("-")[0].upper()
    return [
        write_simai(cables(topo), out / "topology.txt", gpus_per_server=spec.gpus_per_node, gpu_type=gpu_type)
    ]


#: Formats whose files carry a cluster split over sites (``sites:``): ASTRA-sim's analytical network has a
#: dimension of the sites (:func:`~aifabric.interop.astra.analytical_network`). htsim's fat tree and SimAI's
#: cable list have no long-haul link: a multi-site cluster written there would run as one site, the fibre
#: between the sites (the DCI transport's fibre delay) gone, so they refuse it.
SITE_FORMATS: frozenset[str] = frozenset({"astra-sim"})

#: Export format -> writer (one registry; the CLI's choices read it).
FORMATS: dict[str, Callable[[Topology, Path], list[Path]]] = {
    "astra-sim": _astra,
    "htsim": _htsim,
    "simai": _simai,
}


def export_cluster(
    spec: ClusterSpec,
    fmt: str,
    out_dir: str | Path,
    *,
    collective: str | None = None,
    message_bytes: float | None = None,
) -> list[Path]:
    """Write ``spec`` in ``fmt`` into ``out_dir`` (created); returns the files written.

    With ``collective`` (and ``message_bytes``, nccl-tests size), htsim also gets the collective over every
    GPU as a connection matrix (:func:`~aifabric.interop.htsim.write_connection_matrix`, decomposition of
    :func:`~aifabric.collectives.plan.build_plan`); the other formats refuse it.

    Raises
    ------
    ConfigError
        An unknown format, a torus cluster, a cluster over several sites outside :data:`SITE_FORMATS`, or a
        cluster the format cannot express (named in the message).
    ValueError
        ``out_dir`` is a file or cannot be created.
    """
    writer = FORMATS.get(fmt)
    if writer is None:
        raise ConfigError(f"--format: unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    if collective is not None and fmt != "htsim":
        raise ConfigError(f"--collective: only --format htsim exports a workload (not {fmt})")
    if collective is not None and (message_bytes is None or message_bytes <= 0):
        raise ValueError(f"--size: a collective needs a size > 0, got {message_bytes}")
    if spec.scale_up.kind == "torus":
        raise ConfigError(f"--format {fmt}: {spec.name} is a torus; only switched clusters are exported")
    sites = spec.sites
    if sites is not None and fmt not in SITE_FORMATS:
        raise ConfigError(
            f"--format {fmt}: {spec.name} spans {sites.count} sites {sites.distance_km:g} km apart; "
            f"{fmt} has no link between sites (astra-sim carries them)"
        )
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out: {str(out)!r} is a file, not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(f"--out: cannot create {str(out)!r}: {err.strerror}") from err
    topo = build_topology(spec)
    files = writer(topo, out)
    if collective is not None and message_bytes is not None:
        plan = build_plan(collective, message_bytes, spec, np.arange(spec.n_gpus))
        files.append(write_connection_matrix(plan, topo, out / "collective.cm"))
    return files

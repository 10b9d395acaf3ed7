"""Link-utilisation heatmaps per tier (PNG), kept out of the simulator core."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from aifabric.cluster.topology import Topology
from aifabric.report.paths import check_plot_path, save_figure

__all__ = ["tier_matrices", "utilisation_heatmap"]


def tier_matrices(topo: Topology, util: np.ndarray) -> dict[str, np.ndarray]:
    """Utilisation arranged per tier as (switch x port) matrices, max of both directions, plane 0.

    - ``GPU-NIC uplink`` : (nodes, GPUs per node)
    - ``leaf-spine`` : (leaves, uplinks per leaf)
    - ``spine-core`` : (spines, uplinks per spine)
    - ``scale-up`` : (domains, GPUs per domain)
    """
    spec = topo.spec
    out: dict[str, np.ndarray] = {}
    if topo.is_mesh:
        out["scale-up (GPU-GPU mesh)"] = _mesh_matrix(topo, util)
    elif topo.gpu_up.size and topo.gpu_up[0] >= 0:
        m = np.maximum(util[topo.gpu_up], util[topo.gpu_down])
        out["scale-up (GPU-NVSwitch)"] = m.reshape(-1, spec.domain_gpus)
    if topo.shape is not None:
        m = np.maximum(util[topo.nic_up[0]], util[topo.nic_down[0]])
        out["NIC-leaf"] = m.reshape(-1, spec.gpus_per_node)
        if topo.leaf_uplinks.size:
            out["leaf-spine"] = np.maximum(util[topo.leaf_uplinks[0]], util[topo.leaf_downlinks[0]])
        if topo.spine_uplinks.size:
            out["spine-core"] = np.maximum(util[topo.spine_uplinks[0]], util[topo.spine_downlinks[0]])
    return out


def _mesh_matrix(topo: Topology, util: np.ndarray) -> np.ndarray:
    """(domains, GPUs per domain): each GPU's most utilised mesh link, either direction."""
    g = topo.spec.domain_gpus
    gpus = np.arange(topo.n_gpus)
    m = np.zeros(topo.n_gpus)
    for k in range(1, g):  # peer k places further round the domain: every pair once each way
        peer = gpus - gpus % g + (gpus + k) % g
        (out,) = topo.scale_up_hops(gpus, peer)
        m = np.maximum(m, np.maximum(util[out], util[topo.link_reverse[out]]))
    return m.reshape(-1, g)


def utilisation_heatmap(topo: Topology, util: np.ndarray, path: str | Path, *, title: str = "") -> Path:
    """Write a PNG with one heatmap per tier (utilisation 0..1 over the run). Returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mats = tier_matrices(topo, util)
    fig, axes = plt.subplots(
        1, len(mats), figsize=(4.2 * len(mats), 4.6), squeeze=False, layout="constrained"
    )
    im = None
    for ax, (name, m) in zip(axes[0], mats.items(), strict=True):
        im = ax.imshow(m, aspect="auto", vmin=0.0, vmax=1.0, cmap="viridis", interpolation="nearest")
        ax.set_title(f"{name}\nmean of all links {m.mean():.0%}, max {m.max():.0%}", fontsize=9)
        ax.set_xlabel("port")
        ax.set_ylabel("switch / node")
    if im is not None:
        fig.colorbar(im, ax=axes[0].tolist(), label="utilisation (bytes / capacity x time)")
    fig.suptitle(title, fontsize=10)
    p = check_plot_path(path)
    save_figure(fig, p, "--plot", 110)
    return p

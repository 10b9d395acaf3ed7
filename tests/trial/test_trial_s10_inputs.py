"""Input defects a trial of user catalogue files and cluster files found: each test runs one command; its
docstring holds the command, what it printed and what it should do (README: a part is written "like the
shipped ones", and bad input exits 2 with one line naming the field and the value)."""

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

#: catalog/data/scaleup.yaml's nvlink4 entry (900 GB/s both ways, 18 links, NCCL's 20.6 GB/s per link,
#: NVLink SHARP), copied as a user would, with the fields each test changes.
NVLINK4_LIKE = {
    "name": "My NVLink-like link with an NVSwitch",
    "per_gpu_bidirectional": "900 GB/s",
    "links_per_gpu": 18,
    "nccl_effective_per_link": "20.6 GB/s",
    "in_switch_reduction": True,
    "nvls_efficiency": 0.85,
    "hop_latency": "0.6 us",
    "source": "copied from the shipped nvlink4 entry for a trial",
}

#: catalog/data/accelerators.yaml's h100-sxm entry on the link above.
H100_LIKE = {
    "name": "My H100-like GPU",
    "arch": "hopper",
    "peak_bf16_flops": 989e12,
    "hbm_capacity": "80 GB",
    "hbm_bandwidth": "3350 GB/s",
    "nvlink": "mylink",
    "nvlink_links": 18,
    "pcie": "gen5",
    "nvls": True,
    "source": "copied from the shipped h100-sxm entry for a trial",
}


def _node_with_link(tmp_path: Path, links: int = 18, **link: object) -> list[str]:
    """A catalogue with ``mylink`` (NVLINK4_LIKE updated by ``link``; a None value drops the field) and an
    8-GPU node of ``myacc`` on ``links`` of them; returns the arguments that select both."""
    fields = {k: v for k, v in {**NVLINK4_LIKE, **link}.items() if v is not None}
    parts = {"scaleup": {"mylink": fields}, "accelerators": {"myacc": {**H100_LIKE, "nvlink_links": links}}}
    cat = tmp_path / "parts.yaml"
    cat.write_text(yaml.safe_dump(parts))
    cluster = {"name": "mynode", "accelerator": "myacc", "gpus_per_node": 8, "nodes": 1}
    cluster["scale_up"] = {"kind": "nvswitch"}
    path = tmp_path / "mynode.yaml"
    path.write_text(yaml.safe_dump(cluster))
    return ["--catalog", str(cat), "collective", "all_reduce", "-c", str(path), "-s", "1GiB"]


def _refused_or_at_most(args: list[str], field: str, key: str, bound: float) -> None:
    """``aifabric ARGS --json`` exits 2 naming ``field``, or runs with its ``key`` at most ``bound``."""
    r = runner.invoke(app, [*args, "--json"])
    if r.exit_code == 2:
        assert field in r.stderr, r.stderr
        return
    assert r.exit_code == 0, repr(r.exception)
    out = json.loads(r.stdout)
    out = out[0] if isinstance(out, list) else out
    assert out[key] <= bound, out[key]


def test_a_switch_link_without_nvls_efficiency_is_refused_or_runs(tmp_path):
    """``aifabric --catalog parts.yaml collective all_reduce -c mynode.yaml -s 1GiB``, the shipped nvlink4
    entry copied without its ``nvls_efficiency`` line (the loader gives it a default of 0.0) under an
    ``nvls: true`` GPU, ended in a traceback: "ZeroDivisionError: float division by zero" at
    ``nvls_fill_bytes(...) / alg`` (exit 1), on a plain all_reduce with no option forcing NVLS. An
    efficiency of 0 is no efficiency: the field must be required where ``in_switch_reduction`` is true (exit 2
    naming nvls_efficiency), or NVLS left out of the candidates; never a traceback."""
    r = runner.invoke(app, _node_with_link(tmp_path, nvls_efficiency=None))
    assert r.exit_code in (0, 2), repr(r.exception)
    if r.exit_code == 2:
        assert "nvls_efficiency" in r.stderr, r.stderr


def test_a_negative_nvls_efficiency_is_refused_naming_it(tmp_path):
    """The same part with ``nvls_efficiency: -1`` and ``--algo nvls``: "ZeroDivisionError: float division by
    zero" at ``scale = result.time_s / floor`` (exit 1). NCCL's nvlsEfficiency (tuning.cc) is a fraction of
    the link rate, in (0, 1]; a negative value is bad input: exit 2 naming the field and the value."""
    r = runner.invoke(app, [*_node_with_link(tmp_path, nvls_efficiency=-1), "--algo", "nvls"])
    assert r.exit_code == 2, repr(r.exception)
    assert "nvls_efficiency" in r.stderr and "-1" in r.stderr, r.stderr


def test_nvls_never_reduces_faster_than_the_nvlinks_carry(tmp_path):
    """The same part with ``nvls_efficiency: 50`` (a typo of 0.50) and ``--algo nvls`` gave (``--json``) an
    algbw of 11,514 GB/s (on a 40 GB/s link, "algbw = 40.0 GB/s x efficiency 50.0 x (h-1)/h"). NVLS
    moves each byte over the GPU's NVLinks once each way, so its algbw cannot exceed the links' line rate per
    direction (900 / 2 = 450 GB/s for this part; NCCL's tuning.cc nvlsEfficiency is 0.85 on Hopper). The
    value must be refused (exit 2 naming nvls_efficiency) or the result bounded by the links."""
    args = [*_node_with_link(tmp_path, nvls_efficiency=50), "--algo", "nvls"]
    _refused_or_at_most(args, "nvls_efficiency", "algbw_bytes_per_s", 450e9)


def test_an_nccl_rate_above_the_line_rate_is_refused(tmp_path):
    """A scale-up part of 100 GB/s both ways over 4 links with ``nccl_effective_per_link: 100 GB/s`` (a
    per-GPU figure written per link) is accepted, and ``collective all_reduce`` on 8 such GPUs printed
    "busbw 395.29 GB/s (ring/Simple) ... on scale-up at 400.0 GB/s per GPU": eight times the 50 GB/s the
    links carry each way. Every shipped entry keeps links x NCCL's per-link rate under half the
    bidirectional figure (nvlink4: 18 x 20.6 = 370.8 <= 450 GB/s); a part that does not is bad input (exit
    2 naming nccl_effective_per_link), or the ring's busbw stays under the line rate."""
    args = _node_with_link(
        tmp_path,
        links=4,
        per_gpu_bidirectional="100 GB/s",
        links_per_gpu=4,
        nccl_effective_per_link="100 GB/s",
        in_switch_reduction=False,
        nvls_efficiency=None,
    )
    _refused_or_at_most([*args, "--algo", "ring"], "nccl_effective_per_link", "busbw_bytes_per_s", 50e9)


def test_a_nic_of_no_ports_is_refused(tmp_path):
    """A user NIC written like the shipped connectx-7 entry but with ``ports: 0`` is accepted, and
    ``aifabric --catalog parts.yaml collective all_reduce -c two.yaml -s 1GiB`` ran 2 x 8 H100 through it at
    the full 400 Gb/s ("busbw 441.06 GB/s"). A NIC of no ports connects nothing; the catalogue's switches
    already refuse fewer than 2 ports (``SwitchSpec.ports: ge=2``): exit 2 naming ports and 0."""
    nic = {
        "name": "My NIC",
        "speed": "400 Gb/s",
        "ports": 0,
        "power": "25 W",
        "payload_efficiency": 0.983,
        "latency": "2.7 us",
        "source": "copied from the shipped connectx-7 entry for a trial",
    }
    cat = tmp_path / "parts.yaml"
    cat.write_text(yaml.safe_dump({"nics": {"mynic": nic}}))
    cluster = {"name": "two", "accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 2}
    cluster["scale_up"] = {"kind": "nvswitch"}
    cluster["scale_out"] = {"nic": "mynic", "fabric": "infiniband", "switch": "quantum-2-qm9700", "tiers": 2}
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(cluster))
    r = runner.invoke(app, ["--catalog", str(cat), "collective", "all_reduce", "-c", str(path), "-s", "1GiB"])
    assert r.exit_code == 2, r.stdout
    assert "ports" in r.stderr and "0" in r.stderr, r.stderr


def test_one_host_thread_drives_only_the_gpus_of_its_node():
    """``aifabric collective all_reduce --nodes 2 -s 8 --gpus-per-thread 16 --launch-us 4.21`` printed "One
    thread launches 16 GPUs' kernels one after the other ... 16 x 4.21 us = 67.4 us per call on the host",
    and the call took the 67.4 us floor. nccl-tests' ``-g N`` gives one thread (one process's thread) N
    GPUs of its own node (nccl-tests README: "-g,--ngpus <GPUs per thread>"; a process runs on one host),
    so on 8-GPU nodes a thread drives at most 8; 16 already exits 2 on one node ("16 is more than the 8
    ranks of the call"). Across 2 nodes it must be refused the same way, naming --gpus-per-thread."""
    args = ["collective", "all_reduce", "--nodes", "2", "-s", "8", "--gpus-per-thread", "16"]
    r = runner.invoke(app, [*args, "--launch-us", "4.21"])
    assert r.exit_code == 2, r.stdout
    assert "--gpus-per-thread" in r.stderr and "16" in r.stderr, r.stderr

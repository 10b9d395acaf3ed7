"""A node's CPU sockets: the catalogue CPU family (NCCL's inter-socket figure, topo.h), its vendor, and the
GPUs split between the sockets; the readers infer the sockets from the GPUs' NUMA nodes."""

import pytest
from tests.discovery.conftest import CASE_17
from tests.discovery.test_topologies import CASE_26, inspect_node_text, read_case

from aifabric import catalog
from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.engines.formula import formula_collective
from aifabric.errors import ConfigError

GiB = 2**30


def _node(gpus: int = 8, **extra) -> ClusterSpec:
    pcie = {"kind": "pcie", "link": "pcie-gen5", "p2p_through_cpu": True}
    data = {"name": "pcie", "accelerator": "rtx-pro-6000-blackwell", "gpus_per_node": gpus, "nodes": 1}
    return ClusterSpec.model_validate({**data, "scale_up": pcie, "scale_out": None, **extra})


def test_family_sets_the_vendor_and_nccl_figure():
    spec = _node(cpu="amd-epyc", cpu_sockets=2)
    # topo.h AMD_BW 16.0 GB/s; GPUs 0-3 on socket 0, 4-7 on socket 1
    assert spec.cpu_vendor == "amd"
    assert spec.socket_cpu is not None and spec.socket_cpu.inter_socket_nccl_bytes_per_s == 16e9
    assert (spec.gpus_per_socket, spec.gpus_span_sockets) == (4, True)


def test_one_gpu_per_socket_pair_still_spans_and_one_gpu_does_not():
    assert _node(2, cpu_sockets=2).gpus_span_sockets
    assert not _node(1, cpu_sockets=2).gpus_span_sockets
    assert not _node(8).gpus_span_sockets


def test_vendor_default_family_and_unknown_intel_model():
    # AMD, Arm: one figure for every CPU of the vendor (topo.cc); Intel's depends on the model
    assert _node(cpu_vendor="arm").socket_cpu.inter_socket_nccl_bytes_per_s == 6e9  # ARM_BW
    assert _node().socket_cpu is None


def test_family_of_another_vendor_is_refused_naming_both():
    with pytest.raises(ValueError, match="cpu: 'amd-epyc' is made by amd but cpu_vendor is 'intel'"):
        _node(cpu="amd-epyc", cpu_vendor="intel")


def test_unknown_family_names_the_known_ones():
    with pytest.raises((ConfigError, ValueError), match="amd-epyc"):
        _node(cpu="epyc-9999")


def test_sockets_change_no_rate_and_say_what_nccl_searches():
    # The ring crosses AMD_BW 16 < Blackwell's slowest search speed 18: NCCL falls back to one channel in
    # GPU order. The path keeps its rate: 8 x RTX 5090 on two EPYC 9575F ring at 45.4 GB/s busbw over the
    # sockets (aikitoria README), NCCL's Gen5 48 GB/s within 10 % where 16 would miss by 65 %; the same
    # README measures Turin's cross-socket P2P writes at 55.6 GB/s (cpus.yaml amd-epyc-turin), above 48.
    env = {"NCCL_P2P_LEVEL": "SYS"}
    one = formula_collective("all_reduce", 16 * GiB, _node(cpu="amd-epyc-turin"), env=env)
    two = formula_collective("all_reduce", 16 * GiB, _node(cpu="amd-epyc-turin", cpu_sockets=2), env=env)
    assert two.busbw_bytes_per_s == pytest.approx(one.busbw_bytes_per_s)
    assert "no ring fits NCCL's slowest blackwell search speed (18 GB/s)" in two.explanation
    assert "CPU sockets" not in one.explanation


def test_turin_measures_its_socket_p2p_and_an_unstated_amd_takes_nccls_figure():
    # aikitoria README p2pBandwidthLatencyTest on 2 x EPYC 9575F: 55.59-55.65 GB/s P2P writes between
    # sockets; an EPYC of unstated generation has no measurement: NCCL's AMD_BW 16 GB/s (topo.h)
    turin = _node(cpu="amd-epyc-turin", cpu_sockets=2).socket_cpu
    assert turin is not None and turin.cross_socket_p2p_bytes_per_s == 55.6e9
    assert turin.inter_socket_nccl_bytes_per_s == 16e9  # NCCL's search figure stays AMD_BW in every release
    amd = _node(cpu_vendor="amd", cpu_sockets=2).socket_cpu
    assert amd is not None and amd.cross_socket_p2p_bytes_per_s == 16e9


def test_p2p_across_sockets_is_bounded_by_the_socket_figure():
    # 2 x A100 PCIe (Gen4 x16: NCCL's 24 GB/s) on two AMD sockets of unstated generation: the ring's hop
    # from one socket into the other carries at most 16 GB/s (AMD_BW), so every pattern runs at
    # min(24, 16) = 16; on one socket the GPUs' 24 stands
    pcie = {"kind": "pcie", "link": "pcie-gen4", "p2p_through_cpu": True, "peer_to_peer": True}
    data = {"name": "a100", "accelerator": "a100-pcie-40gb", "gpus_per_node": 2, "nodes": 1, "scale_up": pcie}
    one = ClusterSpec.model_validate({**data, "scale_out": None, "cpu_vendor": "amd"})
    two = one.with_changes(cpu_sockets=2)
    for op in ("all_reduce", "sendrecv", "alltoall", "broadcast"):
        assert formula_collective(op, 12 * GiB, two).busbw_bytes_per_s == pytest.approx(16e9, rel=1e-3)
        assert formula_collective(op, 12 * GiB, one).busbw_bytes_per_s == pytest.approx(24e9, rel=1e-3)
    r = formula_collective("all_reduce", 12 * GiB, two)
    assert "P2P across the CPU sockets, at most 16 GB/s (amd-epyc" in r.explanation


def test_shm_across_sockets_is_not_bounded_by_the_p2p_figure():
    # Host-memory DMA (SHM) is not peer-to-peer: NCCL_P2P_DISABLE=1 prices PCIe Gen5 64 GB/s x 0.6 alike
    # on one socket and across two
    env = {"NCCL_P2P_DISABLE": "1"}
    one = formula_collective("all_reduce", 16 * GiB, _node(2, cpu_vendor="amd"), env=env)
    two = formula_collective("all_reduce", 16 * GiB, _node(2, cpu_vendor="amd", cpu_sockets=2), env=env)
    assert two.busbw_bytes_per_s == pytest.approx(one.busbw_bytes_per_s)


def test_sockets_take_p2p_beyond_the_default_level():
    # Across sockets the GPUs' path is SYS: NCCL >= 2.23 runs SHM on an AMD host of more than two GPUs
    # (paths.cc ncclTopoCheckP2p), whether or not scale_up says the GPUs meet through the CPU
    spec = _node(cpu_vendor="amd", cpu_sockets=2).with_changes(**{"scale_up.p2p_through_cpu": False})
    r = formula_collective("all_reduce", GiB, spec, nccl_version="2.29.2")
    assert "SHM through host memory" in r.explanation and "path SYS" in r.explanation


def test_reader_infers_sockets_from_the_gpu_numa_nodes():
    # case 26 (NVIDIA/nccl #1084): GPU0-3 on NUMA node 0, GPU4-7 on node 1, SYS between every pair
    (node,) = inspect_node_text(read_case(CASE_26), source=CASE_26)
    assert node.spec.cpu_sockets == 2 and node.spec.gpus_per_socket == 4


def test_reader_names_the_cpu_family_from_the_dumps_cpuid():
    # case 17 (Azure NDv4 / NDv5 topology files): NDv5's <cpu familyid="6" modelid="143"> is Sapphire Rapids
    # (topo.cc: Intel family 6, model >= 0x8F and < 0xCF); NDv4's AMD family 23 (Zen 2) has no entry of its
    # own, so the vendor's amd-epyc applies; catalogue lookups of Turin (family 1Ah = 26) and Skylake alike
    ndv4, ndv5 = inspect_node_text(read_case(CASE_17), source=CASE_17)
    assert ndv5.spec.cpu == "intel-sapphire-rapids"
    assert ndv4.spec.cpu is None
    assert ndv4.spec.socket_cpu is not None and ndv4.spec.socket_cpu.key == "amd-epyc"
    assert catalog.cpu_for_cpuid("amd", 26, 17) == "amd-epyc-turin"
    assert catalog.cpu_for_cpuid("intel", 6, 0x55) == "intel-skylake"


def test_reader_reads_nccls_own_cpuid_family_sum():
    # NCCL's xml.cc (v2.26.2-1) dumps familyid = familyId + (extFamilyId << 4), not CPUID's display family
    # (base + extended): a Zen 5 host (0Fh + 0Bh = 1Ah) dumps 0xF + 0xB0 = 191, a Hygon (0Fh + 09h = 18h)
    # 159 as RCCL's DCU dump (tests/discovery/fixtures/xml_rccl_dcu_cut.xml). Azure's hand-written NDv4 file
    # gives Rome as 23 (display), NCCL's dump of it would give 0xF + 0x80 = 143: both read as family 17h.
    assert catalog.cpuid_display_family(191) == 26 and catalog.cpuid_display_family(159) == 0x18
    assert catalog.cpuid_display_family(143) == catalog.cpuid_display_family(23) == 0x17
    assert catalog.cpuid_display_family(6) == 6 and catalog.cpuid_display_family(7) == 7
    text = read_case(CASE_17).replace('familyid="23"', 'familyid="191"')
    ndv4, ndv5 = inspect_node_text(text, source=CASE_17)
    assert ndv4.spec.cpu == "amd-epyc-turin" and ndv5.spec.cpu == "intel-sapphire-rapids"


def test_grace_presets_run_an_arm_host_and_a_c2c_path_needs_one():
    # GH200 and GB200 superchips pair each GPU with a Grace CPU, 72 Arm Neoverse V2 cores (GH200
    # datasheet, accelerators.yaml); a NIC reached through it over NVLink-C2C is nic_path P2C
    # (NCCL v2.27.3-1 paths.cc PATH_P2C), which no x86 host has.
    assert preset("gb200-nvl72").cpu_vendor == "arm" and preset("gb200-nvl72").scale_out.nic_path == "P2C"
    assert preset("gh200-quad").cpu_vendor == "arm"
    h100 = preset("h100-ib-2node")
    with pytest.raises(ConfigError) as err:
        h100.with_changes(**{"scale_out.nic_path": "P2C"})
    assert "scale_out.nic_path: 'P2C'" in str(err.value) and "Grace" in str(err.value)
    # an Arm host does not make an H100 a superchip: the C2C link is the accelerator's (host_link)
    with pytest.raises(ConfigError):
        h100.with_changes(**{"scale_out.nic_path": "P2C", "cpu_vendor": "arm"})
    gh = preset("gh200-quad")
    assert gh.with_changes(**{"scale_out.nic_path": "P2C"}).scale_out.nic_path == "P2C"


def test_nccl_socket_figure_follows_the_release():
    # topo.h: AMD_BW 16 from v2.19.1-1, LOC_BW 5000 before (v2.18.6-1: ncclTopoGetInterCpuBw's default);
    # SRP_QPI_BW 22 from v2.26.2-1, SKL_QPI_BW 10 before (every Intel model >= 0x55 read as Skylake)
    env = {"NCCL_P2P_LEVEL": "SYS"}
    amd = _node(cpu_vendor="amd", cpu_sockets=2)
    old = formula_collective("all_reduce", GiB, amd, env=env, nccl_version="2.18.3").explanation
    new = formula_collective("all_reduce", GiB, amd, env=env, nccl_version="2.19.3").explanation
    assert "NCCL links the sockets at 5000 GB/s" in old and "NCCL links the sockets at 16 GB/s" in new
    spr = _node(cpu="intel-sapphire-rapids", cpu_sockets=2)
    old = formula_collective("all_reduce", GiB, spr, env=env, nccl_version="2.25.1").explanation
    new = formula_collective("all_reduce", GiB, spr, env=env, nccl_version="2.26.2").explanation
    assert "NCCL links the sockets at 10 GB/s" in old and "NCCL links the sockets at 22 GB/s" in new

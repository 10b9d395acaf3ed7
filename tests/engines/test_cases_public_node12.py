"""The formula engine against a twelfth set of public single-node results, none among the shared cases nor
the sets before it (test_cases_public_node.py .. ..._node11.py, test_cases_public_alltoall*.py): an OCI
BM.GPU4.8 (8 x A100 SXM4 40GB) swept from one thread inside a Horovod container, the one-node runs of a
CSCS staff benchmark of Alps (4 x GH200 on their NVLink mesh, NCCL 2.23.4), an 8 x MI300X all_gather
sweep on RCCL 2.28.9, a 2019 blog's 8 x V100 SXM2 hybrid cube mesh, and a university cluster's node of two
A100 PCIe on two AMD sockets that runs all seven collectives (broadcast, alltoall and sendrecv asserted at
the socket crossing's rate; the ring collectives and reduce recorded as misses).
This round's searches of the corpora found the GitHub issue threads used up; the new sources are result
files in small repositories (find_repos "nccl-test", "nccl-bench", "gpu-bench": most hold scripts only),
files the search index names by an id only, and a Japanese cloud tutorial. Nothing new turned up for
H20, H800, L40S, L4, A10, A40, RTX 6000 Ada, B300, GB300, MI325X, MI355X or MI250X on one node.

Each point is one out-of-place row of a public log about ONE node; the comment gives the quoted row (size,
time us, busbw GB/s) and the model's figure. Tolerance, the blind check's bar: 10 % on busbw at >= 64 MiB,
15 % at mid sizes (8-512 MiB) and 15 % on time at small sizes. No constant was set from these sources.
Where a log prints no release, or one the catalogue lacks, the model runs the newest recorded tables, the
project's default. Two logs come from files the search index names by an id only: they are cited by that
id, the host name and the command the log prints. Points the model misses are in ``MISSED`` (measured,
predicted, what is missing); not asserted.
"""

from __future__ import annotations

import pytest
from tests.clusters import mi300x_node
from tests.engines.test_cases_public_node import hgx, one_node
from tests.engines.test_cases_public_node3 import _rows  # one table's rows as Points
from tests.engines.test_cases_public_node4 import LAUNCH_S_PER_GPU

from aifabric.cluster.presets import preset

MiB = 2**20
GiB = 2**30

OCI_HOROVOD = (
    "GitHub file, search-index id 7310580171 (a Japanese OCI GPU-cluster tutorial: two BM.GPU4.8 on a "
    "cluster network, Horovod containers; the single-node run is its section 4-2): host inst-ks8ls-comp, "
    "docker horovod/horovod:latest, nccl-tests built against the container's NCCL (CUDA 11.3, release not "
    "printed), './build/all_reduce_perf -b 64 -e 10G -f 2 -t 1 -g 8', 8 x NVIDIA A100-SXM4-40GB at "
    "0x0f/0x15/0x51/0x54/0x8d/0x92/0xd6/0xda (the BM.GPU4.8 HGX A100 board)"
)
ALPS = (
    "https://github.com/boeschf/nccl-benchmark-on-alps-2025/blob/897cff446b5e814a0a991f94dd52559df8cdf9e0/"
    "results/nccl-tests_nccl-2.23.4-1-aws-1.13.0-v0/job-n-00004-N-0001.txt (job-n-00004-N-0001.sh: one "
    "Alps node, 4 ranks by srun, one GH200 each, 'all_reduce_perf -b 8 -e 4294967296 -f 2 -w 8 -n 24', "
    "uenv nccl-tests/nccl-2.23.4-1-aws-1.13.0)"
)
MI300X_AG = (
    "https://github.com/Z-Y00/ROCM-sdma-rccl-test/blob/d4046f534057e80939f7bc4697ffb7acb86fd169/bench/"
    "blog_results/rccl_tests_ag_size_128m_4g.csv and .log (host smc300x-ccs-aus-a17-31, 8 x MI300X per the "
    "README, 'RCCL version : 2.28.9', torch.distributed all_gather of bf16 over 8 ranks, column "
    "regular_ag: buffers from torch.empty, RCCL's CU kernels; busbw (n-1)/n x algbw, nccl-tests' factor)"
)
V100_BLOG = (
    "GitHub file, search-index id 41793431922 (a 2019 blog post 'NCCL', Hexo front matter date 2019-09-26): "
    "host 9a417caaf03b, 8 x Tesla V100-SXM2-16GB, nvidia-smi topo -m NV1/NV2 between GPU pairs (the DGX-1 "
    "hybrid cube mesh: 6 NVLink 2 links a GPU), './build/all_reduce_perf -b 8 -e 128M -f 2 -g 8', NCCL "
    "release not printed (the post cites NCCL 2.3 and 2.4 articles)"
)
N013 = (
    "https://github.com/thomaslie210/NCCL_Test_Results/blob/83dd17d1e2bfb3ef047b1845efcf5116e3b42636/"
    "NCCL_Benchmarks/Internal_GDR_On/ (host n013: 2 x NVIDIA A100-PCIE-40GB at 0000:01:00 and 0000:81:00, "
    "one on each CPU socket, NCCL's topology 'CPU/0 (1/2/-1)' = x86 AMD, 'GPU/81000 (3/24.000000/SYS)'; "
    "NCCL 2.16.5+cuda11.8, a process per GPU, every channel 'via P2P/IPC', NCCL_DEBUG=TRACE)"
)

#: 8 x A100 SXM4 40GB on NVSwitch (OCI BM.GPU4.8: HGX A100 8-GPU, 12 NVLink 3 links per GPU)
A100_40_X8 = hgx("a100-sxm-40gb")
#: one Alps node: 4 GH200 joined by NVLink 4 without NVSwitch (catalogue nvlink4-gh200-quad, HPE Cray EX254n)
ALPS_NODE = preset("gh200-quad", nodes=1)
#: 8 x MI300X on their xGMI full mesh (7 x 48 GB/s usable per GPU, catalogue infinity-fabric-mi300)
MI300X = mi300x_node()
#: 8 x V100 SXM2 on the hybrid cube mesh: 6 NVLink 2 links per GPU at NCCL's SM70_NVLINK_BW 20 GB/s
#: (catalogue nvlink2); the 16 GB card reads as the 32 GB entry, memory size aside
V100_X8 = one_node("v100-sxm2-32gb", 8, {"kind": "nvswitch", "link": "nvlink2"})
#: n013: 2 x A100 PCIe 40GB (PCIe Gen4 x16, NCCL's 24 GB/s), one on each socket of an AMD host whose EPYC
#: generation the log does not print (cpus.yaml amd-epyc): P2P through both root complexes and the socket
#: link, whose crossing carries at most NCCL's AMD_BW 16 GB/s where no measurement of the generation exists
N013_NODE = one_node(
    "a100-pcie-40gb", 2, {"kind": "pcie", "link": "pcie-gen4", "p2p_through_cpu": True}, cpu_vendor="amd"
).with_changes(cpu_sockets=2)
#: the run's largest size, 11.74 GiB (nccl-tests -e 12G -i 500M: 1 GiB + 22 x 500 MiB)
N013_TOP = 12608077824
#: one host thread driving the node's 8 GPUs (-g 8), at nccl-tests #123's per-GPU launch cost
ONE_THREAD_8 = (("gpus_per_thread", 8), ("launch_s_per_gpu", LAUNCH_S_PER_GPU))
V2234 = (("nccl_version", "2.23.4"),)


POINTS = {
    # OCI inst-ks8ls-comp, one thread (-g 8): "64 16 float sum -1 32.01", "128 ... 32.01", "256 ... 31.75",
    # "512 ... 32.21", "1024 ... 32.03", "2048 ... 31.77", "4096 ... 32.13", "8192 ... 32.22", "16384 ...
    # 32.48", "32768 ... 32.02", "65536 ... 35.40", "131072 ... 38.50": the one-thread floor 8 x 4.21 = 33.70
    # us (+5.3/+5.3/+6.1/+4.6/+5.2/+6.1/+4.9/+4.6/+3.8/+5.2/-4.8/-12.5 %); "67108864 ... 589.5 113.84
    # 199.23", "268435456 ... 2121.9 ... 221.38", "536870912 ... 4208.2 ... 223.26", "1073741824 ... 8166.8
    # ... 230.08", "2147483648 ... 16232 ... 231.52", "4294967296 ... 32097 ... 234.17", "8589934592 ...
    # 63929 ... 235.14": ring/Simple over 12 x 20 GB/s 215.35/233.32/236.62/238.30/239.14/239.57/239.79
    # (+8.1/+5.4/+6.0/+3.6/+3.3/+2.3/+2.0 %)
    **_rows(
        "oci inst-ks8ls A100-40 x8 thread",
        OCI_HOROVOD,
        A100_40_X8,
        "all_reduce",
        (
            (64, 32.01, 0),
            (128, 32.01, 0),
            (256, 31.75, 0),
            (512, 32.21, 0),
            (1024, 32.03, 0),
            (2048, 31.77, 0),
            (4096, 32.13, 0),
            (8192, 32.22, 0),
            (16384, 32.48, 0),
            (32768, 32.02, 0),
            (65536, 35.40, 0),
            (131072, 38.50, 0),
            (64 * MiB, 589.5, 199.23),
            (256 * MiB, 2121.9, 221.38),
            (512 * MiB, 4208.2, 223.26),
            (GiB, 8166.8, 230.08),
            (2 * GiB, 16232, 231.52),
            (4 * GiB, 32097, 234.17),
            (8 * GiB, 63929, 235.14),
        ),
        ONE_THREAD_8,
    ),
    # Alps, 4 x GH200, a process per GPU (NCCL 2.23.4): "64 16 float sum -1 8.93", "128 ... 8.98", "256 ...
    # 9.40", "512 ... 9.37", "1024 ... 9.36": ring/LL 10.23/10.27/10.33/10.46/10.72 us (+14.6/+14.3/+9.9/
    # +11.6/+14.6 %); "16384 ... 10.73", "32768 ... 10.86", "65536 ... 11.02", "131072 ... 11.35", "262144
    # ... 11.68", "524288 ... 14.49": 11.77/11.77/11.77/11.77/12.99/15.78 (+9.7/+8.4/+6.8/+3.7/+11.2/+8.9 %);
    # "1048576 ... 18.49 56.70 85.05", "2097152 ... 104.81", "4194304 ... 144.72", "8388608 ... 201.31",
    # "16777216 ... 247.02", "33554432 ... 280.48": ring/LL, LL, LL128, LL128, Simple, Simple 73.65/96.76/
    # 143.50/202.02/260.33/305.90 (-13.4/-7.7/-0.8/+0.4/+5.4/+9.1 %); "536870912 ... 2410.1 222.76 334.14",
    # "1073741824 ... 337.94", "2147483648 ... 338.56", "4294967296 ... 339.04": ring/Simple over the mesh's
    # 3 six-link bundles 365.95/368.36/369.57/370.19 (+9.5/+9.0/+9.2/+9.2 %)
    **_rows(
        "alps GH200 x4",
        ALPS,
        ALPS_NODE,
        "all_reduce",
        (
            (64, 8.93, 0),
            (128, 8.98, 0),
            (256, 9.40, 0),
            (512, 9.37, 0),
            (1024, 9.36, 0),
            (16384, 10.73, 0),
            (32768, 10.86, 0),
            (65536, 11.02, 0),
            (131072, 11.35, 0),
            (262144, 11.68, 0),
            (524288, 14.49, 0),
            (MiB, 18.49, 85.05),
            (2 * MiB, 30.01, 104.81),
            (4 * MiB, 43.47, 144.72),
            (8 * MiB, 62.50, 201.31),
            (16 * MiB, 101.9, 247.02),
            (32 * MiB, 179.4, 280.48),
            (512 * MiB, 2410.1, 334.14),
            (GiB, 4766.0, 337.94),
            (2 * GiB, 9514.4, 338.56),
            (4 * GiB, 19002, 339.04),
        ),
        V2234,
    ),
    # 8 x MI300X all_gather (RCCL 2.28.9, not in the catalogue: newest tables), regular_ag median: 512 MiB
    # 1568.4 us 299.52, 1 GiB 3039.9 us 309.07, 1.5 GiB 4533.6 us 310.85, 2 GiB 5977.1 us 314.37, 2.5 GiB
    # 7487.2 us 313.71, 3 GiB 8929.7 us 315.64, 3.5 GiB 10391.3 us 316.45, 4 GiB 11855.4 us 316.99: ring/
    # Simple over 7 x 48 GB/s 328.44/332.17/333.44/334.08/334.46/334.72/334.90/335.04 (+9.7/+7.5/+7.3/+6.3/
    # +6.6/+6.0/+5.8/+5.7 %)
    **_rows(
        "smc300x MI300X x8",
        MI300X_AG,
        MI300X,
        "all_gather",
        (
            (512 * MiB, 1568.4, 299.52),
            (GiB, 3039.9, 309.07),
            (3 * GiB // 2, 4533.6, 310.85),
            (2 * GiB, 5977.1, 314.37),
            (5 * GiB // 2, 7487.2, 313.71),
            (3 * GiB, 8929.7, 315.64),
            (7 * GiB // 2, 10391.3, 316.45),
            (4 * GiB, 11855.4, 316.99),
        ),
    ),
    # V100 blog, one thread (-g 8): "16777216 4194304 float sum 324.1 51.77 90.59", "33554432 ... 550.8 ...
    # 106.62", "67108864 ... 992.7 ... 118.30", "134217728 ... 1818.8 ... 129.14": ring/Simple over 6 x 20
    # GB/s 97.65/107.68/113.51/116.66 (+7.8/+1.0/-4.1/-9.7 %)
    **_rows(
        "9a417caaf03b V100 x8 thread",
        V100_BLOG,
        V100_X8,
        "all_reduce",
        (
            (16 * MiB, 324.1, 90.59),
            (32 * MiB, 550.8, 106.62),
            (64 * MiB, 992.7, 118.30),
            (128 * MiB, 1818.8, 129.14),
        ),
        ONE_THREAD_8,
    ),
    # n013, 2 x A100 PCIe across two AMD sockets (NCCL 2.16.5, not in the catalogue: newest tables), the
    # Medium (-b 1M -e 1G -i 10M) and Big (-b 1G -e 12G -i 500M) runs, out-of-place: broadcast "126877696
    # ... 7942.64 15.97 15.97", "252706816 ... 15794.7 ... 16.00", "504365056 ... 31509.6 ... 16.01",
    # "1073741824 ... 67588.7 ... 15.89", "12608077824 ... 813790 ... 15.49": chain/Simple over the socket
    # crossing's 16 GB/s 15.97/15.99/15.99/16.00/16.00 (+0.0/-0.1/-0.1/+0.7/+3.3 %); alltoall "126877696 ...
    # 3835.31 ... 16.54", "252706816 ... 7632.31 ... 16.56", "504365056 ... 15210.2 ... 16.58", "1073741824
    # ... 33298.6 ... 16.12", "12608077824 ... 397785 ... 15.85": 15.94/15.97/15.99/15.99/16.00 (-3.6/-3.6/
    # -3.6/-0.8/+0.9 %); sendrecv "126877696 ... 7673.92 ... 16.53", "252706816 ... 15275.0 ... 16.54",
    # "504365056 ... 30437.3 ... 16.57", "1073741824 ... 66539.7 ... 16.14", "12608077824 ... 805851 ...
    # 15.65": 15.97/15.99/15.99/16.00/16.00 (-3.4/-3.4/-3.5/-0.9/+2.2 %). Without the crossing's bound the
    # model gave the GPUs' 24 GB/s (+45 to +55 %)
    **{
        key: point
        for op, rows in (
            (
                "broadcast",
                (
                    (126877696, 7942.64, 15.97),
                    (252706816, 15794.7, 16.00),
                    (504365056, 31509.6, 16.01),
                    (GiB, 67588.7, 15.89),
                    (N013_TOP, 813790, 15.49),
                ),
            ),
            (
                "alltoall",
                (
                    (126877696, 3835.31, 16.54),
                    (252706816, 7632.31, 16.56),
                    (504365056, 15210.2, 16.58),
                    (GiB, 33298.6, 16.12),
                    (N013_TOP, 397785, 15.85),
                ),
            ),
            (
                "sendrecv",
                (
                    (126877696, 7673.92, 16.53),
                    (252706816, 15275.0, 16.54),
                    (504365056, 30437.3, 16.57),
                    (GiB, 66539.7, 16.14),
                    (N013_TOP, 805851, 15.65),
                ),
            ),
        )
        for key, point in _rows("n013 A100 PCIe x2 sockets", N013, N013_NODE, op, rows).items()
    },
}


@pytest.mark.parametrize("key", list(POINTS))
def test_public_node_point(key: str) -> None:
    assert abs(POINTS[key].relative_error()) <= POINTS[key].single_node_bar()


#: Public single-node rows the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    "OCI inst-ks8ls-comp, 8 x A100 SXM4 40GB, one thread, Horovod container NCCL, all_reduce 256 KiB-32 MiB "
    "and 128 MiB": (
        "time 256/512 KiB 45.21/58.96 vs ring/LL 33.70/33.70 us (-25.5/-42.8 %); busbw 1/2/4/8/16/32 MiB "
        "23.92/32.66/54.57/79.02/119.81/147.46 vs ring/LL, LL, LL128, LL128, LL128, Simple 51.08/64.56/99.40/"
        "137.09/169.15/195.30 (+114/+98/+82/+73/+41/+32 %); 128 MiB 197.17 vs 227.01 (+15.1 %), below the "
        "log's own 64 MiB row (199.23). The container's NCCL (CUDA 11.3 era) predates the catalogue's first "
        "tables (2.18.1) and ramps through LL and LL128 as slowly as NCCL 2.8.4 on ABCI's A100 "
        "(test_cases_public_node11.py MISSED); from 64 MiB its Simple ring meets the model (asserted)"
    ),
    "Alps, 4 x GH200 (NCCL 2.23.4, a process per GPU), all_reduce 8-32 B, 2-8 KiB, 64-256 MiB": (
        "time 8/16/32 B 7.84/8.01/8.39 vs ring/LL 10.20/10.21/10.22 us (+30.2/+27.4/+21.8 %); 2/4/8 KiB "
        "9.36/9.49/9.83 vs 11.25/11.77/11.77 (+20.2/+24.0/+19.7 %); busbw 64/128/256 MiB "
        "298.51/316.76/327.20 vs ring/Simple 335.24/352.12/361.22 (+12.3/+11.2/+10.4 %). The smallest "
        "rows run 2.4 us under the ring/LL floor the model prices for the 3-hop mesh ring; from 512 MiB "
        "the plateau sits 9 % under the mesh's 3 x 123.6 GB/s (asserted), and 64-256 MiB ramp to it more "
        "slowly than the model's fixed per-call latency gives: the same mid-size Simple ramp as the "
        "Snellius H100 mesh "
        "(test_cases_public_node11.py MISSED)"
    ),
    "smc300x-ccs-aus-a17-31, 8 x MI300X (RCCL 2.28.9, torch bf16), all_gather 128-256 MiB": (
        "busbw 128/256 MiB 265.73/288.79 vs ring/Simple 307.66/321.20 (+15.8/+11.2 %): the xGMI ring ramps "
        "to its plateau more slowly than the model's fixed per-call latency gives (the harness times "
        "torch.distributed calls, median of 30); from 512 MiB the ring meets the model (asserted)"
    ),
    "9a417caaf03b, 8 x V100 SXM2 hybrid cube mesh, one thread (2019 NCCL), all_reduce 8 B-8 MiB": (
        "time 8/256 B/4/64/512 KiB 48.46/48.47/49.13/52.78/61.48 vs 33.70/33.70/33.70/33.70/38.53 us "
        "(-30.5/-30.5/-31.4/-36.2/-37.3 %): the flat 48.5 us floor is 6.06 us a GPU for one thread "
        "launching 8, where nccl-tests #123 (CUDA 11, DGX A100) gives 4.21; busbw 1/4/8 MiB 20.56/49.79/"
        "72.03 vs ring/LL128 32.07/68.54/84.58 (+56.0/+37.7/+17.4 %): a 2019 release (NCCL 2.4 era) "
        "predates the catalogue's tables and its V100 LL128; from 16 MiB the Simple ring meets the model "
        "(asserted)"
    ),
    f"{N013}: 2 x A100 PCIe 40GB across two AMD sockets, NCCL 2.16.5, all_reduce, all_gather, reduce_scatter "
    "and reduce 1 MiB-12 GiB; every collective at 64 KiB-1 MiB": (
        "busbw at 121 MiB / 241 MiB / 481 MiB / 1 GiB / 11.7 GiB: all_reduce 14.56/14.70/14.76/14.39/14.43, "
        "all_gather 14.01/14.21/14.39/13.86/14.16, reduce_scatter 13.94/14.30/14.37/13.92/14.35 vs "
        "15.94-16.00 (+8.3 to +15.4 %): the model prices every pattern at the socket crossing's 16 GB/s "
        "(cpus.yaml amd-epyc, NCCL's AMD_BW where no measurement of the generation exists), where broadcast, "
        "alltoall and sendrecv of the same run meet it (asserted) and the ring collectives, reducing or "
        "copying through the ring's 4 channels, plateau 9-12 % under them on this host: a per-step cost of "
        "the ring at two ranks that no source sizes, not modelled. reduce runs at half that (7.16-7.17 GB/s "
        "at 11-512 MiB, with stray 8.4-9.7 rows) in the Medium run and at 13.91-15.93 in the Big one "
        "(11.37-15.43 in place) vs 16.0: no mechanism of the model splits it from broadcast's 16.0. From 64 "
        "KiB to 1 MiB every time runs 1.1-15 x the model, unevenly (all_reduce 64 KiB 100.14 vs 16.79 us, "
        "alltoall 19.57 vs 16.15): the run logs at NCCL_DEBUG=TRACE, whose per-call logging is not modelled. "
        "NCCL 2.16.5's own search gave the socket link LOC_BW ('SYS[5000.0] - CPU/1', 'bw 22.000000' per "
        "channel; AMD_BW arrived in 2.19.1), so its graph, unlike the bytes, saw no bound there"
    ),
}


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())

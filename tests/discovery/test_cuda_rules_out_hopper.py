"""A log's CUDA version rules an architecture out of the GPU assumed for it, with no ``sm`` in the log.

nccl-tests logs print ``NCCL version 2.14.3+cuda11.7``: the CUDA toolkit NCCL was built with. Hopper
(sm_90) is a target from CUDA 11.8 on (CUDA 11.8 release notes, RN-06722-001 v11.8: support for Hopper
sm_90 and Ada sm_89), Ampere (sm_80) from CUDA 11.0 (catalog/data/gpu_architectures.yaml). A log that
names no GPU is assumed to run h100-sxm only when its CUDA compiles for Hopper.
"""

from __future__ import annotations

from aifabric.catalog.archs import cuda_compiles_for
from aifabric.discovery.compare import compare_nccl_tests

#: One all_reduce row of 8 ranks on one host, no GPU name (the rank lines' names left out), NCCL banner
#: last: the format of nccl-tests' src/common.cu.
_LOG = """\
# nThread 1 nGpus 8 minBytes 1073741824 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20
NCCL version {version}
#
#                                                     out-of-place                       in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
  1073741824     268435456   float     sum   7000.0  153.39  268.43  0e+00   7000.0  153.39  268.43  0e+00
"""


def _accelerator(version: str) -> tuple[str, tuple[str, ...]]:
    table = compare_nccl_tests(_LOG.format(version=version), source="log").tables[0]
    return table.spec.accelerator, table.assumptions


def test_cuda_11_7_rules_out_hopper_from_the_assumed_gpu() -> None:
    assert cuda_compiles_for("hopper", "11.7") is False  # CUDA 11.8 release notes: sm_90 from 11.8
    accelerator, notes = _accelerator("2.14.3+cuda11.7")
    assert accelerator == "a100-sxm-80gb"
    assert (
        "GPU model not in the log: assumed a100-sxm-80gb (hopper needs CUDA >= 11.8; NCCL here was built "
        "with CUDA 11.7, which compiles for ampere at most) (give --gpu)"
    ) in notes


def test_cuda_11_8_keeps_the_hopper_default() -> None:
    accelerator, notes = _accelerator("2.18.3+cuda11.8")
    assert accelerator == "h100-sxm"
    assert "GPU model not in the log: assumed h100-sxm (give --gpu)" in notes

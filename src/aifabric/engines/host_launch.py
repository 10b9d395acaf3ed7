"""The host's floor when one thread drives several GPUs (nccl-tests ``-g N``, one process per node).

A collective on ``g`` GPUs driven by one host thread is one ``ncclGroupStart`` / ``ncclGroupEnd`` around
``g`` calls, one per communicator (NCCL user guide, "Group Calls: Management of multiple GPUs from one
thread"). From NCCL 2.9 the default launch mode is ``PARALLEL`` (``src/init.cc``: ``launchMode =
ncclComm::PARALLEL`` unless ``NCCL_LAUNCH_MODE=GROUP``; up to 2.8 it was ``GROUP``, all of a process's GPUs
launched by one ``cudaLaunchCooperativeKernelMultiDevice`` call, ``src/enqueue.cc``): each communicator
prepares its plan and launches its own kernel, so the thread pays ``g`` host launches per call, one after
the other. nccl-tests issues its ``iters`` calls back to back and divides the elapsed time by them
(``src/common.cu`` ``BenchTime``), so in steady state one call takes whichever is longer, the GPUs' time
or the host's::

    t = max(t_device, g x t_launch)

with ``t_launch`` the host's cost of one GPU's enqueue and kernel launch (seconds). It does not depend on
the size, so it shows as a flat floor at small sizes and vanishes under the bytes. ``t_launch`` is a
property of the host (CPU, driver, CUDA or HIP runtime), not of NCCL's tables: NVIDIA/nccl-tests #123 (DGX
A100, ``-g 2 ... 8``, Ring/LL on one channel) measures 16.88 / 20.8 / 25.2 / 29.5 / 33.7 us on 4 ... 8 GPUs,
``8 x 4.21 us`` with no intercept; other public one-process logs give 3.2 to 6.1 us per GPU on other hosts
(``tests/engines/test_host_launch.py``), so no default is taken. Nor is a kernel-launch microbenchmark
``t_launch``: per GPU and call NCCL makes three ``cudaSetDevice``, one kernel launch and up to two
``cudaEventRecord`` + ``cudaStreamWaitEvent`` pairs into and out of its device stream, and copies the
plan's work to the GPU's FIFO (``src/group.cc`` ``doLaunches``, ``src/enqueue.cc`` ``ncclLaunchPrepare`` /
``ncclLaunchFinish``, ``src/misc/strongstream.cc``; the same calls in 2.18.5, 2.20.5 and 2.25.1), so a
``cuLaunchKernel`` timing bounds it from below only.
"""

from __future__ import annotations

from dataclasses import replace

from aifabric.engines.result import CollectiveResult

__all__ = ["MAX_LAUNCH_S_PER_GPU", "check_gpus_per_thread", "host_launch_floor_s", "with_host_floor"]

#: The largest host launch cost per GPU taken, seconds: 1 s, over 10^5 times the 3.2 to 6.1 us public
#: one-process logs give (module docstring) and longer than any collective's own launch path, so a
#: larger figure is a typo or a unit slip (seconds given as microseconds), not a host.
MAX_LAUNCH_S_PER_GPU = 1.0


def host_launch_floor_s(gpus_per_thread: int, launch_s_per_gpu: float) -> float:
    """Host time per call when one thread launches ``gpus_per_thread`` GPUs' kernels, seconds.

    ``g x t_launch`` (module docstring): NCCL >= 2.9 launches each communicator's kernel separately.

    Raises
    ------
    ValueError
        If ``gpus_per_thread < 1`` or ``launch_s_per_gpu`` is negative or above
        :data:`MAX_LAUNCH_S_PER_GPU`.

    References
    ----------
    NVIDIA/nccl ``src/init.cc`` (launch mode PARALLEL from v2.9.6-1), ``src/enqueue.cc``; NVIDIA/nccl-tests
    ``src/common.cu`` ``BenchTime``; https://github.com/NVIDIA/nccl-tests/issues/123.

    Examples
    --------
    nccl-tests #123's DGX A100 host, 4.21 us per GPU, 6 GPUs: 25.3 us (measured 25.2 us):

    >>> round(host_launch_floor_s(6, 4.21e-6) * 1e6, 1)
    25.3
    """
    if isinstance(gpus_per_thread, bool) or not isinstance(gpus_per_thread, int) or gpus_per_thread < 1:
        raise ValueError(f"gpus_per_thread: must be an integer >= 1, got {gpus_per_thread!r}")
    if not 0.0 <= launch_s_per_gpu <= MAX_LAUNCH_S_PER_GPU:
        raise ValueError(
            f"launch_s_per_gpu: must be >= 0 s and at most {MAX_LAUNCH_S_PER_GPU:g} s per launch, "
            f"got {launch_s_per_gpu!r}"
        )
    return gpus_per_thread * launch_s_per_gpu


def with_host_floor(
    result: CollectiveResult, gpus_per_thread: int, launch_s_per_gpu: float, *, ranks_per_node: int
) -> CollectiveResult:
    """``result`` with its time raised to the host's floor where the floor is longer (module docstring).

    The floor is a per-call latency: it joins ``latency_s``, and algbw / busbw follow the new time; the
    algorithm and protocol are NCCL's pick, which the host does not change. A thread drives only GPUs of
    its own node (nccl-tests ``-g``: GPUs per thread of one process, and a process runs on one host), so
    ``gpus_per_thread`` is at most ``ranks_per_node``, the most ranks of the call on one node.

    Raises
    ------
    ValueError
        As :func:`check_gpus_per_thread` and :func:`host_launch_floor_s`.
    """
    floor = host_launch_floor_s(gpus_per_thread, launch_s_per_gpu)
    check_gpus_per_thread(gpus_per_thread, ranks_per_node, result.n_ranks)
    if floor <= result.time_s:
        return result
    scale = result.time_s / floor
    note = (
        f"One thread launches {gpus_per_thread} GPUs' kernels one after the other (NCCL >= 2.9, PARALLEL "
        f"launch mode): {gpus_per_thread} x {launch_s_per_gpu * 1e6:.2f} us = {floor * 1e6:.1f} us per call "
        f"on the host, above the GPUs' {result.time_s * 1e6:.1f} us"
    )
    return replace(
        result,
        time_s=floor,
        latency_s=result.latency_s + floor - result.time_s,
        algbw_bytes_per_s=result.algbw_bytes_per_s * scale,
        busbw_bytes_per_s=result.busbw_bytes_per_s * scale,
        bottleneck="host launch",
        explanation=f"{result.explanation}. {note}" if result.explanation else note,
    )


def check_gpus_per_thread(gpus_per_thread: int, ranks_per_node: int, n_ranks: int) -> None:
    """ValueError ``gpus_per_thread: ...`` unless ``gpus_per_thread`` GPUs to a thread can make the call.

    A thread drives only GPUs of its own node (a process runs on one host), and nccl-tests gives every
    thread the same ``-g``: "The total number of ranks (=CUDA devices) will be equal to (number of
    processes)*(number of threads)*(number of GPUs per thread)" (nccl-tests README, Arguments). So
    ``gpus_per_thread`` divides ``ranks_per_node``, the most ranks of the call on one node, and the call's
    ``n_ranks``.

    >>> try:
    ...     check_gpus_per_thread(3, 8, 16)
    ... except ValueError as err:
    ...     print(str(err).partition(" (")[0])
    gpus_per_thread: 3 does not divide the 8 ranks of the call on one node
    """
    of = "the call" if ranks_per_node == n_ranks else "the call on one node"
    if gpus_per_thread > ranks_per_node:
        raise ValueError(
            f"gpus_per_thread: {gpus_per_thread} is more than the {ranks_per_node} ranks of {of} (a host "
            "thread drives only GPUs of its own node)"
        )
    for ranks, of_ranks in ((ranks_per_node, of), (n_ranks, "the call")):
        if ranks % gpus_per_thread:
            raise ValueError(
                f"gpus_per_thread: {gpus_per_thread} does not divide the {ranks} ranks of {of_ranks} "
                "(nccl-tests gives every thread the same -g GPUs: ranks = processes x threads x GPUs per "
                "thread)"
            )

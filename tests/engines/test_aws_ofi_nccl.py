"""The formula engine on EFA applies aws-ofi-nccl's NCCL settings beneath the user's environment
(catalog/data/aws_ofi_nccl.yaml; NCCL's order: a variable the user sets wins, the plugin sets only unset
ones, include/nccl_ofi_environ.h insert_envvar(..., false))."""

import math

import pytest
from pydantic import ValidationError
from tests.engines.test_cases_public_multi3 import ROCE, _nodes, p5

from aifabric.catalog.nccl import nccl_release, nvls_tree_start_chunk
from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.tiers import tier_model
from aifabric.engines.formula import formula_collective

GiB = 2**30
P5_2 = p5(2)
#: 2 x 8 A100 on 4 x 200G HDR InfiniBand (nccl-tests #119's nodes): NCCL's own NET/IB, GDR through PIX
A100_IB = _nodes("a100-sxm-40gb", 2, {"nic": "connectx-6", "gpus_per_nic": 2, "switch": "quantum-qm8700"})
NCCL_DEFAULT_CHUNK = {"NCCL_NVLS_CHUNKSIZE": "131072"}  # nvls.cc NCCL_PARAM(NvlsChunkSize, ..., 128 * 1024)


def _busbw(spec: ClusterSpec, **kw: object) -> tuple[str, float]:
    r = formula_collective("all_reduce", GiB, spec, **kw)  # type: ignore[arg-type]
    return r.algorithm, r.busbw_bytes_per_s / 1e9


def test_p5_runs_the_plugins_512_kib_nvls_chunks():
    # platform-aws.cpp "p5/p5e": NCCL_NVLS_CHUNKSIZE = NCCL_NVLSTREE_MAX_CHUNKSIZE = 524288. enqueue.cc
    # NVLS-tree: min(nvlsChunkSize, nvlsTreeMaxChunkSize) = 512 KiB on 2 nodes, not NCCL's 128 KiB.
    assert tier_model(P5_2).nvls_chunks == (524288, 524288)
    r = nccl_release()
    start = nvls_tree_start_chunk(r, "hopper", nnodes=2, local_gpus=8, nic_gbps=12.5, near_nic=True)
    assert start == 131072
    env = tier_model(P5_2).nvls_chunks
    assert (
        nvls_tree_start_chunk(r, "hopper", nnodes=2, local_gpus=8, nic_gbps=12.5, near_nic=True, env=env)
        == 2**19
    )


def test_the_users_own_setting_wins_over_the_plugins():
    # NCCL_NVLS_CHUNKSIZE=131072 by the user: min(128 KiB, the plugin's 512 KiB tree max) = NCCL's own
    # 128 KiB, the figure the model gave before it knew the plugin (1 GiB: 419.2 GB/s busbw; 407.1 with it,
    # both with efa-v2's 27.0 us network step)
    assert tier_model(P5_2, nvls_chunks=(131072, None)).nvls_chunks == (131072, 524288)
    algo, user = _busbw(P5_2, env=NCCL_DEFAULT_CHUNK)
    _, plugin = _busbw(P5_2)
    assert algo == "nvls_tree"
    assert math.isclose(user, 419.2, rel_tol=1e-3) and math.isclose(plugin, 407.1, rel_tol=1e-3)


def test_a_cluster_off_efa_or_on_an_unknown_instance_gets_nothing():
    assert tier_model(preset("h100-ib-2node")).nvls_chunks == (None, None)
    unknown = _nodes(
        "h100-sxm", 2, {"nic": "connectx-7", "nics_per_gpu": 4, "planes": 4, "transport": "efa-srd", **ROCE}
    )
    assert tier_model(unknown).nvls_chunks == (None, None)


def test_the_plugin_release_and_nccl_release_decide_what_applies():
    # NCCL 2.20.3 reads NCCL_NVLSTREE_MAX_CHUNKSIZE (enqueue.cc) but not NCCL_NVLS_CHUNKSIZE (2.21.5 on)
    assert tier_model(P5_2, nccl_version="2.20.3").nvls_chunks == (None, 524288)
    assert tier_model(P5_2, nccl_version="2.19.3").nvls_chunks == (None, None)
    so = P5_2.scale_out.model_dump(exclude_unset=True) | {"ofi_nccl_version": "1.9.0"}  # type: ignore[union-attr]
    old = P5_2.model_copy(update={"scale_out": type(P5_2.scale_out).model_validate(so)})
    assert tier_model(old).nvls_chunks == (524288, 524288)  # v1.9.0-aws setenv, l. 455 and 463


def test_nvls_off_below_nccl_2_18_5_unless_the_user_turns_it_on():
    # platform-aws.cpp: NCCL_NVLS_ENABLE=0 when ncclGetVersion < 21805 and the user left it unset
    assert _busbw(P5_2, nccl_version="2.18.3")[0] == "tree"
    assert _busbw(P5_2, nccl_version="2.18.3", env={"NCCL_NVLS_ENABLE": "1"})[0] == "nvls_tree"
    assert _busbw(P5_2, nccl_version="2.18.5")[0] == "nvls_tree"


def test_bad_instance_or_release_is_refused_naming_the_field():
    so = {"nic": "efa-v2", "nics_per_gpu": 4, "planes": 4, "transport": "efa-srd", **ROCE}
    with pytest.raises(ValidationError, match=r"scale_out.instance_type: 'p9.metal' has no recorded"):
        _nodes("h100-sxm", 2, so | {"instance_type": "p9.metal"})
    with pytest.raises(ValidationError, match=r"ofi_nccl_version: '0.9' is older"):
        _nodes("h100-sxm", 2, so | {"ofi_nccl_version": "0.9"})


def test_plugin_fields_off_efa_are_refused_not_ignored():
    # only an efa-srd scale-out loads aws-ofi-nccl (efa_plugin_settings returns {} elsewhere)
    so = {"nic": "connectx-7", "nics_per_gpu": 4, "planes": 4, **ROCE}
    with pytest.raises(ValidationError, match=r"scale_out.instance_type: 'p5.48xlarge' .* runs 'roce-v2'"):
        _nodes("h100-sxm", 2, so | {"instance_type": "p5.48xlarge"})
    with pytest.raises(ValidationError, match=r"scale_out.ofi_nccl_version: '1.21.1' .* runs 'roce-v2'"):
        _nodes("h100-sxm", 2, so | {"ofi_nccl_version": "1.21.1"})


def test_bad_chunk_sizes_are_refused_naming_the_variable():
    with pytest.raises(ValueError, match=r"NCCL_NVLS_CHUNKSIZE: expected an integer"):
        formula_collective("all_reduce", GiB, P5_2, env={"NCCL_NVLS_CHUNKSIZE": "big"})


def test_the_explanation_names_what_the_plugin_set_that_the_pick_ran_with():
    chunks = "NCCL_NVLS_CHUNKSIZE=524288, NCCL_NVLSTREE_MAX_CHUNKSIZE=524288"
    plugin = f"aws-ofi-nccl 1.21.1 on p5.48xlarge sets {chunks}"
    assert formula_collective("all_reduce", GiB, P5_2).explanation.endswith(plugin)
    mine = formula_collective("all_reduce", GiB, P5_2, env=NCCL_DEFAULT_CHUNK).explanation
    assert mine.endswith(
        "sets NCCL_NVLSTREE_MAX_CHUNKSIZE=524288"
    )  # the user's own chunk is not the plugin's
    assert "aws-ofi-nccl" not in formula_collective("all_reduce", 1024, P5_2).explanation  # tree/LL: no chunk
    off = formula_collective("all_reduce", GiB, P5_2, nccl_version="2.18.3").explanation
    assert off.endswith("aws-ofi-nccl 1.21.1 on p5.48xlarge sets NCCL_NVLS_ENABLE=0")


def test_p4d_runs_simple_alone_and_the_user_may_turn_ll_back_on():
    # aws-ofi-nccl on p4d: "Setting FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES not supported." then
    # NCCL_PROTO=simple (aws/aws-ofi-nccl #889); the user's own NCCL_PROTO wins, as insert_envvar(.., false)
    p4d = preset("aws-p4d", nodes=2)
    assert formula_collective("all_reduce", 8, p4d).protocol == "Simple"
    assert formula_collective("all_reduce", 8, p4d, env={"NCCL_PROTO": "LL"}).protocol == "LL"
    assert formula_collective("all_reduce", 8, P5_2).protocol == "LL"


def test_a_simple_receive_before_hopper_pays_the_plugin_step_twice():
    # net.cc: a Simple receive through GDR is flushed (ncclNet->iflush) where paths.cc ncclTopoNeedFlush
    # says so, cudaCompCap < 90: one more EFA operation, 27.0 - 5.0 = 22.0 us above NET/IB (nics.yaml
    # efa-v1). Tree/Simple on 2 x p4d: 8.4 + 2 x (7 x 4.0 + 14 + 2 x 22.0) = 180.4 us; DLAMI 179.3 measured.
    p4d = preset("aws-p4d", nodes=2)
    assert tier_model(p4d).flush_latency_s == pytest.approx(22.0e-6)
    assert formula_collective("all_reduce", 8, p4d).time_s == pytest.approx(180.4e-6, abs=0.1e-6)
    # no flush on Hopper (p5), on NCCL's own NET/IB (no plugin step to repeat), nor without GDR
    assert tier_model(P5_2).flush_latency_s == 0.0
    assert tier_model(A100_IB).flush_latency_s == 0.0
    staged = formula_collective("all_reduce", 8, p4d, env={"NCCL_NET_GDR_LEVEL": "LOC"})
    assert staged.time_s < formula_collective("all_reduce", 8, p4d).time_s


#: 2 x 4 GH200 over Slingshot 11: aws-ofi-nccl on libfabric's cxi provider (the slingshot-cxi transport)
ALPS = preset("gh200-quad", nodes=2)


def _alps(libfabric: str | None) -> ClusterSpec:
    return ALPS if libfabric is None else ALPS.with_changes(**{"scale_out.libfabric_version": libfabric})


def test_a_cxi_step_past_the_eager_limit_waits_one_rendezvous_round_trip():
    # tree/LL across 2 nodes, one channel: 2 KiB of data is 4096 LL wire bytes a step (eager under both
    # limits), 4 KiB is 8192: past libfabric 1.22's 4097 B, under 2.2's 18433 B. The tree crosses the
    # network twice (up, then down), so the old default costs 2 x 3.25 us more, the newer nothing
    for size, extra in ((2048, 0.0), (4096, 2 * 3.25e-6)):
        old, new = (formula_collective("all_reduce", size, _alps(v)) for v in ("1.22.0", "2.2.0"))
        assert (old.algorithm, old.protocol) == (new.algorithm, new.protocol) == ("tree", "LL")
        assert old.time_s - new.time_s == pytest.approx(extra, abs=1e-12)
    # past every eager limit (1 MiB, LL128 on 8 channels) both releases pay it alike
    big = [formula_collective("all_reduce", 2**20, _alps(v)).time_s for v in ("1.22.0", "2.2.0")]
    assert big[0] == pytest.approx(big[1])


def test_nccl_picks_as_if_there_were_no_rendezvous():
    # NCCL's tuner prices its own tables, not the plugin's provider: the pick on the old libfabric is the
    # one on the new at every size, only the time differs
    for size in (4096, 65536, 2**20, 2**25):
        old, new = (formula_collective("all_reduce", size, _alps(v)) for v in ("1.22.0", "2.2.0"))
        assert (old.algorithm, old.protocol) == (new.algorithm, new.protocol)
        assert old.time_s >= new.time_s


def test_libfabric_version_off_a_rendezvous_transport_is_refused_naming_the_field():
    so = {"nic": "connectx-7", "nics_per_gpu": 4, "planes": 4, **ROCE}
    with pytest.raises(ValidationError, match=r"scale_out.libfabric_version: '1.22.0' .* 'roce-v2' has none"):
        _nodes("h100-sxm", 2, so | {"libfabric_version": "1.22.0"})
    with pytest.raises(ValueError, match=r"scale_out.libfabric_version: 'new' is not a version"):
        _alps("new")


def test_libfabric_version_as_a_bare_number_is_refused():
    # YAML reads an unquoted 2.10 as the float 2.1: a release before 2.2.0 (eager limit 4097 B) where 2.10
    # is after it (18433 B), so the number is refused, not read as another release
    with pytest.raises(ValueError, match=r"scale_out.libfabric_version: 2.1 is a number.*quoted"):
        ALPS.with_changes(**{"scale_out.libfabric_version": 2.10})


def test_the_explanation_names_the_plugin_tuners_pick_beyond_two_nodes():
    # v1.21.0 nccl_ofi_regions.cpp, the p5 / p5e table for 8 ranks a node: 1 GiB on 32 ranks lies in the
    # ring/LL128 polygon, 8 GiB in ring/Simple's; the figure stays on NCCL's own pick (module docstring of
    # aifabric.collectives.ofi_tuner: the model's LL128 across EFA is faster than the p5 log)
    p5_4 = p5(4)
    r = formula_collective("all_reduce", GiB, p5_4, nccl_version="2.28.7")
    assert (r.algorithm, r.protocol) == ("nvls_tree", "Simple")
    assert "aws-ofi-nccl's region tuner runs ring/LL128 for this call" in r.explanation
    assert "OFI_NCCL_TUNER_TYPE=Internal" in r.explanation
    big = formula_collective("all_reduce", 8 * GiB, p5_4, nccl_version="2.28.7")
    assert (big.algorithm, big.protocol) == ("ring", "Simple")
    assert "region tuner runs ring/Simple for this call" in big.explanation
    assert "NCCL's own tuner picks it too" in big.explanation


def test_the_plugin_tuner_stays_out_where_nccl_does_not_load_it_or_its_regions_do_not_reach():
    p5_4 = p5(4)
    so = p5_4.scale_out.model_dump(exclude_unset=True)  # type: ignore[union-attr]
    old_plugin = _nodes("h100-sxm", 4, so | {"ofi_nccl_version": "1.15.0"})  # a library of its own then
    calls = [
        (P5_2, {"nccl_version": "2.28.7"}),  # two nodes: left to NCCL
        (p5_4, {"nccl_version": "2.20.5"}),  # NCCL 2.20 loads a tuner only NCCL_TUNER_PLUGIN names
        (old_plugin, {"nccl_version": "2.28.7"}),
        (p5_4, {"nccl_version": "2.21.5", "env": {"NCCL_ALGO": "Ring"}}),  # tuner v2 stands down
        (p5_4, {"nccl_version": "2.28.7", "env": {"NCCL_PROTO": "Simple"}}),  # ring/LL128 excluded
    ]
    for spec, kw in calls:
        r = formula_collective("all_reduce", GiB, spec, **kw)  # type: ignore[arg-type]
        assert "region tuner" not in r.explanation, kw
    # from NCCL 2.22.3 (tuner v3) NCCL_ALGO=Ring leaves ring/LL128 in the cost table, and the plugin picks it
    ring = formula_collective("all_reduce", GiB, p5_4, nccl_version="2.28.7", env={"NCCL_ALGO": "Ring"})
    assert "region tuner runs ring/LL128" in ring.explanation

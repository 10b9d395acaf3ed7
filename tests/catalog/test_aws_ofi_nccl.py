"""aws-ofi-nccl's per-instance NCCL settings as catalogue data (catalog/data/aws_ofi_nccl.yaml), each
release read from aws/aws-ofi-nccl's src/platform-aws.c / .cpp at its tag."""

import pytest

from aifabric.catalog.aws_ofi_nccl import (
    efa_instance,
    nccl_reads,
    not_modelled,
    ofi_nccl_release,
    ofi_nccl_release_versions,
    plugin_settings,
)
from aifabric.errors import ConfigError

#: v1.21.1 src/platform-aws.cpp l. 141-146, the "p5/p5e" entry's env.
P5_ENV = {
    "NCCL_BUFFSIZE": "8388608",
    "NCCL_P2P_NET_CHUNKSIZE": "524288",
    "NCCL_NVLSTREE_MAX_CHUNKSIZE": "524288",
    "NCCL_NVLS_CHUNKSIZE": "524288",
    "NCCL_NET_FORCE_FLUSH": "0",
}


def test_newest_recorded_release_is_the_default_and_sets_p5s_five_variables():
    assert ofi_nccl_release().version == ofi_nccl_release_versions()[-1] == "1.21.1"
    assert plugin_settings(ofi_nccl_release(), "p5.48xlarge", "2.30.3") == P5_ENV


def test_p5en_and_p6_b200_add_the_netdevs_policy_from_1_17():
    # v1.17.0 "p5en/p6-b200" entry: NCCL_NETDEVS_POLICY max:1; v1.16.0's "p-series" entry has no such line
    for instance in ("p5en.48xlarge", "p6-b200.48xlarge"):
        assert plugin_settings(ofi_nccl_release("1.17.0"), instance, "2.30.3") == {
            **P5_ENV,
            "NCCL_NETDEVS_POLICY": "max:1",
        }
        assert "NCCL_NETDEVS_POLICY" not in plugin_settings(ofi_nccl_release("1.16.0"), instance, "2.30.3")


def test_a_release_between_two_recorded_runs_the_older_ones_settings():
    assert ofi_nccl_release("1.18.0").version == "1.17.0"
    assert ofi_nccl_release("v1.13.2-aws").version == "1.13.0"


def test_before_1_16_the_chunks_are_set_on_every_instance_and_no_buffer_size():
    # v1.14.0 src/platform-aws.c l. 526, 534: setenv(..., "524288", 0) whatever the platform; on p4d the
    # SENDRECV protocol's 128-byte ordering probe fails, so NCCL_PROTO=simple (aws/aws-ofi-nccl #889)
    p4d = plugin_settings(ofi_nccl_release("1.14.0"), "p4d.24xlarge", "2.30.3")
    assert p4d == {
        "NCCL_PROTO": "simple",
        "NCCL_NVLSTREE_MAX_CHUNKSIZE": "524288",
        "NCCL_NVLS_CHUNKSIZE": "524288",
    }
    # v1.9.0: p5e was not in the table (no NET_FORCE_FLUSH), p5 was (net_flush_required false)
    assert "NCCL_NET_FORCE_FLUSH" not in plugin_settings(ofi_nccl_release("1.9.0"), "p5e.48xlarge", "2.30.3")
    assert plugin_settings(ofi_nccl_release("1.9.0"), "p5.48xlarge", "2.30.3")["NCCL_NET_FORCE_FLUSH"] == "0"


def test_nccl_ignores_a_variable_older_than_itself():
    # NCCL_NVLSTREE_MAX_CHUNKSIZE from 2.20.3 (enqueue.cc), NCCL_NVLS_CHUNKSIZE from 2.21.5 (nvls.cc)
    assert not nccl_reads("NCCL_NVLSTREE_MAX_CHUNKSIZE", "2.19.3")
    assert nccl_reads("NCCL_NVLSTREE_MAX_CHUNKSIZE", "2.20.3")
    assert not nccl_reads("NCCL_NVLS_CHUNKSIZE", "2.20.5")
    env = plugin_settings(ofi_nccl_release(), "p5.48xlarge", "2.20.5")
    assert "NCCL_NVLS_CHUNKSIZE" not in env and env["NCCL_NVLSTREE_MAX_CHUNKSIZE"] == "524288"


def test_nvls_is_turned_off_below_nccl_2_18_5():
    # src/platform-aws.cpp: "if (version < 21805) ... insert_envvar("NCCL_NVLS_ENABLE", "0", false)"
    assert plugin_settings(ofi_nccl_release(), "p5.48xlarge", "2.18.3")["NCCL_NVLS_ENABLE"] == "0"
    assert "NCCL_NVLS_ENABLE" not in plugin_settings(ofi_nccl_release(), "p5.48xlarge", "2.18.5")


def test_instances_are_recognised_by_accelerator_and_efa_nic():
    assert efa_instance("h100-sxm", "efa-v2") == "p5.48xlarge"
    assert efa_instance("h200-sxm", "efa-v2") == "p5e.48xlarge"
    assert efa_instance("h200-sxm", "efa-v3") == "p5en.48xlarge"
    assert efa_instance("a100-sxm-40gb", "efa-v1") == "p4d.24xlarge"
    assert efa_instance("b200", "efa-v3") == "p6-b200.48xlarge"
    assert efa_instance("h100-sxm", "connectx-7") is None
    assert efa_instance("h100-sxm", "efa-v2", "p5e.48xlarge") == "p5e.48xlarge"  # named wins


def test_unknown_instance_and_release_are_refused_naming_the_field():
    with pytest.raises(ConfigError, match=r"scale_out.instance_type: 'p9.metal'.*known: p4d"):
        efa_instance("h100-sxm", "efa-v2", "p9.metal")
    with pytest.raises(ConfigError, match=r"ofi_nccl_version: '1.2.0' is older.*known: 1.9.0"):
        ofi_nccl_release("1.2.0")
    with pytest.raises(ConfigError, match=r"ofi_nccl_version: 'latest' is not a version"):
        ofi_nccl_release("latest")


def test_every_recorded_release_cites_its_tag_and_every_unmodelled_variable_says_why():
    for version in ofi_nccl_release_versions():
        assert f"v{version}" in ofi_nccl_release(version).source
    set_somewhere = {
        k for v in ofi_nccl_release_versions() for e in ofi_nccl_release(v).instances.values() for k in e
    }
    modelled = {"NCCL_NVLS_CHUNKSIZE", "NCCL_NVLSTREE_MAX_CHUNKSIZE", "NCCL_NVLS_ENABLE", "NCCL_PROTO"}
    assert set_somewhere - modelled == set(not_modelled())


def test_the_first_efa_generation_runs_simple_alone_and_p5_keeps_ll():
    # platform-aws.c default_protocol: SENDRECV on p4d / p4de, RDMA on p5 and later; EFA v1 refuses
    # FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES, so the plugin sets NCCL_PROTO=simple (#715, #889 logs)
    for version in ofi_nccl_release_versions():
        for instance in ("p4d.24xlarge", "p4de.24xlarge"):
            assert plugin_settings(ofi_nccl_release(version), instance, "2.23.4")["NCCL_PROTO"] == "simple"
        assert "NCCL_PROTO" not in plugin_settings(ofi_nccl_release(version), "p5.48xlarge", "2.23.4")

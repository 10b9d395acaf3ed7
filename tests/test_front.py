"""The Python front door: ``import aifabric as af`` (aifabric/__init__.py, aifabric/front.py)."""

from __future__ import annotations

import html
import json
import subprocess
import sys

import pandas as pd
import pytest

import aifabric as af
from aifabric.engines.api import collective_time
from aifabric.errors import ConfigError
from aifabric.report.answer import Answer


def _check_views(ans: Answer) -> None:
    json.dumps(ans.to_dict())  # JSON-ready
    frame = ans.to_pandas()
    assert isinstance(frame, pd.DataFrame)
    assert len(frame) == len(ans.rows)
    page = ans._repr_html_()
    assert page.startswith("<div") and page.endswith("</div>")
    for label, text in ans.headline:
        assert html.escape(label) in page and html.escape(text) in page


def test_import_is_cheap():
    """`import aifabric` loads neither the front door nor pandas (the CLI's start-up)."""
    code = "import sys, aifabric; print('aifabric.front' in sys.modules, 'pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_collective_time_is_the_library_answer():
    ans = af.collective_time("all_reduce", "1 GiB", "dgx-h100-superpod", ranks=16)
    lib = collective_time("all_reduce", 2**30, "dgx-h100-superpod", ranks=16)
    assert ans.time_s == lib.time_s and ans.algorithm == lib.algorithm
    assert ans.to_dict() == lib.to_dict()
    frame = ans.to_pandas()
    # candidates come fastest first, and the chosen one is the fastest
    assert frame["time_s"].is_monotonic_increasing
    assert frame["time_s"].iloc[0] == pytest.approx(lib.time_s)
    _check_views(ans)


def test_train_rows_add_up_to_the_step():
    st = af.train("megatron-gpt-39.1b", "dgx-h100-superpod", nodes=64, tp=8, pp=2, microbatch=4)
    assert st.n_gpus == 512 and st.layout.dp == 32  # dp = 512 / (8 x 2)
    assert st.to_pandas()["seconds"].sum() == pytest.approx(st.step_s, rel=1e-12)
    assert st.to_dict()["step_s"] == st.step_s
    _check_views(st)


def test_plan_winner_is_first_row():
    p = af.plan("megatron-gpt-39.1b", "dgx-h100-superpod", nodes=64, top=3)
    frame = p.to_pandas()
    assert list(frame["rank"]) == [1, 2, 3]
    assert frame["step_s"].iloc[0] == p.best.step_s
    assert frame["tokens_per_s"].is_monotonic_decreasing
    _check_views(p)


def test_fabric_names_the_bottleneck_link():
    f = af.fabric("all_reduce", "dgx-h100-superpod", size="256 MiB", nodes=4, engine="links", routing="spray")
    d = f.to_dict()
    assert d["bottleneck_link"] == f.result.result.top_links[0].label
    assert 0 < d["efficiency"] <= 1.0
    assert d["time_s"] >= d["ideal_time_s"] * (1 - 1e-6)
    _check_views(f)


def test_cluster_and_subpackage_share_the_name():
    import aifabric.cluster.spec as spec_module

    c = af.cluster("dgx-h100-superpod", nodes=32)
    assert (c.n_gpus, c.n_nodes, c.domain_gpus) == (256, 32, 8)  # DGX H100: 8 GPUs per node and NVLink domain
    assert af.cluster.spec is spec_module
    _check_views(c)


def test_inspect_reads_text_and_files(tmp_path):
    text = "\tGPU0\tGPU1\tNIC0\nGPU0\t X \tNV12\tPIX\nGPU1\tNV12\t X \tSYS\nNIC0\tPIX\tSYS\t X \n"
    ans = af.inspect(text)
    path = tmp_path / "topo.txt"
    path.write_text(text)
    assert af.inspect(path).to_dict()["nodes"][0]["gpus"] == ans.to_dict()["nodes"][0]["gpus"]
    frame = ans.to_pandas()
    assert set(frame["path"]) == {"PIX", "SYS"}
    _check_views(ans)


def test_sweep_resumes_into_the_same_store(tmp_path):
    grid = {
        "cluster": "dgx-h100-superpod",
        "vary": {"nodes": [16, 32]},
        "collectives": [{"op": "all_reduce", "sizes": ["1 MiB", "1 GiB"]}],
    }
    first = af.sweep(grid, tmp_path / "s.db", executor="local")
    again = af.sweep(grid, tmp_path / "s.db")
    assert first.result == (4, 0) and again.result == (0, 4)
    frame = again.to_pandas()
    assert len(frame) == 4 and frame["time_s"].dtype.kind == "f"
    _check_views(again)


def test_html_escapes_user_strings():
    ans = Answer("cluster", "<script>x</script>", None, (("name", "<b>"),), {}, ({"a": "<i>"},))
    page = ans._repr_html_()
    assert "<script>" not in page and "&lt;b&gt;" in page and "&lt;i&gt;" in page


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: af.cluster("no-such-cluster"), "no-such-cluster"),
        (lambda: af.collective_time("all_reduce", "12 parsecs", "dgx-h100-superpod"), "size"),
        (lambda: af.train("gpt3-175b", "dgx-h100-superpod", nodes=2, tp=3), "tp"),
    ],
)
def test_bad_input_names_the_field(call, needle):
    with pytest.raises((ConfigError, ValueError), match=needle):
        call()


def test_a_cluster_answer_its_result_and_a_spec_are_taken_everywhere():
    # the trial: af.cluster(...) passed on used to be read as a file name
    c = af.cluster("dgx-h100-superpod", nodes=4)
    by_name = af.collective_time("all_reduce", "1 GiB", "dgx-h100-superpod", nodes=4)
    assert by_name.n_ranks == 32  # 4 nodes x 8 GPUs
    for same in (c, c.result, c.result.spec):
        assert af.collective_time("all_reduce", "1 GiB", same).time_s == by_name.time_s
    f = af.fabric("all_reduce", c, size="64 MiB", engine="links")
    assert (
        f.to_dict()["time_s"]
        == af.fabric("all_reduce", size="64 MiB", nodes=4, engine="links").to_dict()["time_s"]
    )
    assert af.cluster(c).n_gpus == 32


def test_something_that_is_not_a_cluster_is_refused_naming_cluster():
    with pytest.raises(ConfigError, match=r"^cluster: expected a preset name, .* got int$"):
        af.collective_time("all_reduce", "1 GiB", 5)

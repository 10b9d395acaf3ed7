"""In-suite fuzz (hypothesis, derandomised by tests/conftest.py): generated CLI values for ``collective`` and
``sweep`` give a result or one clean line, never a traceback. The long run is benchmarks/fuzz_inputs.py."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from aifabric import budget
from aifabric.cli.app import app

SMALL = ["h100-ib-2node", "v100-pcie-4gpu", "tpu-v5p-pod", "gb200-nvl72"]
OPS = ["all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast", "reduce", "send_recv"]
WEIRD = st.sampled_from(["", "nan", "inf", "-1", "0", "1e309", "[/]", "\x1b[31m", "9" * 30, "1 GB/s", "x"])
SIZE = st.one_of(st.sampled_from(["8 B", "1 MB", "1 GiB", "1 TB", "3 B"]), WEIRD)
INT = st.one_of(st.integers(-3, 70_000), st.sampled_from([2**31, 2**63, 10**30]))
FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _check(result) -> None:
    assert result.exit_code in (0, 2), repr(result.exception)
    if result.exit_code == 2:
        lines = result.stderr.strip().splitlines()
        # typer's own usage errors (an int option given "x") come as a box; ours are one "error:" line
        assert lines and (len(lines) == 1 and lines[0].startswith("error: ") or "Usage:" in result.stderr)


@FUZZ
@given(
    op=st.sampled_from(OPS),
    cluster=st.sampled_from(SMALL),
    engine=st.sampled_from(["formula", "formula", "links", "flow"]),
    size=SIZE,
    nodes=st.one_of(st.none(), INT),
    ranks=st.one_of(st.none(), INT),
    algo=st.one_of(st.none(), st.sampled_from(["ring", "tree", "nvls", "direct", "torus", "p2p", "x"])),
    seed=st.one_of(st.none(), INT),
)
def test_collective_values(op, cluster, engine, size, nodes, ranks, algo, seed):
    args = ["--max-memory", "512MiB", "collective", op, "-c", cluster, "--engine", engine, "-s", size]
    for flag, value in (("--nodes", nodes), ("--ranks", ranks), ("--algo", algo), ("--seed", seed)):
        if value is not None:
            args += [flag, str(value)]
    _check(CliRunner().invoke(app, args))
    budget.set_memory_limit(None)


VALUE = st.one_of(
    INT,
    st.floats(allow_nan=True, allow_infinity=True),
    WEIRD,
    st.none(),
    st.booleans(),
    st.lists(INT, max_size=3),
)


@FUZZ
@given(
    key=st.sampled_from(
        [
            "nodes",
            "name",
            "scale_out.nic_speed",
            "scale_out.planes",
            "scale_out.oversubscription",
            "",
            "x.y",
            "name.z",
        ]
    ),
    values=st.one_of(st.lists(VALUE, min_size=1, max_size=3), VALUE),
    cluster=st.sampled_from([*SMALL, "nope"]),
)
def test_sweep_values(tmp_path_factory, key, values, cluster):
    d = tmp_path_factory.mktemp("sweep")
    text = json.dumps({"cluster": cluster, "vary": {key: values}}, allow_nan=True)
    (d / "s.yaml").write_text(
        text.replace("NaN", ".nan").replace("-Infinity", "-.inf").replace("Infinity", ".inf")
    )
    _check(CliRunner().invoke(app, ["sweep", str(d / "s.yaml"), "--db", str(d / "o.db")]))

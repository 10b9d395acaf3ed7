"""Every engine declares the options it takes and refuses the others (issue 8, item 8)."""

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cli.collective import FLAGS
from aifabric.cluster.presets import preset
from aifabric.collectives.communicator import Communicator
from aifabric.engines.api import ENGINE_OPTIONS, check_engine_options, collective_time
from aifabric.engines.fabric import fabric_collective

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


def test_the_issue_command_is_refused_naming_the_first_dropped_option():
    r = run(
        "collective", "all_reduce", "-c", "h100-ib-2node", "--size", "1GiB", "--engine", "links",
        "--proto", "LL", "--convention", "bidirectional", "--calibration", "missing.yaml",
    )  # fmt: skip
    assert r.exit_code == 2
    assert r.stderr == (
        "error: --calibration: the links engine does not take this option "
        "(it takes --algo, --efficiency, --routing, --seed)\n"
    )


@pytest.mark.parametrize(
    "engine,args,option",
    [
        ("links", ("--proto", "LL"), "--proto"),
        ("links", ("--convention", "bidirectional"), "--convention"),
        ("links", ("--no-nvls",), "--no-nvls"),
        ("links", ("--calibration", "missing.yaml"), "--calibration"),
        ("flow", ("--proto", "Simple"), "--proto"),
        ("formula", ("--routing", "ecmp"), "--routing"),
        ("formula", ("--seed", "3"), "--seed"),
    ],
)
def test_each_dropped_option_exits_2_with_one_line(engine, args, option):
    r = run("collective", "all_reduce", "-c", "h100-ib-2node", "--size", "1GiB", "--engine", engine, *args)
    assert r.exit_code == 2
    assert r.stderr.startswith(f"error: {option}: the {engine} engine does not take this option (it takes ")
    assert len(r.stderr.strip().splitlines()) == 1


def test_the_topology_engines_take_what_they_use():
    r = run(
        "collective", "all_reduce", "-c", "h100-ib-2node", "--size", "1GiB", "--engine", "links",
        "--algo", "ring", "--routing", "ecmp", "--seed", "2", "--efficiency", "line_rate", "--json",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr


def test_the_front_door_refuses_an_option_and_lists_the_others():
    with pytest.raises(
        ValueError, match=r"^protocol: the links engine does not take this option \(it takes "
    ):
        collective_time("all_reduce", 1e9, "h100-ib-2node", engine="links", protocol="LL")
    with pytest.raises(ValueError, match="^routing: the formula engine"):
        collective_time("all_reduce", 1e9, "h100-ib-2node", routing="ecmp")
    with pytest.raises(ValueError, match="^engine: unknown engine 'fast'"):
        check_engine_options("fast", [])
    # the flow engine takes what the links engine takes, and a transport model (aifabric.transport.wire)
    assert ENGINE_OPTIONS["flow"] == ENGINE_OPTIONS["links"] | {"transport"}


def test_the_front_door_refuses_an_algorithm_without_a_plan_on_the_links_engine():
    with pytest.raises(ValueError, match="'nvls' has no transfer-level plan"):
        collective_time("all_reduce", 1e9, "h100-ib-2node", engine="links", algorithm="nvls")


def test_fabric_collective_takes_no_unknown_keyword():
    spec = preset("h100-ib-2node")
    with pytest.raises(TypeError, match="protocol"):
        fabric_collective("all_reduce", 1e9, spec, Communicator.contiguous(spec), protocol="LL")  # type: ignore[call-arg]


#: A value each flag takes (a file a refusal must not open: the refusal comes before any file is read).
FLAG_VALUES = {
    "--algo": ("--algo", "ring"),
    "--proto": ("--proto", "Simple"),
    "--no-nvls": ("--no-nvls",),
    "--convention": ("--convention", "bidirectional"),
    "--efficiency": ("--efficiency", "line_rate"),
    "--calibration": ("--calibration", "missing.yaml"),
    "--nccl-version": ("--nccl-version", "2.21.5"),
    "--env": ("--env", "NCCL_ALGO=Ring"),
    "--routing": ("--routing", "ecmp"),
    "--seed": ("--seed", "3"),
    "--transport": ("--transport", "ib"),
    "--gpus-per-thread": ("--gpus-per-thread", "2"),
    "--launch-us": ("--launch-us", "4.2"),
}


def _dropped():
    for engine, takes in ENGINE_OPTIONS.items():
        for option, flag in sorted(FLAGS.items()):
            if option not in takes:
                yield pytest.param(engine, flag, id=f"{engine} {flag}")


@pytest.mark.parametrize("engine,flag", list(_dropped()))
def test_every_option_an_engine_does_not_take_exits_2_naming_it(engine, flag):
    # ENGINE_OPTIONS x the CLI's flags: every pair the engine does not take (links: --proto, --convention,
    # --no-nvls, --calibration, --nccl-version, --env, --transport; flow: the same less --transport;
    # formula: --routing, --seed, --transport) is one line naming it, exit 2
    r = run("collective", "all_reduce", "-c", "h100-ib-2node", "--size", "1GiB", "--engine", engine,
            *FLAG_VALUES[flag])  # fmt: skip
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith(f"error: {flag}: the {engine} engine does not take this option (it takes ")
    assert len(r.stderr.strip().splitlines()) == 1


def test_every_flag_has_a_value_here():
    assert set(FLAG_VALUES) == set(FLAGS.values())

"""``aifabric --help`` lists every command without importing them (issue 8, Speed: start-up time), and
shows exactly what the whole app's ``--help`` shows."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from aifabric.cli import app as app_module
from aifabric.cli.app import COMMANDS, build_app, overview_app
from aifabric.cli.overview import command_help


@pytest.mark.parametrize("width", [80, 200])
def test_overview_help_is_the_whole_apps_help(width: int) -> None:
    overview = overview_app()
    assert overview is not None
    runner = CliRunner()
    whole = runner.invoke(build_app(), ["--help"], terminal_width=width)
    quick = runner.invoke(overview, ["--help"], terminal_width=width)
    assert quick.exit_code == whole.exit_code == 0
    assert quick.output == whole.output
    assert all(name in quick.output for name in COMMANDS)


def test_help_is_read_from_source() -> None:
    assert command_help("aifabric.cli.cluster", "cluster_app") == (
        "Describe clusters: presets, networks, parts and power."
    )
    assert command_help("aifabric.cli.collective", "collective").startswith("Time a collective on a cluster")
    assert command_help("aifabric.cli.collective", "no_such_command") is None


def test_unreadable_help_builds_the_whole_app(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app_module, "command_help", lambda module, attr: None)
    assert overview_app() is None
    whole = app_module._app_for(["--help"])
    commands = [name for name, (_, _, kind) in COMMANDS.items() if kind == "command"]
    assert [c.name for c in whole.registered_commands] == commands
    assert all(c.callback is not app_module._stand_in for c in whole.registered_commands)


def test_help_imports_no_command() -> None:
    code = (
        "import sys; sys.argv = ['aifabric', '--help']\n"
        "from aifabric.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit as stop:\n    assert not stop.code, stop.code\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('aifabric.cli.') or m == 'scipy')\n"
        "print(' '.join(loaded), file=sys.stderr)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "collective" in run.stdout
    assert run.stderr.split() == ["aifabric.cli.app", "aifabric.cli.common", "aifabric.cli.overview"]

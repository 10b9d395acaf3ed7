"""The one check of a refused command line: exit 2 and one line on stderr holding each needle."""

from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()


def refused(args: list[str], *needles: str) -> str:
    """Run ``aifabric ARGS``; assert exit 2 and one stderr line holding every needle; return the line."""
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.stdout
    line = r.stderr.strip()
    assert len(line.splitlines()) == 1, line
    for needle in needles:
        assert needle in line, line
    return line

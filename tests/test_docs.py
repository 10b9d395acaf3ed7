"""Every command of the docs/ pages runs (console blocks through the CLI, python blocks executed)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"```(\w+)([^\n]*)\n(.*?)```", re.S)
#: Options whose value is a file the command writes.
OUTPUTS = {"--html", "--trace", "--csv", "--parquet", "--pareto", "--db", "--output", "--plot"}
PAGES = sorted(p for p in DOCS.glob("*.md") if BLOCK.search(p.read_text()))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_commands_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ran = 0
    for lang, info, body in BLOCK.findall(page.read_text()):
        name = re.search(r"file=(\S+)", info)
        if name:  # a file the commands below read
            Path(name.group(1)).write_text(body)
        elif lang == "console":
            for line in body.splitlines():
                if line.startswith("$ aifabric "):
                    args = shlex.split(line[len("$ aifabric ") :])
                    res = CliRunner().invoke(app, args)
                    assert res.exit_code == 0, f"{page.name}: {line}\n{res.output}"
                    ran += 1
                    for option, path in zip(args, args[1:], strict=False):  # the files it says it writes
                        if option in OUTPUTS:
                            assert Path(path).stat().st_size > 0, f"{page.name}: {line}: {path}"
        elif lang == "python":
            exec(compile(body, f"{page.name}:python", "exec"), {})
            ran += 1
    assert ran
    if page.name == "quickstart.md":  # the files the page says it writes
        for name in (
            "step.json",
            "step.html",
            "plan.html",
            "fabric.html",
            "sweep.db",
            "sweep.parquet",
            "pareto.png",
        ):
            assert (tmp_path / name).stat().st_size > 0, name
        assert (tmp_path / "htsim" / "cluster.topo").exists() and (
            tmp_path / "astra" / "network.yml"
        ).exists()

"""The ``aifabric`` command: one Typer app, one module per command group."""

from __future__ import annotations

import typer

from aifabric.cli.cluster import cluster_app
from aifabric.cli.collective import collective
from aifabric.cli.demo import demo
from aifabric.cli.ladder import ladder

__all__ = ["app", "main"]

app = typer.Typer(
    name="aifabric",
    help="Model, simulate and plan the networks of AI clusters. Exit codes: 0 ok, 2 bad input, 1 internal error.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.command("collective")(collective)
app.command("ladder")(ladder)
app.command("demo")(demo)
app.add_typer(cluster_app, name="cluster")


def _register_optional() -> None:
    """Command groups of later layers register here when present."""
    import importlib

    for module, attr, name, kind in (
        ("aifabric.cli.fabric", "fabric", "fabric", "command"),
        ("aifabric.cli.train", "train", "train", "command"),
        ("aifabric.cli.train", "plan", "plan", "command"),
        ("aifabric.cli.inspect", "inspect", "inspect", "command"),
        ("aifabric.cli.inspect", "nccl_tests_app", "nccl-tests", "group"),
        ("aifabric.cli.inspect", "calibrate", "calibrate", "command"),
    ):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError:
            continue
        obj = getattr(mod, attr, None)
        if obj is None:
            continue
        if kind == "group":
            app.add_typer(obj, name=name)
        else:
            app.command(name)(obj)


_register_optional()


def main() -> None:
    """Console-script entry point."""
    app()

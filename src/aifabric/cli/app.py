"""The ``aifabric`` command: one Typer app, one module per command group."""

from __future__ import annotations

import sys

import typer

from aifabric import __version__
from aifabric.cli.cluster import cluster_app
from aifabric.cli.collective import collective
from aifabric.cli.common import CatalogOption, use_catalog
from aifabric.cli.demo import demo
from aifabric.cli.ladder import ladder
from aifabric.errors import AifabricError

__all__ = ["app", "main"]

app = typer.Typer(
    name="aifabric",
    help="Model, simulate and plan the networks of AI clusters. Exit codes: 0 ok, 2 bad input, 1 internal "
    "error.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        print(f"aifabric {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", help="Print the version and exit.", callback=_version, is_eager=True
    ),
    catalog_files: CatalogOption = None,
) -> None:
    """Model, simulate and plan the networks of AI clusters."""
    try:
        use_catalog(catalog_files)
    except AifabricError as err:
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        raise typer.Exit(code=2) from None


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
        ("aifabric.cli.sweep", "sweep", "sweep", "command"),
        ("aifabric.cli.checkpoint", "checkpoint", "checkpoint", "command"),
        ("aifabric.cli.announcement", "announcement", "announcement", "command"),
        ("aifabric.cli.scale_across", "scale_across", "scale-across", "command"),
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
    """Console-script entry point: usage errors become one line on stderr and exit code 2."""
    try:
        rc = app(standalone_mode=False)
        sys.exit(rc if isinstance(rc, int) else 0)
    except typer.Exit as err:
        sys.exit(getattr(err, "exit_code", 0))
    except typer.Abort:
        print("aborted", file=sys.stderr)
        sys.exit(1)
    except typer.TyperException as err:  # the vendored click's UsageError and friends
        ctx = getattr(err, "ctx", None)
        if type(err).__name__ == "NoArgsIsHelpError" and ctx is not None:
            print(ctx.get_help())
            sys.exit(0)
        message = err.format_message() if hasattr(err, "format_message") else str(err)
        where = (
            f" (aifabric {ctx.command_path.removeprefix('aifabric').strip()})"
            if ctx is not None and ctx.command_path.strip() != "aifabric"
            else ""
        )
        print(f"error: {' '.join(message.split())}{where}", file=sys.stderr)
        sys.exit(getattr(err, "exit_code", 2) or 2)

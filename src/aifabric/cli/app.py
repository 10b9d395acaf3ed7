"""The ``aifabric`` command: one Typer app, one module per command group."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import typer

from aifabric import __version__, budget
from aifabric.cli.common import (
    CatalogOption,
    ValueWordsCommand,
    numbers_as_values,
    quiet_broken_pipe,
    use_catalog,
)
from aifabric.cli.overview import command_help
from aifabric.errors import AifabricError

__all__ = ["COMMANDS", "NO_MEMORY_LIMIT", "app", "build_app", "main", "overview_app"]

app: typer.Typer  # the whole app, built on first access by the module's __getattr__ (tests, --help)

#: Every command: name -> (module, attribute, kind). Modules are imported only when their command runs
#: (or when the whole app is built, for --help and tests), so ``aifabric collective`` does not pay for
#: scipy, matplotlib or the training models at start-up.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "collective": ("aifabric.cli.collective", "collective", "command"),
    "ladder": ("aifabric.cli.ladder", "ladder", "command"),
    "demo": ("aifabric.cli.demo", "demo", "command"),
    "cluster": ("aifabric.cli.cluster", "cluster_app", "group"),
    "fabric": ("aifabric.cli.fabric", "fabric", "command"),
    "train": ("aifabric.cli.train", "train", "command"),
    "plan": ("aifabric.cli.train", "plan", "command"),
    "inspect": ("aifabric.cli.inspect", "inspect", "command"),
    "nccl-tests": ("aifabric.cli.nccl_tests", "nccl_tests_app", "group"),
    "calibrate": ("aifabric.cli.nccl_tests", "calibrate", "command"),
    "sweep": ("aifabric.cli.sweep", "sweep", "command"),
    "checkpoint": ("aifabric.cli.checkpoint", "checkpoint", "command"),
    "announcement": ("aifabric.cli.announcement", "announcement", "command"),
    "scale-across": ("aifabric.cli.scale_across", "scale_across", "command"),
    "transport": ("aifabric.cli.transport", "transport_command", "command"),
    "export": ("aifabric.cli.export", "export", "command"),
    "import-chakra": ("aifabric.cli.chakra", "import_chakra", "command"),
}


#: Commands whose work holds no array the memory limit bounds: no topology is built, no flow routed, no
#: matrix written (the planner keeps its ``--top`` layouts and a cache of collective times; the ladder,
#: scale-across, inspect and demo are closed forms over the spec). ``--max-memory`` given with one of them is
#: refused, named, rather than taken and never used; ``AIFABRIC_MAX_MEMORY`` set for the shell is not.
NO_MEMORY_LIMIT = frozenset({"plan", "ladder", "scale-across", "inspect", "demo"})


def _version(value: bool) -> None:
    if value:
        print(f"aifabric {__version__}")
        raise typer.Exit()


def _max_memory(value: str | None) -> str | None:
    """Set this run's memory limit (None: the environment's or the default), see :mod:`aifabric.budget`."""
    try:
        budget.set_memory_limit(value)
        budget.memory_limit_bytes()  # a bad AIFABRIC_MAX_MEMORY is refused up front, as --max-memory is
    except AifabricError as err:
        print(f"error: {err}", file=sys.stderr)
        raise typer.Exit(code=2) from None
    return value


def _root(
    ctx: typer.Context,
    version: bool = typer.Option(
        False, "--version", help="Print the version and exit.", callback=_version, is_eager=True
    ),
    catalog_files: CatalogOption = None,
    max_memory: str | None = typer.Option(
        None,
        "--max-memory",
        help="Refuse work estimated to need more memory than this, e.g. '8GiB' (default: half of the "
        f"machine's; env AIFABRIC_MAX_MEMORY); {', '.join(sorted(NO_MEMORY_LIMIT))} hold nothing it "
        "bounds and refuse it",
        callback=_max_memory,
    ),
) -> None:
    """Model, simulate and plan the networks of AI clusters."""
    try:
        use_catalog(catalog_files)
    except AifabricError as err:
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        raise typer.Exit(code=2) from None
    if max_memory is not None and ctx.invoked_subcommand in NO_MEMORY_LIMIT:
        print(
            f"error: --max-memory: aifabric {ctx.invoked_subcommand} builds no topology and routes no flows, "
            "so no memory limit applies to it; leave --max-memory out",
            file=sys.stderr,
        )
        raise typer.Exit(code=2)


def _root_app() -> typer.Typer:
    """The app with its own options and no command yet."""
    new = typer.Typer(
        name="aifabric",
        help="Model, simulate and plan the networks of AI clusters. "
        "Exit codes: 0 ok, 2 bad input, 1 internal error.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
    )
    new.callback()(_root)
    return new


def build_app(names: list[str] | None = None) -> typer.Typer:
    """The Typer app with the commands ``names`` (default: all of :data:`COMMANDS`)."""
    new = _root_app()
    for name in names if names is not None else list(COMMANDS):
        module, attr, kind = COMMANDS[name]
        obj = getattr(importlib.import_module(module), attr)
        if kind == "group":
            new.add_typer(numbers_as_values(obj), name=name)
        else:
            new.command(name, cls=ValueWordsCommand)(obj)
    return new


def __getattr__(name: str) -> typer.Typer:
    """``app``: the whole app, built on first use (tests, ``--help``)."""
    if name == "app":
        full = build_app()
        globals()["app"] = full
        return full
    raise AttributeError(name)


def overview_app() -> typer.Typer | None:
    """The app ``aifabric --help`` (or no argument) shows: every command with its help, read from source
    (:func:`aifabric.cli.overview.command_help`) and none imported; None when a help cannot be read so.

    Typer lists commands before groups, so the stand-ins are added in that order; none of them runs.
    """
    helps = {name: command_help(module, attr) for name, (module, attr, _) in COMMANDS.items()}
    if any(text is None for text in helps.values()):
        return None
    new = _root_app()
    for kind in ("command", "group"):
        for name, (_, _, of_kind) in COMMANDS.items():
            if of_kind == kind:
                new.command(name, help=helps[name])(_stand_in)
    return new


def _stand_in() -> None:
    """A command of :func:`overview_app`: its help is shown, it never runs."""


def _app_for(argv: list[str]) -> typer.Typer:
    """Only the command named on the command line (the first word that is one; options such as
    ``--catalog FILE`` may come before it), else the overview for ``--help`` or no argument (start-up
    time), else every command (for errors)."""
    first = next((a for a in argv if a in COMMANDS), None)
    if first is not None:
        return build_app([first])
    overview = overview_app() if argv in ([], ["--help"]) else None
    return overview if overview is not None else build_app()


def repeated_option(command: Any, argv: list[str]) -> str | None:
    """Why ``argv`` is refused for an option that takes one value given more than once under any of its
    spellings (``-c A --cluster B``: Click keeps the last one silently), or None. ``command`` is the root
    Click command (Typer's vendored Click, so read by its attributes); the words naming subcommands lead
    to the one run.

    >>> import typer
    >>> one = typer.Typer()
    >>> @one.command()
    ... def run(gpu: str = typer.Option("h100", "-g", "--gpu")) -> None: ...
    >>> repeated_option(typer.main.get_command(one), ["-g", "h100", "--gpu=b200"])
    "--gpu: given 2 times ('h100', 'b200'); give it once"
    >>> repeated_option(typer.main.get_command(one), ["-gh100", "-g", "b200"])
    "--gpu: given 2 times ('h100', 'b200'); give it once"
    """
    single = _single_valued(command, argv)
    seen: dict[str, list[str]] = {}
    for index, word in enumerate(argv[: argv.index("--") if "--" in argv else len(argv)]):
        opt, eq, value = word.partition("=")
        if opt not in single and word[:2] in single and not word.startswith("--"):
            opt, eq, value = word[:2], "=", word[2:]  # a short option with its value attached: -cA
        if opt in single:
            given = value if eq else (argv[index + 1] if index + 1 < len(argv) else "")
            seen.setdefault(single[opt], []).append(given)
    for opt, values in seen.items():
        if len(values) > 1:
            return f"{opt}: given {len(values)} times {tuple(values)}; give it once"
    return None


def _single_valued(command: Any, argv: list[str]) -> dict[str, str]:
    """Every spelling (``-c``, ``--cluster``) of every option that takes one value, of the root
    ``command`` and the subcommands ``argv`` names, mapped to its longest spelling (the name refusals
    give)."""
    single: dict[str, str] = {}
    for param in _options_of(command, argv):
        if not (param.multiple or param.count or param.is_flag):
            longest = max(param.opts, key=len)
            single.update((opt, longest) for opt in param.opts)
    return single


def _options_of(command: Any, argv: list[str]) -> list[Any]:
    """The options of the root ``command`` and of the subcommands ``argv`` names, in that order."""
    options: list[Any] = []
    for name in [None, *argv]:
        if name is not None:
            if name not in getattr(command, "commands", {}):
                continue
            command = command.commands[name]
        options.extend(param for param in command.params if param.param_type_name == "option")
    return options


def contradicting_flag(command: Any, argv: list[str]) -> str | None:
    """Why ``argv`` is refused for a yes/no flag given both ways (``--gds --no-gds``: Click keeps the
    last one silently), or None; ``command`` and ``argv`` as :func:`repeated_option` reads them.

    >>> import typer
    >>> one = typer.Typer()
    >>> @one.command()
    ... def run(sp: bool = typer.Option(True, "--sp/--no-sp")) -> None: ...
    >>> contradicting_flag(typer.main.get_command(one), ["--no-sp", "--sp"])
    '--sp and --no-sp: both given; give one'
    >>> contradicting_flag(typer.main.get_command(one), ["--sp", "--sp"]) is None
    True
    """
    words = set(argv[: argv.index("--") if "--" in argv else len(argv)])
    for param in _options_of(command, argv):
        yes = [opt for opt in param.opts if opt in words]
        no = [opt for opt in getattr(param, "secondary_opts", []) if opt in words]
        if param.is_flag and yes and no:
            return f"{yes[0]} and {no[0]}: both given; give one"
    return None


def with_value(err: BaseException, message: str) -> str:
    """``message`` of a usage error followed by the value the user typed, where Typer's check of the
    option's type or range (a Pydantic ValidationError, the error's cause) holds it and ``message`` does
    not name it: "Input should be greater than or equal to 1" becomes "... to 1 (got '0')".

    >>> from pydantic import Field, TypeAdapter, ValidationError
    >>> from typing import Annotated
    >>> try:
    ...     TypeAdapter(Annotated[int, Field(ge=1)]).validate_python("0")
    ... except ValidationError as cause:
    ...     err = ValueError("Invalid value for '--gpus-per-thread'")
    ...     err.__cause__ = cause
    >>> with_value(err, str(err))
    "Invalid value for '--gpus-per-thread' (got '0')"
    """
    errors = getattr(err.__cause__, "errors", None)
    found = errors() if callable(errors) else []
    given = found[0].get("input") if found and isinstance(found[0], dict) else None
    if not isinstance(given, str) or repr(given) in message:
        return message
    return f"{message} (got {given!r})"


#: The options of ``aifabric`` itself (:func:`_root`), refused after a command's name.
_ROOT_OPTIONS = frozenset({"--catalog", "--max-memory"})


def main() -> None:
    """Console-script entry point: usage errors become one line on stderr and exit code 2; output cut
    short by its reader (``aifabric ... | head -1``) ends quietly with the shell's SIGPIPE code, 141."""
    try:
        _main()
    except BrokenPipeError:
        sys.exit(quiet_broken_pipe())


def _main() -> None:
    """:func:`main` less its broken-pipe handling."""
    argv = sys.argv[1:]
    if argv[:1] == ["--version"]:  # answered before any command is built (start-up time)
        print(f"aifabric {__version__}")
        sys.exit(0)
    chosen = _app_for(argv)
    root = typer.main.get_command(chosen)
    if (repeat := repeated_option(root, argv) or contradicting_flag(root, argv)) is not None:
        print(f"error: {repeat}", file=sys.stderr)
        sys.exit(2)
    try:
        rc = chosen(standalone_mode=False)
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
        message = with_value(err, err.format_message() if hasattr(err, "format_message") else str(err))
        if "No such option" in message and _ROOT_OPTIONS.intersection(sys.argv[1:]):
            message += (
                "; aifabric's own options go before the command (aifabric --catalog FILE collective ...)"
            )
        where = (
            f" (aifabric {ctx.command_path.removeprefix('aifabric').strip()})"
            if ctx is not None and ctx.command_path.strip() != "aifabric"
            else ""
        )
        print(f"error: {' '.join(message.split())}{where}", file=sys.stderr)
        sys.exit(getattr(err, "exit_code", 2) or 2)

"""Shared CLI plumbing: one-line errors with exit code 2, cluster options, console objects.

Exit codes: 0 success; 1 an unexpected internal error (a bug: please report it); 2 bad input (unknown
preset, wrong unit, malformed file, infeasible layout), with one line on stderr naming the field and value.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text
from typer._click.parser import _OptionParser, _ParsingState
from typer.core import TyperCommand

from aifabric import catalog
from aifabric.errors import AifabricError
from aifabric.inputs import printable
from aifabric.lazy_import import lazy_module

if TYPE_CHECKING:
    from rich import progress
else:
    progress = lazy_module("rich.progress")  # flow-engine runs on a terminal only: not at start-up

__all__ = [
    "BROKEN_PIPE_EXIT",
    "CatalogOption",
    "ClusterOpt",
    "CommandClusterOpt",
    "HtmlOpt",
    "TraceOpt",
    "ValueWordsCommand",
    "check_outputs",
    "cluster_argument",
    "devices",
    "console",
    "emit_json",
    "err_console",
    "handle_errors",
    "is_number_word",
    "literal",
    "non_finite_at",
    "named_option",
    "numbers_as_values",
    "one_cluster",
    "quiet_broken_pipe",
    "options_as_typed",
    "progress_bar",
    "use_catalog",
]


class _LiteralConsole(Console):
    """A rich Console for text that comes from input files.

    Markup is off unless a call asks for it (``console.print(..., markup=True)``, whose input-derived
    parts go through :func:`literal`), so a cluster named ``[/]`` prints as ``[/]``; and every string it
    renders, table cells included, has its control characters and escape sequences made visible
    (:func:`aifabric.inputs.printable`) so that a name from a file cannot drive the terminal. Piped (no
    colour system), strings are not highlighted: rich's highlighter only adds colours, and its regexes
    cost start-up time (issue 9).
    """

    def render_str(self, text: str, **kwargs: Any) -> Text:
        if self.color_system is None:  # piped: highlighting would only add styles nobody sees (start-up)
            kwargs["highlight"] = False
        return super().render_str(printable(text), **kwargs)

    def on_broken_pipe(self) -> None:
        """The reader of stdout left (``aifabric ... | head -1``): end quietly with the same code as a
        ``--json`` run, :data:`BROKEN_PIPE_EXIT` (rich's own handler exits 1)."""
        self.quiet = True
        raise SystemExit(quiet_broken_pipe())


# Wide tables when piped (files, CI logs); prose is never hard-wrapped.
console = _LiteralConsole(width=None if sys.stdout.isatty() else 180, soft_wrap=True, markup=False)
err_console = _LiteralConsole(stderr=True, soft_wrap=True, markup=False)
F = TypeVar("F", bound=Callable[..., Any])
#: Longest error line printed, characters: a message quoting a 1 MB input line is cut in its middle.
MAX_ERROR_CHARS = 600


def literal(text: object) -> str:
    """Input-derived text (a cluster, node, GPU or collective name) ready for a rich console: control
    characters and escape sequences made visible (:func:`aifabric.inputs.printable`), markup escaped so
    that ``[/]`` or ``[bold]`` in a name print as written.

    >>> literal("[/]x\x1b[2J")
    '\\\\[/]x\\\\x1b[2J'
    """
    return escape(printable(text))


#: ``-c/--cluster`` of the commands that also take the cluster as their first argument (:func:`one_cluster`).
ClusterOpt = Annotated[
    str | None,
    typer.Option("--cluster", "-c", help="Preset name or cluster YAML file", show_default=False),
]
#: ``-c/--cluster`` of the commands that take the cluster only so, with a default ``--help`` shows.
CommandClusterOpt = Annotated[str, typer.Option("--cluster", "-c", help="Preset name or cluster YAML file")]


def cluster_argument(default: str) -> Any:
    """The optional CLUSTER argument of a command that took its cluster so before it took ``-c/--cluster``
    (``aifabric ladder tpu-v5p-pod``): still read, ``default`` when neither is given (:func:`one_cluster`)."""
    return typer.Argument(
        metavar="CLUSTER",
        help=f"Preset name or cluster YAML file, as -c/--cluster (default: {default})",
        show_default=False,
    )


def one_cluster(argument: str | None, option: str | None, default: str) -> str:
    """The cluster a command was given as its argument or as ``-c/--cluster``, else ``default``.

    Raises
    ------
    ValueError
        Naming both when the argument and the option name different clusters.

    >>> one_cluster(None, "gb200-nvl72", "tpu-v5p-pod"), one_cluster("tpu-v5p-pod", None, "x")
    ('gb200-nvl72', 'tpu-v5p-pod')
    """
    if argument is not None and option is not None and argument != option:
        raise ValueError(
            f"--cluster: {option!r} and the CLUSTER argument {argument!r} name two clusters; give one of them"
        )
    return option or argument or default


#: ``--html FILE``: a self-contained HTML report (aifabric.report.html).
HtmlOpt = Annotated[
    Path | None,
    typer.Option(
        "--html",
        help="Write a self-contained HTML report (.html; no network needed to view it); missing folders "
        "above it are created",
    ),
]
#: ``--trace FILE``: Chrome/Perfetto trace JSON (aifabric.report.trace).
TraceOpt = Annotated[
    Path | None,
    typer.Option(
        "--trace", help="Write a Chrome/Perfetto trace (.json; open in ui.perfetto.dev), times in us"
    ),
]


def handle_errors(fn: F) -> F:
    """Turn AifabricError / ValueError / OSError into ``error: <message>`` on stderr and exit code 2, and
    Ctrl-C (KeyboardInterrupt) into ``interrupted`` and exit code 130.

    The message is one line: newlines become spaces, control characters are made visible and a message
    longer than :data:`MAX_ERROR_CHARS` is cut in its middle. An ``OSError`` is a file that could not be
    read or written (a full disk, a vanished folder) after the up-front checks passed.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except BrokenPipeError:  # the reader left (``... --json | head -1``): not an input error
            raise typer.Exit(code=quiet_broken_pipe()) from None
        except (AifabricError, ValueError) as err:
            _fail(str(err))
        except OSError as err:
            where = f"{err.filename}: " if err.filename else ""
            _fail(f"{where}{err.strerror or err}")
        except KeyboardInterrupt:  # Ctrl-C: one line, the shell's code for SIGINT (128 + 2)
            print("interrupted", file=sys.stderr)
            raise typer.Exit(code=130) from None

    return wrapper  # type: ignore[return-value]


@contextmanager
def options_as_typed(flags: Mapping[str, str]) -> Iterator[None]:
    """Errors raised inside name an engine's field (``algorithm: 'nvls' does not apply ...``): re-raise
    them as ValueError naming the option as the user typed it (``--algo: 'nvls' does not apply ...``).

    ``flags`` maps a field name to its command-line option; a message that does not start with one of
    them is re-raised unchanged.

    >>> with options_as_typed({"algorithm": "--algo"}):
    ...     raise ValueError("algorithm: 'x' is unknown")
    Traceback (most recent call last):
    ...
    ValueError: --algo: 'x' is unknown
    """
    try:
        yield
    except (AifabricError, ValueError) as err:
        field, sep, rest = str(err).partition(":")
        if sep and field in flags:
            raise ValueError(f"{flags[field]}:{rest}") from None
        raise


@contextmanager
def named_option(flag: str, path: str | Path | None = None) -> Iterator[None]:
    """Errors raised inside (a file that cannot be read, a bad value) re-raised as ValueError led by
    ``flag``, the option that gave the input (``--calibration: file '/x.yaml': No such file ...``), unless
    the message already starts with the flag or with the file ``path`` it read (``/x.yaml:3: ...``).

    >>> with named_option("--calibration"):
    ...     raise ValueError("file '/x.yaml': No such file or directory")
    Traceback (most recent call last):
    ...
    ValueError: --calibration: file '/x.yaml': No such file or directory
    """
    try:
        yield
    except (AifabricError, ValueError) as err:
        if str(err).startswith((f"{flag}:", f"{path}:" if path is not None else f"{flag}:")):
            raise
        raise ValueError(f"{flag}: {err}") from None


#: Exit code after the reader of stdout went away: the shell's code for a death by SIGPIPE (128 + 13), as
#: ``yes | head -1`` gives.
BROKEN_PIPE_EXIT = 141


def quiet_broken_pipe() -> int:
    """Point stdout at /dev/null, so that nothing still buffered (nor the interpreter's flush at exit)
    raises again, and return :data:`BROKEN_PIPE_EXIT`: the standard way out for a command whose output
    reader closed early (Python docs, "Note on SIGPIPE" in the ``signal`` module)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return BROKEN_PIPE_EXIT


def _fail(message: str) -> NoReturn:
    msg = printable(message.replace("\r", " ").replace("\n", " ").replace("\t", " "))
    if len(msg) > MAX_ERROR_CHARS:
        half = MAX_ERROR_CHARS // 2
        msg = f"{msg[:half]} ... {msg[-half:]}"
    print(f"error: {msg}", file=sys.stderr)
    raise typer.Exit(code=2) from None


def emit_json(data: Any) -> None:
    """Print ``data`` as JSON on stdout (for machines); always valid JSON.

    Raises
    ------
    ValueError
        If ``data`` holds NaN or an infinity (JSON has neither), naming where.
    """
    try:
        text = json.dumps(data, indent=2, default=float, allow_nan=False)
    except ValueError:
        raise ValueError(f"the result holds a non-finite number at {non_finite_at(data) or '?'}") from None
    print(text)


def non_finite_at(data: Any, path: str = "") -> str | None:
    """The dotted path of the first NaN or infinity in ``data``, iteratively (no recursion limit)."""
    stack: list[tuple[str, Any]] = [(path, data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((f"{where}.{k}" if where else str(k), v) for k, v in value.items())
        elif isinstance(value, list | tuple):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            return where or "the top level"
    return None


#: ``--catalog FILE`` (repeatable): user catalogue files merged over the shipped parts (see
#: :mod:`aifabric.catalog.loader`); the ``AIFABRIC_CATALOG`` path list and ``~/.config/aifabric/catalog``
#: are read as well.
CatalogOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--catalog",
        metavar="FILE",
        help="User catalogue YAML (accelerators, nics, switches...) merged over the shipped parts; "
        "repeatable",
    ),
]


def use_catalog(files: list[Path] | None) -> None:
    """Merge ``--catalog`` files over the catalogue and read every user source now, so that a bad part
    is one line before any command runs; raises ConfigError (exit 2 via handle_errors)."""
    if files:
        catalog.use_catalog_files(files)
    catalog.catalog_names("accelerator")


@contextmanager
def progress_bar() -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on stderr for long flow-engine runs, fed ``report(done, total)``; only on a terminal
    (never in pipes or tests)."""
    if not err_console.is_terminal:
        yield None
        return
    columns = (
        "{task.description}",
        progress.BarColumn(),
        progress.TaskProgressColumn(),
        progress.TimeElapsedColumn(),
    )
    with progress.Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task("flow engine", total=None)

        def report(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield report


def check_outputs(
    *,
    plot: Path | None = None,
    trace: Path | None = None,
    html: Path | None = None,
    chakra: Path | None = None,
    plot_option: str = "--plot",
) -> None:
    """Check, before any work is done, that every output a command was asked for can be written.

    One place for the checks every answering command runs first: ``plot`` (.png/.pdf/.svg), ``trace``
    (.json), ``html`` (.html), ``chakra`` (a folder for one file per rank). ``None`` means not asked.
    The checkers are imported here, not at module level, to keep start-up light.

    Raises
    ------
    ValueError
        Naming the option and the path that cannot be written (see ``report.paths``, ``report.trace``,
        ``report.html`` and ``cli.chakra``).
    """
    if plot is not None:
        from aifabric.report.paths import check_plot_path

        check_plot_path(plot, plot_option)
    if trace is not None:
        from aifabric.report.trace import check_trace_path

        check_trace_path(trace)
    if html is not None:
        from aifabric.report.html import check_html_path

        check_html_path(html)
    if chakra is not None:
        from aifabric.cli.chakra import check_chakra_folder

        check_chakra_folder(chakra)


# A word that starts with a negative number ("-72 GPUs", -0.5) is a value, never an option. Click reads every
# word that starts with "-" as an option, so ``aifabric announcement "-72 GPUs"`` failed with "No such option:
# -7", naming neither the argument nor the text typed. No aifabric option has a digit after its dash, so such
# a word can only be a value: it goes to the command, whose own checks refuse it by name (the announcement's
# "'-72 GPUs' is negative"). This is argparse's rule for a parser without number-like options ("if the
# parser has no options that look like negative numbers, then '-1' is a positional argument", Python docs,
# argparse, "Arguments containing -"), taken to words that go on after the number.

#: A word that begins with a negative number: a dash, then a digit or a decimal point and a digit.
_NUMBER_WORD = re.compile(r"-\.?\d")


def is_number_word(word: str) -> bool:
    """Whether ``word`` starts with a negative number, and so is a value, not an option.

    >>> is_number_word("-72 GPUs"), is_number_word("-.5"), is_number_word("-c"), is_number_word("--nodes")
    (True, True, False, False)
    """
    return _NUMBER_WORD.match(word) is not None


class _ValueWordsParser(_OptionParser):
    """Click's option parser, less the reading of number words as bundles of short options."""

    def _process_opts(self, arg: str, state: _ParsingState) -> None:
        if is_number_word(arg) and not any(is_number_word(opt) for opt in self._short_opt):
            state.largs.append(arg)
            return
        super()._process_opts(arg, state)


class ValueWordsCommand(TyperCommand):
    """A Typer command whose parser hands words that start with a negative number to its arguments."""

    def make_parser(self, ctx: Any) -> _OptionParser:
        parser = _ValueWordsParser(ctx)
        for param in self.get_params(ctx):
            param.add_to_parser(parser, ctx)
        return parser


def numbers_as_values(app: typer.Typer) -> typer.Typer:
    """``app`` with every command it holds (its groups' too) parsed by :class:`ValueWordsCommand`, unless
    the command names a class of its own."""
    for info in app.registered_commands:
        info.cls = info.cls or ValueWordsCommand
    for group in app.registered_groups:
        if group.typer_instance is not None:
            numbers_as_values(group.typer_instance)
    return app


#: "GPU" or "GPUs" as a word (not GPUDirect), the noun :func:`devices` respells
_GPU_WORD = re.compile(r"\bGPU(s?)\b")


def devices(text: str, noun: str) -> str:
    """``text`` with every "GPU" and "GPUs" spelt ``noun`` (the catalogue's name for one part of the
    cluster, :attr:`aifabric.catalog.AcceleratorSpec.device_noun`: "chip" on a TPU); ``text`` as it is
    where ``noun`` is "GPU". The one place printed output names the parts, whatever the command.

    >>> devices("llama3-8b on 256 GPUs: 117 TFLOP/s per GPU, TFLOP/s/GPU, GPUDirect", "chip")
    'llama3-8b on 256 chips: 117 TFLOP/s per chip, TFLOP/s/chip, GPUDirect'
    """
    return text if noun == "GPU" else _GPU_WORD.sub(lambda m: noun + m[1], text)

"""Every input read at the edge: a minimal bad input of each kind gives exit code 2 and one line on stderr
naming the file or option and the problem, never a traceback, a hang or a memory blow-up (issue 14).

The inputs are hand-written here; each test says which failure place of the issue it covers.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cli.common import emit_json, literal
from aifabric.discovery.calibrate import Calibration, load_calibration
from aifabric.discovery.nccl_env import nccl_settings
from aifabric.discovery.nccl_tests import parse_nccl_tests
from aifabric.discovery.nccl_xml import MAX_XML_DEPTH, NcclTopology, parse_nccl_topologies
from aifabric.discovery.nvsmi import TopoMatrix, parse_cpulist
from aifabric.errors import ConfigError, ParseError, UnitError
from aifabric.inputs import (
    MAX_INPUT_BYTES_ENV,
    MAX_YAML_DEPTH,
    load_yaml,
    load_yaml_text,
    printable,
    read_input_bytes,
)
from aifabric.report.paths import check_output_path, check_plot_path
from aifabric.units import parse_bandwidth, parse_bytes, parse_power, parse_time

DATA = Path(__file__).parent / "data"
CLUSTER = (DATA / "cluster_example_roce.yaml").read_text()
runner = CliRunner()


def run(*args: str) -> object:
    return runner.invoke(app, list(args))


def assert_one_line_error(result: object, *needles: str) -> str:
    """Exit 2, nothing but one ``error:`` line on stderr, no traceback; each needle is in that line."""
    got = (result.exit_code, result.stdout, result.stderr)  # type: ignore[attr-defined]
    assert got[0] == 2, got
    err = result.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in err and "Traceback" not in result.stdout  # type: ignore[attr-defined]
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    return p


# -- 1. YAML: one limited loader for cluster, sweep, calibration and model files -----------------------------

# Each value is a YAML text and what the error line must name (its line and the problem).
BAD_YAML = {
    "self_alias_list": ("name: x\nnodes: &a [1, *a]\n", ":2:", "refers to its own anchor"),
    "self_alias_map": ("name: x\nscale_out: &a {nic: *a}\n", ":2:", "refers to its own anchor"),
    # 9 levels of 9 aliases: 9**6 = 531,441 values from a 300-byte file (billion laughs).
    "billion_laughs": (
        "a: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcde", "bcdef", strict=True)),
        ":6:",
        "expands to more than 100,000 values",
    ),
    "deep_nesting": ("name: " + "[" * 500 + "]" * 500 + "\n", ":1:", "nesting deeper than 64"),
    "list_key": ("name: x\n? [a, b]\n: 1\n", ":2:", "a list used as a mapping key"),
    "mapping_key": ("name: x\n{a: 1}: 2\n", ":2:", "a mapping used as a mapping key"),
    "duplicate_key": ("name: x\nnodes: 2\nnodes: 4\n", ":3:", "key 'nodes' appears twice"),
    "nan": ("name: x\nnodes: .nan\n", ":2:", "nodes: '.nan' is not a finite number"),
    "inf_in_list": ("name: x\nvalues: [1.0, -.inf]\n", ":2:", "'-.inf' is not a finite number"),
    "huge_int": ("name: x\nnodes: " + "9" * 5000 + "\n", ":2:", "an integer of 5,000 digits"),
    "control_char": ("name: x\x07y\n", ":1:", "unacceptable character"),
    "not_a_mapping": ("- a\n- b\n", ":1:", "expected a YAML mapping"),
    "empty": ("\n\n", ":1:", "the file is empty"),
}


@pytest.mark.parametrize("case", sorted(BAD_YAML))
def test_bad_yaml_cluster_file_is_one_line(tmp_path: Path, case: str) -> None:
    text, line, problem = BAD_YAML[case]
    p = write(tmp_path, "c.yaml", text)
    assert_one_line_error(run("cluster", "show", str(p)), f"{p}{line}", problem)


@pytest.mark.parametrize("case", ["self_alias_list", "billion_laughs", "list_key", "nan", "deep_nesting"])
def test_bad_yaml_sweep_file_is_one_line(tmp_path: Path, case: str) -> None:
    text, line, problem = BAD_YAML[case]
    p = write(tmp_path, "s.yaml", text)
    assert_one_line_error(run("sweep", str(p), "--db", str(tmp_path / "out.db")), f"{p}{line}", problem)
    assert not (tmp_path / "out.db").exists()


@pytest.mark.parametrize("case", ["self_alias_map", "billion_laughs", "mapping_key", "duplicate_key"])
def test_bad_yaml_calibration_file_is_one_line(tmp_path: Path, case: str) -> None:
    text, line, problem = BAD_YAML[case]
    p = write(tmp_path, "cal.yaml", text)
    r = run("collective", "all_reduce", "-c", "h100-ib-2node", "--calibration", str(p))
    assert_one_line_error(r, f"{p}{line}", problem)


@pytest.mark.parametrize("case", ["self_alias_map", "billion_laughs", "list_key", "nan"])
def test_bad_yaml_user_catalogue_file_is_one_line(tmp_path: Path, case: str) -> None:
    text, line, problem = BAD_YAML[case]
    p = write(tmp_path, "parts.yaml", text)
    try:
        assert_one_line_error(
            run("cluster", "show", "h100-ib-2node", "--catalog", str(p)), f"{p}{line}", problem
        )
    finally:
        from aifabric.catalog.loader import reload_catalog

        reload_catalog()  # --catalog files stay registered in this process


@pytest.mark.parametrize("case", ["self_alias_list", "billion_laughs", "list_key"])
def test_bad_yaml_model_file_is_clean(tmp_path: Path, case: str) -> None:
    from aifabric.training.models import ModelSpec

    text, line, problem = BAD_YAML[case]
    p = write(tmp_path, "m.yaml", text)
    with pytest.raises(ParseError, match=problem):
        ModelSpec.from_yaml(p)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"hidden_size": NaN}', "NaN is not a finite number"),
        ('{"num_hidden_layers": -Infinity}', "-Infinity is not a finite number"),
        ("[" * 100_000 + "]" * 100_000, "nesting too deep"),
        ('{"hidden_size": 4096', ":1: invalid JSON"),
        ('{"hidden_size": ' + "9" * 5000 + "}", "invalid JSON"),
        ("[1, 2]", "model"),
    ],
)
def test_bad_hf_config_json_is_one_line(tmp_path: Path, text: str, problem: str) -> None:
    """``train -m config.json`` reads a Hugging Face config: NaN, deep nesting or junk is one line."""
    p = write(tmp_path, "config.json", text)
    assert_one_line_error(run("train", "-c", "h100-ib-2node", "-m", str(p)), problem)


def test_yaml_aliases_that_share_a_value_still_load() -> None:
    """Anchors, aliases and merge keys that do not expand explosively are ordinary YAML."""
    data = load_yaml_text("base: &b {nic: connectx-7}\nx: *b\ny: {<<: *b, nic: connectx-8}\n", "ok.yaml")
    assert data == {"base": {"nic": "connectx-7"}, "x": {"nic": "connectx-7"}, "y": {"nic": "connectx-8"}}


def test_yaml_depth_limit_is_the_documented_one() -> None:
    ok = "a: " + "[" * (MAX_YAML_DEPTH - 1) + "]" * (MAX_YAML_DEPTH - 1)
    assert load_yaml_text(ok, "ok.yaml")["a"] is not None
    with pytest.raises(ParseError, match="nesting deeper"):
        load_yaml_text("a: " + "[" * MAX_YAML_DEPTH + "]" * MAX_YAML_DEPTH, "deep.yaml")


def test_file_larger_than_the_limit_is_refused_before_reading(tmp_path: Path) -> None:
    """A sparse 100 MB file: refused from its size (stat), never read into memory."""
    p = tmp_path / "junk.yaml"
    with p.open("wb") as fh:
        fh.truncate(100 * 10**6)
    assert_one_line_error(run("cluster", "show", str(p)), str(p), "100,000,000 bytes", MAX_INPUT_BYTES_ENV)
    log = tmp_path / "junk.txt"
    os.link(p, log)
    assert_one_line_error(run("nccl-tests", "compare", str(log)), "above the input limit")
    assert_one_line_error(run("inspect", str(log)), "above the input limit")


def test_yaml_has_a_smaller_limit(tmp_path: Path) -> None:
    """PyYAML reads about 0.25 MB/s: a 2 MB YAML file would take seconds, a 64 MB one minutes."""
    p = write(tmp_path, "c.yaml", CLUSTER + "#" * (2 * 2**20) + "\n")
    assert_one_line_error(run("cluster", "show", str(p)), "above the input limit of 1,048,576 bytes")


def test_input_limit_can_be_raised_or_lowered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = write(tmp_path, "c.yaml", CLUSTER)
    monkeypatch.setenv(MAX_INPUT_BYTES_ENV, "100")
    with pytest.raises(ConfigError, match="above the input limit of 100 bytes"):
        read_input_bytes(p)
    monkeypatch.setenv(MAX_INPUT_BYTES_ENV, "lots")
    with pytest.raises(ConfigError, match=f"{MAX_INPUT_BYTES_ENV}: expected a positive number"):
        read_input_bytes(p)
    monkeypatch.setenv(MAX_INPUT_BYTES_ENV, str(len(CLUSTER)))
    assert read_input_bytes(p) == CLUSTER.encode()


@pytest.mark.parametrize("where", ["/dev/zero", "folder", "fifo"])
def test_device_fifo_or_folder_as_input_is_refused(tmp_path: Path, where: str) -> None:
    """/dev/zero never ends and opening a FIFO waits for a writer: both are refused, not read."""
    path = {"folder": str(tmp_path), "fifo": str(tmp_path / "pipe")}.get(where, where)
    if where == "fifo":
        os.mkfifo(path)
    if not os.path.exists(path):
        pytest.skip(f"{path} does not exist here")
    for args in (("cluster", "show", path), ("nccl-tests", "compare", path), ("inspect", path)):
        assert_one_line_error(run(*args), repr(path))


def test_binary_file_is_refused_with_its_line(tmp_path: Path) -> None:
    p = write(tmp_path, "c.yaml", b"name: x\nnodes: \xff\xfe\n")
    assert_one_line_error(run("cluster", "show", str(p)), f"{p}:2:", "not UTF-8")
    log = write(tmp_path, "log.txt", b"# nThread 1\n\x89PNG\r\n\x1a\n")
    assert_one_line_error(run("nccl-tests", "compare", str(log)), f"{log}:2:", "not UTF-8")


@pytest.mark.parametrize(
    ("bom", "encoding"),
    [(b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")],
)
def test_a_byte_order_mark_names_the_encoding(tmp_path: Path, bom: bytes, encoding: str) -> None:
    """A cluster file saved with a BOM (Notepad's UTF-8 with BOM; PowerShell 5.1's UTF-16LE, CRLF) reads as
    the same file without one: the mark is dropped, the text decoded in the encoding it names."""
    text = CLUSTER.replace("\n", "\r\n")
    plain = run("cluster", "show", str(write(tmp_path, "plain.yaml", text.encode())), "--json")
    marked = run(
        "cluster", "show", str(write(tmp_path, "marked.yaml", bom + text.encode(encoding))), "--json"
    )
    assert plain.exit_code == 0 and marked.exit_code == 0, marked.output
    assert marked.stdout == plain.stdout.replace("plain.yaml", "marked.yaml")


def test_utf16_that_breaks_after_its_mark_is_refused_with_its_line(tmp_path: Path) -> None:
    """A UTF-16LE log cut mid-character (an odd byte count) on its second line: one line naming it."""
    log = write(tmp_path, "log.txt", b"\xff\xfe" + "# nThread 1\r\n#".encode("utf-16-le") + b"\x00")
    assert_one_line_error(run("nccl-tests", "compare", str(log)), f"{log}:2:", "not UTF-16LE text")


# -- 2. NCCL topology XML ------------------------------------------------------------------------------------


def test_xml_nested_past_the_limit_is_refused_without_recursion(tmp_path: Path) -> None:
    depth = 5000  # the recursive walk of the issue died at Python's 1,000-frame limit
    pci = "".join(f'<pci busid="0000:{i % 256:02x}:00.0" class="0x060400">' for i in range(depth))
    text = f'<system version="1"><cpu numaid="0">{pci}{"</pci>" * depth}</cpu></system>\n'
    p = write(tmp_path, "topo.xml", text)
    assert_one_line_error(run("inspect", str(p)), f"{p}:1:", f"deeper than {MAX_XML_DEPTH} levels")


def test_xml_deep_but_within_the_limit_is_walked_in_order() -> None:
    """60 switches, one in the other, then a GPU: the iterative walk sees each switch and its parent."""
    n = MAX_XML_DEPTH - 4  # system, cpu, the switches, the GPU's pci and the gpu
    opening = "".join(f'<pci busid="0000:{i:02x}:00.0" class="0x060400">' for i in range(n))
    gpu = '<pci busid="0000:ff:00.0" class="0x030200"><gpu dev="0" sm="90" rank="0" gdr="1"/></pci>'
    topo = NcclTopology.from_text(
        f'<system version="1"><cpu numaid="0">{opening}{gpu}{"</pci>" * n}</cpu></system>'
    )
    assert [s.busid for s in topo.pci_switches] == [f"0000:{i:02x}:00.0" for i in range(n)]
    assert [s.parent for s in topo.pci_switches][1:] == [f"0000:{i:02x}:00.0" for i in range(n - 1)]
    assert topo.gpus[0].pci_switch == f"0000:{n - 1:02x}:00.0"


@pytest.mark.parametrize(
    "prolog",
    [
        '<!DOCTYPE system [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>',
        '<!DOCTYPE system SYSTEM "file:///etc/passwd">',
    ],
)
def test_xml_entities_are_never_expanded(tmp_path: Path, prolog: str) -> None:
    """A DOCTYPE before ``<system>`` is commentary to the extractor, so the parser never sees its entities:
    ``&b;`` (10**2 characters here, 10**9 in a real attack) is an undefined entity, not an expansion."""
    p = write(tmp_path, "topo.xml", f'{prolog}\n<system version="1"><cpu numaid="0">&b;</cpu></system>\n')
    assert_one_line_error(run("inspect", str(p), "--format", "nccl-xml"), f"{p}:2:", "undefined entity")


def test_xml_doctype_inside_the_document_is_refused() -> None:
    with pytest.raises(ParseError, match="malformed XML"):
        NcclTopology.from_text('<system version="1"><!DOCTYPE x></system>')


def test_xml_speed_must_be_finite() -> None:
    xml = (
        '<system version="1"><cpu numaid="0"><pci busid="0000:01:00.0" class="0x020700">'
        '<nic><net name="mlx5_0" dev="0" speed="1e999" port="1" gdr="1"/></nic></pci></cpu></system>'
    )
    with pytest.raises(ParseError, match="speed='1e999' is not a finite number"):
        NcclTopology.from_text(xml)


# -- 3. parsers in linear time -------------------------------------------------------------------------------
# Each input below made the old readers backtrack or rescan (minutes to hours); now each is one pass. The
# sizes are those at which the old code took more than 20 s. Speed itself is measured in benchmarks/.

HEADER = "#  size  count  type  redop  root  time  algbw  busbw #wrong  time  algbw  busbw #wrong"
ROW = "  4294967296  1073741824  float  sum  -1  15870  270.63  473.60  0  15773  272.30  476.53  0"


def test_nccl_env_line_does_not_backtrack() -> None:
    """``NCCL_A=1NCCL_A=1...`` then a word: a nested repetition in the old regex tried 2**n splits."""
    line = "NCCL_ALGO=Ring" * 40 + " x"
    assert nccl_settings([line]).env == {}
    assert nccl_settings(["export NCCL_ALGO=Tree NCCL_PROTO=LL"]).env == {
        "NCCL_ALGO": "Tree",
        "NCCL_PROTO": "LL",
    }


def test_nccl_info_scan_is_linear() -> None:
    assert nccl_settings(["NCCL_" * 100_000]).env == {}
    assert nccl_settings(["x NCCL INFO NCCL_IB_HCA set by environment to mlx5"]).env == {
        "NCCL_IB_HCA": "mlx5"
    }


def test_rank_line_with_a_long_blank_run() -> None:
    """The GPU name at the end of a rank line was read with ``(.*?)\\s*$``: quadratic in blanks."""
    rank = "#  Rank  0 Group  0 Pid  1 on h device  0 [0x1b] NVIDIA H100" + " " * 200_000 + "x"
    (table,) = parse_nccl_tests(f"{rank}\n{HEADER}\n{ROW}\n", collective="all_reduce")
    assert table.ranks[0].gpu_name is not None and table.ranks[0].gpu_name.endswith("x")


def test_condensed_rank_lines_are_bounded() -> None:
    line = "# Ranks 0-100000 on h; " * 50
    with pytest.raises(ParseError, match="more than 131,072 ranks"):
        parse_nccl_tests(f"{line}\n{HEADER}\n{ROW}\n", collective="all_reduce")


def test_cpulist_repeating_a_wide_range_is_merged() -> None:
    """2,000 copies of ``0-65535``: 65,536 ids once, not 131 million insertions."""
    assert parse_cpulist(",".join(["0-65535"] * 2000)) == frozenset(range(65536))
    assert sorted(parse_cpulist("8-9,0-2,1-3")) == [0, 1, 2, 3, 8, 9]  # type: ignore[arg-type]


def test_topo_header_with_many_columns_is_linear() -> None:
    with pytest.raises(ParseError, match="a column appears twice"):
        TopoMatrix.from_text("GPU0 GPU1 " + "CPU Affinity " * 75_000 + "\n")
    # refused at the header: more GPUs than one node's topology holds (NCCL_TOPO_MAX_NODES 256)
    with pytest.raises(ParseError, match="names 100,000 GPUs; one node's matrix holds at most 256"):
        TopoMatrix.from_text(" ".join(f"GPU{i}" for i in range(100_000)) + "\n")
    with pytest.raises(ParseError, match="matrix ends before the row of GPU0"):
        TopoMatrix.from_text(" ".join(f"GPU{i}" for i in range(256)) + "\n")


def test_unclosed_system_tags_are_linear() -> None:
    with pytest.raises(ParseError, match="no <system> document"):
        parse_nccl_topologies("<system a\n" * 100_000)


def test_overlong_line_is_refused_with_its_line() -> None:
    with pytest.raises(ParseError, match="line of 2,000,001 characters") as err:
        parse_nccl_tests("# title\n" + "9" * 2_000_001 + "\n")
    assert err.value.line == 2


def test_hundred_megabytes_of_junk_are_refused(tmp_path: Path) -> None:
    """The issue's figure: a 100 MB junk file is refused (from its size; no wall-clock assertion here)."""
    p = write(tmp_path, "junk.txt", b"")
    with p.open("wb") as fh:
        fh.truncate(100 * 2**20)
    assert_one_line_error(run("nccl-tests", "compare", str(p)), "104,857,600 bytes", "above the input limit")


# -- 4. output paths checked before work starts --------------------------------------------------------------


def _bad_outputs(tmp_path: Path) -> dict[str, tuple[str, str]]:
    a_file = write(tmp_path, "a_file", "x")
    return {
        "too_long": (str(tmp_path / ("n" * 300 + ".csv")), "File name too long"),
        "folder": (str(tmp_path), "is a directory"),
        "below_file": (str(a_file / "out.csv"), "is a file, not a folder"),
        "dev_full": ("/dev/full", "not a regular file"),
        "proc": ("/proc/aifabric-out.csv", "cannot create a file in '/proc'"),
    }


@pytest.mark.parametrize("case", ["too_long", "folder", "below_file", "dev_full", "proc"])
def test_sweep_out_is_checked_before_work(tmp_path: Path, case: str) -> None:
    path, problem = _bad_outputs(tmp_path)[case]
    if case == "dev_full" and not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    r = run("sweep", str(DATA / "sweep_example.yaml"), "--db", path)
    assert_one_line_error(r, "--db: ", problem)


@pytest.mark.parametrize("case", ["too_long", "folder", "below_file", "dev_full"])
def test_calibrate_output_is_checked_before_work(tmp_path: Path, case: str) -> None:
    path, problem = _bad_outputs(tmp_path)[case]
    if case == "dev_full" and not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    r = run("calibrate", str(DATA / "case_01_dgx_h100_allreduce_single_node.txt"), "-o", path)
    assert_one_line_error(r, "--output: ", problem)


@pytest.mark.parametrize("case", ["too_long", "below_file", "proc"])
def test_plot_paths_are_checked_before_work(tmp_path: Path, case: str) -> None:
    path, problem = _bad_outputs(tmp_path)[case]
    plot = str(Path(path).with_suffix(".png"))
    assert_one_line_error(
        run("train", "-c", "h100-ib-2node", "-m", "llama3-8b", "--plot", plot), "--plot: ", problem
    )
    log = str(DATA / "case_01_dgx_h100_allreduce_single_node.txt")
    assert_one_line_error(run("nccl-tests", "compare", log, "--plot", plot), "--plot: ", problem)


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere: covered by the /proc case")
def test_read_only_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(ValueError, match="--out: cannot write .*: cannot create a file in"):
            check_output_path(folder / "x.csv", "--out")
    finally:
        folder.chmod(0o700)


def test_missing_folders_are_fine_and_nothing_is_left_behind(tmp_path: Path) -> None:
    assert (
        check_output_path(tmp_path / "new" / "deeper" / "x.csv", "--out")
        == tmp_path / "new" / "deeper" / "x.csv"
    )
    assert check_plot_path(tmp_path / "p.png") == tmp_path / "p.png"
    assert list(tmp_path.iterdir()) == []  # the write probe leaves no file


def test_write_error_during_output_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A disk that fills up while the sweep writes (SQLITE_FULL, what SQLite reports on ENOSPC): one line,
    exit 2."""
    from aifabric.sweep.db import ResultDB

    add = ResultDB.add

    def full(self: ResultDB, rows: object) -> int:
        pages = self.conn.execute("PRAGMA page_count").fetchone()[0]
        self.conn.execute(f"PRAGMA max_page_count = {pages}")  # the file may not grow: the disk is full
        return add(self, rows)  # type: ignore[arg-type]

    monkeypatch.setattr(ResultDB, "add", full)
    sweep = write(
        tmp_path,
        "s.yaml",
        "cluster: h100-ib-2node\nvary: {nodes: [2, 4, 8, 16]}\n"
        "collectives: [{op: all_reduce, sizes: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]}]\n",
    )
    out = tmp_path / "out.db"
    assert_one_line_error(run("sweep", str(sweep), "--db", str(out)), str(out), "database or disk is full")


# -- 5. names from input files are printed literally ---------------------------------------------------------

NASTY = "[/]\\e[31mRED\\e]0;title\\a[bold]x"  # YAML escapes: ESC [31m (colour), ESC ]0;..BEL (window title)
SHOWN = "[/]\\x1b[31mRED\\x1b]0;title\\x07[bold]x"  # README: controls shown as \xNN, brackets as written


@pytest.mark.parametrize(
    "args",
    [
        ("cluster", "show"),
        ("collective", "all_reduce", "-c"),
        ("fabric", "all_reduce", "--size", "1MiB", "-c"),
        ("train", "-m", "llama3-8b", "--tp", "8", "-c"),
        ("plan", "-m", "llama3-8b", "-c"),
        ("checkpoint", "-m", "llama3-8b", "--storage", "ddn-ai400x2-turbo", "--storage-units", "8"),
    ],
)
def test_cluster_name_with_markup_and_escapes_prints_literally(tmp_path: Path, args: tuple[str, ...]) -> None:
    text = CLUSTER.replace("name: example-roce", f'name: "{NASTY}"')
    p = write(tmp_path, "c.yaml", text)
    r = run(*args, str(p))
    assert r.exit_code == 0, r.stderr
    assert SHOWN in r.stdout
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout


def test_error_lines_show_control_characters(tmp_path: Path) -> None:
    text = CLUSTER.replace("accelerator: h100-sxm", 'accelerator: "h100\\e[2J\\u0007"')
    p = write(tmp_path, "c.yaml", text)
    line = assert_one_line_error(run("cluster", "show", str(p)), "accelerator")
    assert "\x1b" not in line and "\x07" not in line


def test_collective_names_from_logs_print_literally(tmp_path: Path) -> None:
    log = (DATA / "case_01_dgx_h100_allreduce_single_node.txt").read_text()
    title_line = next(line for line in log.splitlines() if line.startswith("==="))
    p = write(tmp_path, "log.txt", log.replace(title_line, "=== [/]\x1b[31m[bold]title ===", 1))
    r = run("nccl-tests", "compare", str(p))
    assert r.exit_code == 0, r.stderr
    assert "[/][bold]title" in r.stdout and "\x1b" not in r.stdout


def test_literal_and_printable() -> None:
    assert printable("a\x1b[31mb\x1b]0;t\x07c\x00d\te\n") == "a\\x1b[31mb\\x1b]0;t\\x07c\\x00d\te\n"
    assert literal("[bold]x") == "\\[bold]x"


# -- 6. numbers: NaN and infinities refused wherever a number is read ----------------------------------------


@pytest.mark.parametrize("parser", [parse_bytes, parse_bandwidth, parse_time, parse_power])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, "nan", "1e999", "inf"])
def test_unit_parsers_refuse_non_finite(parser: object, value: object) -> None:
    units = {parse_bytes: " GB", parse_bandwidth: " Gb/s", parse_time: " us", parse_power: " W"}
    suffix = units[parser]  # type: ignore[index]
    arg = value if isinstance(value, float) else f"{value}{suffix}"
    with pytest.raises(UnitError, match="field: "):
        parser(arg, field="field")  # type: ignore[operator]


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("nic_speed", "1e999 Gb/s", "scale_out.nic_speed"),
        ("nic_speed", ".nan", "nic_speed: '.nan' is not a finite number"),
        ("oversubscription", "[.inf]", "'.inf' is not a finite number"),
    ],
)
def test_cluster_yaml_refuses_non_finite(tmp_path: Path, field: str, value: str, needle: str) -> None:
    text = (
        CLUSTER.replace("  nic_speed: 400 Gb/s", f"  nic_speed: {value}")
        if field == "nic_speed"
        else (CLUSTER.replace('  oversubscription: ["2:1"]', f"  oversubscription: {value}"))
    )
    p = write(tmp_path, "c.yaml", text)
    assert_one_line_error(run("cluster", "show", str(p)), needle)


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("extra_inter_latency_s: .nan", "extra_inter_latency_s"),
        ("extra_inter_latency_s: nan", "extra_inter_latency_s"),  # a string that float() would read
        ("inter_scale: .inf", "inter_scale"),
        ("residual_rms: -.inf", "residual_rms"),
    ],
)
def test_calibration_profile_refuses_non_finite(tmp_path: Path, line: str, field: str) -> None:
    """The issue: a profile with ``.nan`` exited 0 with NaN times, and ``--json`` printed invalid JSON."""
    key = line.split(":")[0]
    text = "\n".join(
        line if row.startswith(f"{key}:") else row
        for row in (DATA / "calibration_case_03.yaml").read_text().splitlines()
    )
    p = write(tmp_path, "cal.yaml", text + "\n")
    for extra in ((), ("--json",)):
        r = run("collective", "all_reduce", "-c", "h100-ib-2node", "--calibration", str(p), *extra)
        assert_one_line_error(r, str(p), field)
        assert r.stdout == ""
    with pytest.raises((ConfigError, ParseError), match=field):
        load_calibration(p)


def test_calibration_object_refuses_non_finite() -> None:
    with pytest.raises(ConfigError, match="extra_inter_latency_s: nan is not a finite number"):
        Calibration(extra_inter_latency_s=math.nan)


def test_real_calibration_profile_still_loads() -> None:
    cal = load_calibration(DATA / "calibration_case_03.yaml")
    assert cal.inter_scale == pytest.approx(0.903287)  # the value `aifabric calibrate` wrote for case 03


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999"])
def test_cli_numbers_refuse_non_finite(value: str) -> None:
    assert_one_line_error(
        run("collective", "all_reduce", "-c", "h100-ib-2node", "--size", f"{value} GB"), "--size"
    )
    log = str(DATA / "case_01_dgx_h100_allreduce_single_node.txt")
    r = run("nccl-tests", "compare", log, "--threshold", value)
    assert r.exit_code == 2 and "Traceback" not in r.stderr and "threshold" in r.stderr


def test_json_output_is_always_valid(capsys: pytest.CaptureFixture[str]) -> None:
    emit_json({"rows": [{"time_s": 1.5}]})
    assert json.loads(capsys.readouterr().out) == {"rows": [{"time_s": 1.5}]}
    with pytest.raises(ValueError, match=r"non-finite number at rows\[1\]\.time_s"):
        emit_json({"rows": [{"time_s": 1.0}, {"time_s": math.nan}]})
    assert capsys.readouterr().out == ""


def test_yaml_loader_refuses_non_finite_anywhere(tmp_path: Path) -> None:
    p = write(tmp_path, "x.yaml", "a:\n  b: [1, 2, .NaN]\n")
    with pytest.raises(ParseError, match=r"x\.yaml:2: .*'\.NaN' is not a finite number"):
        load_yaml(p)

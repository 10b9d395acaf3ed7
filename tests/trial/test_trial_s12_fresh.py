"""Defects a new user's first hour found (README quick start on a fresh venv, then every command the README
shows with bad input): each test runs one command; its docstring holds the command, what it printed and
what it should do. The README's rule for bad input: exit 2 with one line on stderr naming the field and the
value, never a traceback, and no result a run cannot have printed as if it were one."""

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app

from .commands import main_exit

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

CHECKPOINT = [
    "checkpoint", "--nodes", "16", "-m", "llama3-70b", "--tp", "8", "--pp", "2",
    "--storage", "ddn-ai400x2-turbo", "--storage-units", "4",
]  # fmt: skip
TRAIN = ["train", "-m", "llama3-8b", "--nodes", "2", "--tp", "8", "-B", "16"]

DOCS = Path(__file__).parents[2] / "docs" / "reading-your-machine.md"


def _docs_log(tmp_path: Path) -> Path:
    """docs/reading-your-machine.md's ``h100.log`` (8 x H100 all_reduce, nccl-tests #290), written out."""
    text = re.search(r"```text file=h100.log\n(.*?)```", DOCS.read_text(), re.S)
    assert text is not None
    log = tmp_path / "h100.log"
    log.write_text(text.group(1))
    return log


@pytest.mark.parametrize("size", ["8B", "64MiB"])
def test_a_tpu_refuses_the_nccl_host_launch_floor(size):
    """``aifabric collective all_reduce -c tpu-v5p-pod --slice 4x4x4 --size 8B --gpus-per-thread 4
    --launch-us 100``: exit 0, "time 400.00 us ... bottleneck: host launch ... One thread launches 4 GPUs"
    (the same call without the options: 12.00 us). The floor is NCCL's: "One host thread driving several GPUs
    (nccl-tests ``-g 8``) launches each GPU's kernel in turn from NCCL 2.9 on" (README, engines/
    host_launch.py); a TPU runs XLA's collectives, and "the NCCL-only options (``--no-nvls``,
    ``--nccl-version``, ``--calibration``, NCCL variables in ``--env``) exit 2" (README, TPU slices).
    Expected: exit 2, one line naming ``--gpus-per-thread``, as ``--nccl-version`` on a TPU does."""
    r = runner.invoke(
        app,
        ["collective", "all_reduce", "-c", "tpu-v5p-pod", "--slice", "4x4x4", "--size", size,
         "--gpus-per-thread", "4", "--launch-us", "100"],
    )  # fmt: skip
    assert r.exit_code == 2, r.stdout[:400]
    assert "--gpus-per-thread" in r.stderr, r.stderr


@pytest.mark.parametrize("option", ["--gpu-mtbf", "--node-mtbf"])
def test_a_part_mtbf_that_makes_the_job_outlive_a_century_is_refused(option):
    """``aifabric checkpoint ... --gpu-mtbf "1e300 h"``: exit 0, "job MTBF (its GPUs and nodes in series):
    2.813e+301 s", "Young/Daly interval (sync): every 1.318e+151 s" (``--node-mtbf "1e300 h"``: 2.25e+302
    s). The same job MTBF typed directly, ``--mtbf "1e300 h"``, exits 2: "--mtbf: '1e300 h' is longer than a
    century (3.156e+09 s), longer than any machine serves (one GPU's MTBF in Llama 3's run: 5.2 years); no
    run has it". A part's MTBF may exceed a century (a NIC's datasheet MTBF), but a job's derived from its
    parts in series cannot pass the bound its typed value is held to. Expected: exit 2 naming the option
    and the value typed."""
    r = runner.invoke(app, [*CHECKPOINT, option, "1e300 h"])
    assert r.exit_code == 2, r.stdout[:600]
    assert option in r.stderr and "1e300 h" in r.stderr, r.stderr


@pytest.mark.parametrize(
    "argv,flags",
    [
        ([*CHECKPOINT, "--gds", "--no-gds"], ("--gds", "--no-gds")),
        ([*TRAIN, "--no-sp", "--sp"], ("--sp", "--no-sp")),
    ],
    ids=["checkpoint-gds", "train-sp"],
)
def test_a_flag_and_its_negation_together_are_refused(argv, flags, monkeypatch, capsys):
    """``aifabric checkpoint ... --gds --no-gds`` and ``aifabric train -m llama3-8b --nodes 2 --tp 8 -B 16
    --no-sp --sp``: exit 0, the last one silently wins (the train header reads "sp"). The product refuses a
    single-valued option given twice under any of its spellings (cli/app.py ``repeated_option``: "--size:
    given 2 times ('1GiB', '2GiB'); give it once"); a yes/no flag given both ways is the same contradiction.
    Expected: exit 2, one line naming both spellings."""
    code, out, err = main_exit(argv, monkeypatch, capsys)
    assert code == 2, out[:400]
    assert all(flag in err for flag in flags), err


def test_calibrate_writes_its_profile_into_a_new_folder(tmp_path: Path):
    """``aifabric calibrate h100.log -o new/cal.yaml`` (docs/reading-your-machine.md's log) where ``new/``
    does not exist: the fit runs, then exit 2 "--output: cannot write '.../new/cal.yaml': No such file or
    directory". Every other output creates its missing folders: ``train --plot new/s.png``, ``fabric --plot``,
    ``--html``, ``export --out`` (report/paths.py ``check_output_path``: "missing folders are created when the
    file is written, make_parent"), and the check passed this path before the work. Expected: exit 0 and the
    profile written, as ``train --plot`` does."""
    log = _docs_log(tmp_path)
    out = tmp_path / "new" / "cal.yaml"
    r = runner.invoke(app, ["calibrate", str(log), "-o", str(out)])
    assert r.exit_code == 0, r.stderr
    assert out.is_file()


def test_nccl_tests_compare_plots_into_a_new_folder(tmp_path: Path):
    """``aifabric nccl-tests compare h100.log --plot new/busbw.png`` where ``new/`` does not exist: exit 2
    "--plot: cannot write '.../new/busbw.png': No such file or directory", after the comparison; ``train
    --plot new/step.png`` and ``fabric --plot new/heat.png`` create the folder (report/paths.py
    ``save_figure``: "creating its folders"). Expected: exit 0 and the plot written."""
    log = _docs_log(tmp_path)
    out = tmp_path / "new" / "busbw.png"
    r = runner.invoke(app, ["nccl-tests", "compare", str(log), "--plot", str(out)])
    assert r.exit_code == 0, r.stderr
    assert out.is_file()


def test_an_announcement_naming_no_precision_the_model_knows_is_refused():
    """``aifabric announcement "720 PFLOPS FP9" -c gb200-nvl72``: exit 0, verdict "cannot verify": "no
    modelled compute figure of FP9 is within 5% (have: BF16 peak per GPU, ...)". FP9 is no number format; a
    unit the reader does not know is refused (``"720 PFLOPs"`` exits 2 "announcement: no number with a unit
    (TB/s, Gb/s, GPUs, MW, TB, PFLOPS) found in the text"), and a misspelt precision should be too rather
    than read as a claim the catalogue lacks. Expected: exit 2, one line naming 'FP9'."""
    r = runner.invoke(app, ["announcement", "720 PFLOPS FP9", "-c", "gb200-nvl72"])
    assert r.exit_code == 2, r.stdout[:400]
    assert "FP9" in r.stderr, r.stderr


@pytest.mark.parametrize(
    "field,value",
    [("num_hidden_layers", 0), ("num_key_value_heads", 0)],
)
def test_a_config_json_field_out_of_range_is_named_as_the_file_spells_it(tmp_path, field, value):
    """``aifabric train -m c.json --nodes 2 --tp 8 -B 16`` with a Llama config.json whose
    ``num_hidden_layers`` is 0: exit 2 "n_layers must be an integer >= 1, got 0" (``num_key_value_heads: 0``:
    "n_kv_heads must be ..."): the product's own attribute, not the field of the file the user wrote, and
    no file named. The README's rule is one line naming the field and the value; a cluster file's errors
    name the file and its field ("nvl4.yaml: scale_up.gpus: ..."). Expected: exit 2, the line naming the
    file and ``num_hidden_layers``."""
    config = {
        "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 128256, "intermediate_size": 14336,
        "max_position_embeddings": 8192, field: value,
    }  # fmt: skip
    path = tmp_path / "c.json"
    path.write_text(json.dumps(config))
    r = runner.invoke(app, ["train", "-m", str(path), "--nodes", "2", "--tp", "8", "-B", "16"])
    assert r.exit_code == 2, r.stdout[:400]
    assert field in r.stderr and "c.json" in r.stderr, r.stderr

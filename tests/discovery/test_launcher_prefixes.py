"""Launcher prefixes of whole job logs (issue 9 item 3): ``kubectl logs --prefix``, ``pdsh``/``clush``.

The log is shared case 01 (NVIDIA/nccl-tests #290, one DGX H100): prefixed on every line it must parse to the
same tables as the plain file; a word heading a line or two of prose (``NOTE: ``) is content, not a host.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.discovery.conftest import CASE_01, read_case

from aifabric.discovery._text import clean_lines
from aifabric.discovery.nccl_tests import parse_nccl_tests
from aifabric.discovery.paste import parse_pasted

PLAIN = read_case(CASE_01)

_HOSTS = st.from_regex(r"[a-z][a-z0-9-]{0,20}[0-9]", fullmatch=True)


def _prefixed(prefix: str) -> str:
    return "".join(prefix + line for line in PLAIN.splitlines(keepends=True))


def test_kubectl_prefix_parses_as_the_plain_log() -> None:
    assert parse_pasted(_prefixed("[pod/nccl-worker-0/nccl] ")) == parse_pasted(PLAIN)


def test_pdsh_prefix_parses_as_the_plain_log() -> None:
    # Before the fix: "no nccl-tests result table found".
    assert parse_nccl_tests(_prefixed("gpu-node-01: ")) == parse_nccl_tests(PLAIN)


@settings(max_examples=25)
@given(host=_HOSTS, pod=_HOSTS, container=_HOSTS)
def test_any_host_or_pod_prefix_gives_the_same_tables(host: str, pod: str, container: str) -> None:
    plain = parse_nccl_tests(PLAIN)
    assert parse_nccl_tests(_prefixed(f"{host}: ")) == plain
    assert parse_nccl_tests(_prefixed(f"[pod/{pod}/{container}] ")) == plain


def test_two_hosts_interleaved_are_both_stripped() -> None:
    lines = ["n1: # nThread 1", "n2: # nThread 1", "n1: a", "n2: b", "n1: c", "n2: d"]
    assert clean_lines(lines) == ["# nThread 1", "# nThread 1", "a", "b", "c", "d"]


def test_a_word_heading_few_lines_is_content() -> None:
    lines = ["NOTE: first", "CASE: case_01", "NOTE: second", "#  Rank  0 Group  0"]
    assert clean_lines(lines) == lines

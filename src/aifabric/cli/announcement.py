"""``aifabric announcement``: check a vendor's claims against a modelled cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from aifabric.cli.common import console, emit_json, handle_errors
from aifabric.cli.sizing import sized_cluster
from aifabric.cluster.headlines import check_claims, extract_claims
from aifabric.cluster.spec import load_yaml_mapping
from aifabric.cluster.summary import summarize
from aifabric.errors import ConfigError

__all__ = ["announcement"]


@handle_errors
def announcement(
    text: Annotated[str, typer.Argument(help="The announcement's text, or a YAML file with 'claims: [...]'")],
    cluster: Annotated[
        str, typer.Option("--cluster", "-c", help="Preset or cluster YAML to check against")
    ] = ("gb200-nvl72"),
    gpus: Annotated[int | None, typer.Option(help="Resize the cluster to this many GPUs", min=1)] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Read the numbers of an announcement ("130 TB/s", "100,000 GPUs", "800 Gb/s", "1.4 MW", "13.5 TB of
    HBM", "180 PFLOPS of FP16/BF16") and say, for each, which modelled figure it matches (a network's, the
    HBM's, the GPUs' dense tensor peak times their count), or that it cannot be verified."""
    path = Path(text)
    if path.suffix in (".yaml", ".yml"):
        data = load_yaml_mapping(path)
        claims_in = data.get("claims")
        if not isinstance(claims_in, list) or not all(isinstance(c, str) for c in claims_in):
            raise ConfigError(f"{text}: claims: expected a list of strings")
        body = "\n".join(claims_in)
    else:
        body = text
    claims = extract_claims(body)
    if not claims:
        raise ConfigError(
            "announcement: no number with a unit (TB/s, Gb/s, GPUs, MW, TB, PFLOPS) found in the text"
        )
    s = summarize(sized_cluster(cluster, gpus=gpus))
    verdicts = check_claims(s, claims)
    if json_out:
        emit_json(
            [
                {
                    "claim": v.claim.text,
                    "status": v.status,
                    "figure": v.figure.name if v.figure else None,
                    "note": v.note,
                }
                for v in verdicts
            ]
        )
        return
    t = Table(title=f"Claims against {s.spec.name} ({s.n_gpus} GPUs)", show_edge=False)
    for col in ("claim", "verdict", "note"):
        t.add_column(col)
    for v in verdicts:
        t.add_row(v.claim.text, v.status, v.note)
    console.print(t)

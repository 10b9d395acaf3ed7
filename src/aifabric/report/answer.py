"""One shape for every answer of the Python front door: ``to_dict``, ``to_pandas`` and a notebook view.

An :class:`Answer` wraps the library's own result object (a
:class:`~aifabric.engines.result.CollectiveResult`, a :class:`~aifabric.training.step.StepTime` ...) and adds
three views of it:

- ``to_dict()``: a JSON-ready dict, SI units (the same dict the CLI prints with ``--json``);
- ``to_pandas()``: a DataFrame of the answer's rows (one row per candidate, part, layout, link, point);
- ``_repr_html_()``: the headline figures (units in the labels) and the rows, as Jupyter shows them.

Attribute access falls through to the wrapped result, so ``af.train(...).step_s`` works.
"""

from __future__ import annotations

import copy
import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Answer"]

_HTML_ROWS = 50  # rows shown in a notebook; to_pandas() has them all


@dataclass(frozen=True)
class Answer:
    """A front-door answer.

    Attributes
    ----------
    kind : str
        ``cluster``, ``collective``, ``fabric``, ``train``, ``plan``, ``inspect`` or ``sweep``.
    title : str
        One line saying what was asked.
    result : object
        The library's result object (see each front-door function).
    headline : tuple of (label, text)
        The figures a reader looks at first, formatted with their units.
    data : dict
        JSON-ready, SI units.
    rows : tuple of dict
        The table behind the answer; each dict one row with the same keys.
    """

    kind: str
    title: str
    result: Any
    headline: tuple[tuple[str, str], ...]
    data: dict[str, Any]
    rows: tuple[dict[str, Any], ...] = field(default=())

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy/pickle probe dunders before the fields exist
            raise AttributeError(name)
        return getattr(object.__getattribute__(self, "result"), name)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready copy of :attr:`data` (SI units)."""
        return copy.deepcopy(self.data)

    def to_pandas(self) -> pd.DataFrame:
        """The rows as a DataFrame (columns in SI units, named with their unit suffix)."""
        import pandas as pd  # lazy: `import aifabric` stays cheap for the CLI

        return pd.DataFrame(list(self.rows))

    def _repr_html_(self) -> str:
        """Headline figures and the first rows as an HTML fragment (every string escaped)."""
        esc = html.escape
        parts = [f"<div class='aifabric-answer'><h4>{esc(self.title)}</h4><table>"]
        parts += [f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in self.headline]
        parts.append("</table>")
        if self.rows:
            cols = list(self.rows[0])
            parts.append("<table><tr>" + "".join(f"<th>{esc(c)}</th>" for c in cols) + "</tr>")
            for row in self.rows[:_HTML_ROWS]:
                parts.append("<tr>" + "".join(f"<td>{esc(_cell(row.get(c)))}</td>" for c in cols) + "</tr>")
            parts.append("</table>")
            if len(self.rows) > _HTML_ROWS:
                parts.append(f"<p>{len(self.rows) - _HTML_ROWS} more rows: .to_pandas()</p>")
        parts.append("</div>")
        return "".join(parts)

    def __repr__(self) -> str:
        lines = [self.title] + [f"  {k}: {v}" for k, v in self.headline]
        return "\n".join(lines)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return "" if value is None else str(value)

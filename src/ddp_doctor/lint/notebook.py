"""Python source of a Jupyter notebook's code cells, with a map back to (cell, line).

Cells are joined in order so a sampler built in one cell and iterated in another is seen as
one program. IPython magics and shell escapes (``%time``, ``!pip``, ``%%bash`` cells) are not
Python: their lines become blank so that line numbers stay aligned.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class NotebookSource:
    source: str
    cells: list[tuple[int, int]]  # joined line (0-based) -> (cell number, line in cell), both 1-based

    def locate(self, line: int) -> tuple[int, int]:
        """(cell, line in cell) of a 1-based line of the joined source."""
        if 0 < line <= len(self.cells):
            return self.cells[line - 1]
        return (0, line)


def read_notebook(text: str) -> NotebookSource:
    """Raises ValueError when ``text`` is not a notebook JSON document."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid notebook JSON: {exc}") from None
    except RecursionError:
        raise ValueError("not a notebook: JSON nested too deeply") from None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        raise ValueError("not a notebook: no 'cells' list")
    lines: list[str] = []
    where: list[tuple[int, int]] = []
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        if isinstance(src, list):  # nbformat: a list of strings; anything else in it is not code
            text_cell = "".join(s for s in src if isinstance(s, str))
        elif isinstance(src, str):
            text_cell = src
        else:  # a number, dict, null ...: not source text
            continue
        cell_lines = text_cell.splitlines()
        is_cell_magic = bool(cell_lines) and cell_lines[0].lstrip().startswith("%%")
        for i, line in enumerate(cell_lines, start=1):
            stripped = line.lstrip()
            lines.append("" if is_cell_magic or stripped.startswith(("%", "!")) else line)
            where.append((number, i))
    return NotebookSource("\n".join(lines) + "\n", where)

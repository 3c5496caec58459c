"""Each formula is written once, in the docstring of the function that computes it.

A docstring's ``.. math::`` block is the formula; `latex_of` reads it back for the page that
shows the function, so the formula on screen and the code beside it cannot drift apart.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from typing import Any


def latex_of(fn: Callable[..., Any]) -> str:
    """The LaTeX of the ``.. math::`` blocks in ``fn``'s docstring; several equations are
    stacked (``gathered``). Raises ValueError when the docstring has none."""
    doc = inspect.getdoc(fn) or ""
    blocks: list[list[str]] = []
    lines = doc.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == ".. math::":
            body: list[str] = []
            i += 1
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t"))):
                body.append(lines[i])
                i += 1
            equations = [e.strip() for e in textwrap.dedent("\n".join(body)).split("\n\n") if e.strip()]
            blocks.append([" ".join(e.split()) for e in equations])
            continue
        i += 1
    equations = [e for block in blocks for e in block]
    if not equations:
        raise ValueError(f"{fn.__qualname__} has no '.. math::' block in its docstring")
    if len(equations) == 1:
        return equations[0]
    return r"\begin{gathered}" + r" \\ ".join(equations) + r"\end{gathered}"

"""Each formula is written once, in the docstring of the function that computes it.

A docstring's ``.. math::`` block is the formula; `latex_of` reads it back for the page that
shows the function, so the formula on screen and the code beside it cannot drift apart.
`localized` puts the words of a formula (its ``\\text{...}`` prose) into the interface's
language when it is shown, so each formula is still written once, in English.
"""

from __future__ import annotations

import inspect
import re
import textwrap
from collections.abc import Callable
from typing import Any

from .i18n import tr

# The macros whose argument is prose (text mode) rather than math.
_TEXT_MACRO = re.compile(r"\\(?:text|textrm|textit|textbf|textsf|mbox)\s*\{")
# Characters that are commands in LaTeX text mode, with what writes them literally.
_TEXT_ESCAPES = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "_": r"\_", "^": r"\textasciicircum{}", "%": r"\%",
    "&": r"\&", "#": r"\#", "$": r"\$", "~": r"\textasciitilde{}",
}  # fmt: skip


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


def _group_end(latex: str, start: int) -> int:
    """The index just past the ``}`` that closes the group opened before ``start``."""
    depth, i = 1, start
    while i < len(latex) and depth:
        if latex[i] == "\\":
            i += 2
            continue
        depth += {"{": 1, "}": -1}.get(latex[i], 0)
        i += 1
    return i


def _is_script(before: str) -> bool:
    return before.rstrip().endswith(("_", "^"))


def localized(latex: str) -> str:
    """``latex`` with the prose of each ``\\text{...}`` at the formula's base level translated
    (`tformer.i18n.tr` of the words, their surrounding spaces kept): ``\\text{masked scores}``
    reads ``\\text{被掩码的分数}`` in Chinese. Text in a sub- or superscript (``d_\\text{head}``,
    ``m^{\\text{new}}``) names a symbol and stays as written, as do words without a translation
    (identifiers such as ``\\text{attn\\_scores}``). A translation is escaped for text mode."""
    out: list[str] = []
    scripts: list[bool] = []  # one entry per open group: is it a sub- or superscript?
    i = 0
    while i < len(latex):
        m = _TEXT_MACRO.match(latex, i)
        if m:
            end = _group_end(latex, m.end())
            body = latex[m.end() : end - 1]
            if not (_is_script(latex[:i]) or any(scripts)):
                body = _translated(body)
            out.append(m.group(0) + body + "}")
            i = end
            continue
        c = latex[i]
        if c == "\\":
            out.append(latex[i : i + 2])
            i += 2
            continue
        if c == "{":
            scripts.append(_is_script(latex[:i]))
        elif c == "}" and scripts:
            scripts.pop()
        out.append(c)
        i += 1
    return "".join(out)


def _translated(body: str) -> str:
    words = body.strip()
    text = tr(words) if words else words
    if text == words:
        return body
    lead, trail = body[: len(body) - len(body.lstrip())], body[len(body.rstrip()) :]
    return lead + "".join(_TEXT_ESCAPES.get(ch, ch) for ch in text) + trail

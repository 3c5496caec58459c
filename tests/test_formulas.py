"""Each formula a page shows is read from the docstring of the function that computes it."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import tformer.formulas
from tformer.analysis import reference, walkthrough
from tformer.formulas import latex_of, localized
from tformer.i18n import use_language

from ._i18n_check import english_words, latex_prose

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]


def formulas_shown(path: Path) -> list[object]:
    """The functions a page passes to ui.formula, resolved through the page's own imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    namespace: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            exec(compile(ast.Module([node], []), str(path), "exec"), namespace)  # imports only
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "formula"
    ]
    # a page names tformer's torch functions by a string (its imports stay free of torch)
    from tformer.ui.context import resolve

    return [resolve(eval(compile(ast.Expression(c.args[0]), str(path), "eval"), namespace)) for c in calls]


SHOWN = [(p.name, fn) for p in PAGES for fn in formulas_shown(p)]
# The step-by-step page shows the formula of each step's function (the attention steps are the
# numpy reference's, imported by the walk-through).
STEP_FNS = [
    ("steps.py", fn)
    for fn in vars(walkthrough).values()
    if inspect.isfunction(fn)
    and fn.__module__ in (walkthrough.__name__, reference.__name__)
    and ".. math::" in (fn.__doc__ or "")
]


def test_pages_show_formulas():
    assert len(SHOWN) >= 6  # attention, Q/K/V, PE, offsets, rotations, head metrics, JS


@pytest.mark.parametrize(("page", "fn"), SHOWN, ids=lambda x: getattr(x, "__qualname__", str(x)))
def test_every_formula_shown_comes_from_its_functions_docstring(page, fn):
    latex = latex_of(fn)
    assert latex.count("{") == latex.count("}"), latex
    assert "\n" not in latex


def test_latex_of_reads_math_blocks_and_refuses_a_docstring_without_one():
    def two():
        r"""Two equations.

        .. math::
            a = b

            c = \frac{d}{e}

        Text after.
        """

    def none():
        """No formula here."""

    assert latex_of(two) == r"\begin{gathered}a = b \\ c = \frac{d}{e}\end{gathered}"
    with pytest.raises(ValueError, match=r"no '\.\. math::' block"):
        latex_of(none)


@pytest.mark.parametrize(("page", "fn"), SHOWN + STEP_FNS, ids=lambda x: getattr(x, "__qualname__", str(x)))
def test_every_formula_shown_reads_in_chinese(page, fn):
    latex = latex_of(fn)
    with use_language("zh"):
        shown = localized(latex)
    assert not english_words(latex_prose(shown)), (page, shown)
    with use_language("en"):
        assert localized(latex) == latex  # English: the docstring's formula, unchanged
    assert shown.count("{") == shown.count("}")


def test_localized_translates_prose_and_leaves_symbols_alone():
    latex = (
        r"d_\text{head} + m^{\text{head}}, \quad \text{head} \ (\text{ masked scores }) \text{attn\_scores}"
    )
    with use_language("zh"):
        assert localized(latex) == (
            r"d_\text{head} + m^{\text{head}}, \quad \text{头} \ (\text{ 被掩码的分数 }) \text{attn\_scores}"
        )


def test_localized_escapes_a_translation_for_text_mode(monkeypatch):
    monkeypatch.setattr(tformer.formulas, "tr", lambda words: "50% of a_b {x} & #1 $")
    assert localized(r"x = \text{words}") == r"x = \text{50\% of a\_b \{x\} \& \#1 \$}"

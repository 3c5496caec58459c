"""A number widget's range is its view-state field's: one home for each bound.

The widgets read ``min_value``, ``max_value`` and ``step`` from the field (`ui.bind_number`),
so a link's value is checked against the range the widget offers. A source scan refuses a
number input or slider written with literal bounds; the pages under AppTest show every bound
widget drawn with its field's range.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import NumberInput, Slider

from tformer.ui.state import HEADS, ViewState

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
SOURCES = sorted([*(ROOT / "tformer" / "ui").rglob("*.py"), *(ROOT / "pages").glob("*.py"), ROOT / "app.py"])
# Widgets whose range is the model's or the text's shape (clamped, never a field's bounds).
SHAPED_BY_DATA = {"layers.q0", "layers.k0", "positional.n_pos", "steps.dim", "why.step", "flash.step"}


def _literal(node: ast.expr) -> bool:
    """A number written out (``64``, ``-1000``, ``2**31 - 1``), not one computed from data."""
    parts = list(ast.walk(node))
    return all(
        isinstance(n, (ast.Constant, ast.UnaryOp, ast.BinOp, ast.operator, ast.unaryop)) for n in parts
    )


def literal_bounds(path: Path) -> list[str]:
    """``file:line`` of each number_input / slider call given two literal numbers as bounds."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        if node.func.attr not in ("number_input", "slider"):
            continue
        bounds = node.args[1:3]
        if len(bounds) == 2 and all(_literal(b) for b in bounds):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_no_widget_writes_its_own_bounds():
    found = [hit for path in SOURCES for hit in literal_bounds(path)]
    assert not found, f"bounds written beside the widget, not read from the state field: {found}"


def test_the_heads_range_is_one_range():
    v = ViewState()
    assert v.bounds("n_heads") == v.bounds("compare.n_heads_b") == v.bounds("costs.n_heads") == HEADS


def test_steps_are_declared_where_the_widget_had_them():
    v = ViewState()
    assert (v.step("d_model"), v.step("train.d_model"), v.step("train.batch"), v.step("train.steps")) == (
        2,
        8,
        8,
        100,
    )
    assert v.step("n_heads") is None


def bound_widgets(at: AppTest) -> list[NumberInput | Slider]:
    return [w for w in [*at.number_input, *at.slider] if w.key and w.key not in SHAPED_BY_DATA]


OPENINGS = [
    ("pages/attention.py", {"source": "scratch"}),  # the sidebar's encoder shape
    ("pages/train.py", {"train.task": "shift"}),
    ("pages/costs.py", {"costs.section": "sparse"}),
    ("pages/compare.py", {"compare.what": "heads", "source": "scratch"}),
    ("pages/masks.py", {"masks.kind": "window", "source": "scratch"}),
    ("pages/positional.py", {"positional.section": "rotation", "source": "scratch"}),
    ("pages/qk_space.py", {"source": "scratch"}),
]


@pytest.mark.parametrize(("page", "params"), OPENINGS, ids=[p for p, _ in OPENINGS])
def test_each_bound_widget_shows_its_fields_range(page, params):
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.message for e in at.exception]
    widgets = bound_widgets(at)
    assert widgets, f"{page} drew no bound number widget"
    v = ViewState()
    for w in widgets:
        lo, hi = v.bounds(w.key)
        assert (w.min, w.max) == (lo, hi), w.key
        assert w.step == (v.step(w.key) or 1), w.key

"""What every figure shares: one palette (figures take every colour from tformer.figures.colors, parts keep one hue) and the base layout."""

from __future__ import annotations

import colorsys
import pathlib
import re

import pytest

from tformer.figures import architecture, colors, sublayers

FIGURES = pathlib.Path(colors.__file__).parent
HEX = re.compile(r"#[0-9a-fA-F]{6}\b")
# colors.py defines the palette; report.py writes a standalone HTML page's stylesheet.
OWN_COLOURS = {"colors.py", "report.py"}


@pytest.mark.parametrize(
    "path", sorted(p for p in FIGURES.glob("*.py") if p.name not in OWN_COLOURS), ids=lambda p: p.name
)
def test_figure_modules_write_no_colour_of_their_own(path: pathlib.Path) -> None:
    found = HEX.findall(path.read_text(encoding="utf-8"))
    assert not found, f"{path.name} writes colours {found}; name them in tformer/figures/colors.py"


def _hue(hex_colour: str) -> float:
    r, g, b = (int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return colorsys.rgb_to_hls(r, g, b)[0] * 360


@pytest.mark.parametrize("part", sorted(set(colors.PART_FILL) & set(colors.PART_LINE)))
def test_a_part_has_one_hue_in_fills_and_lines(part: str) -> None:
    fill, line = _hue(colors.PART_FILL[part]), _hue(colors.PART_LINE[part])
    assert abs(fill - line) < 10, f"{part}: fill hue {fill:.0f} deg, line hue {line:.0f} deg"


def test_architecture_and_encoder_figures_use_the_part_colours() -> None:
    assert architecture.FILL == colors.PART_FILL
    assert sublayers.ATTN_COLOR == colors.PART_LINE["attn"]
    assert sublayers.MLP_COLOR == colors.PART_LINE["mlp"]
    assert sublayers.RESID_COLOR == colors.PART_LINE["resid"]


def test_series_are_distinct() -> None:
    assert len(set(colors.SERIES)) == len(colors.SERIES)


def test_base_layout_adds_margins_title_and_width() -> None:
    from tformer.figures.layout import base_layout

    layout = base_layout(
        300, width=460, left=50, right=20, top=44, bottom=40, title="t", meta={"n": 3}, bargap=0.1
    )
    assert layout["height"] == 384
    assert layout["margin"] == {"l": 50, "r": 20, "t": 44, "b": 40, "pad": 0}
    assert layout["meta"] == {"width": 460, "n": 3}
    assert layout["title"]["text"] == "t"
    assert layout["bargap"] == 0.1
    assert "title" not in base_layout(10, width=1, left=0, right=0, top=0, bottom=0)

"""The page registry is the one list of pages: every script is in it, and its fields hold up."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")

from streamlit.source_util import page_icon_and_name

from tformer.ui.registry import PAGES, SECTIONS, by_section, page_for, page_states
from tformer.ui.state import ViewState

ROOT = Path(__file__).resolve().parent.parent


def test_every_page_script_is_registered_and_every_entry_has_a_script():
    on_disk = {"app.py"} | {f"pages/{p.name}" for p in (ROOT / "pages").glob("*.py")}
    assert {p.script for p in PAGES} == on_disk
    assert PAGES[0].script == "app.py"  # the start page is Streamlit's main script


def test_keys_titles_and_url_paths_are_unique():
    for field in ("key", "title", "url_path", "script"):
        values = [getattr(p, field) for p in PAGES]
        assert len(set(values)) == len(values), field


@pytest.mark.parametrize("spec", PAGES[1:], ids=lambda s: s.key)
def test_url_path_is_the_one_streamlit_derives_from_the_file_name(spec):
    icon, name = page_icon_and_name(Path(spec.script))
    assert (icon, name) == ("", spec.url_path)  # no emoji or number prefix in file names


def test_sections_are_known_and_in_lesson_order():
    assert all(p.section in SECTIONS for p in PAGES)
    order = [SECTIONS.index(p.section) for p in PAGES]
    assert order == sorted(order), "PAGES are listed section by section"
    assert [s for s, _ in by_section()] == [s for s in SECTIONS if any(p.section == s for p in PAGES)]


def test_icons_are_emoji_not_material_names():
    # ":material/...:" makes the browser fetch each icon from an internet font host
    assert all(p.icon and not p.icon.startswith(":") for p in PAGES)


def test_every_page_state_belongs_to_a_registered_page():
    assert set(page_states()) <= {p.key for p in PAGES}
    assert set(ViewState().pages) == set(page_states())


def test_page_for_finds_a_running_script_by_its_path():
    assert page_for(str(ROOT / "pages" / "qkv.py")).key == "qkv"
    assert page_for(str(ROOT / "app.py")).key == "home"
    with pytest.raises(KeyError, match="not in"):
        page_for(str(ROOT / "pages" / "nope.py"))

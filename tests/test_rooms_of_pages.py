"""Every registered page has its room: its view module, its state (when it binds choices of its
own), its Chinese strings and an AppTest of its own; and the app layer's lazy facade names for
mypy exactly what it loads (docs/adding-a-page.md)."""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tformer.i18n import catalog
from tformer.ui.registry import PAGES, PageSpec

ROOT = Path(__file__).resolve().parent.parent
VIEWS = ROOT / "tformer" / "ui" / "views"


def view_files(spec: PageSpec) -> list[Path]:
    package = VIEWS / spec.key
    return sorted(package.glob("*.py")) if package.is_dir() else [VIEWS / f"{spec.key}.py"]


def tr_templates(path: Path) -> set[str]:
    """The literal templates of every ``tr("...")`` call in a file."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "tr"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.add(node.args[0].value)
    return out


@pytest.mark.parametrize("spec", PAGES, ids=lambda s: s.key)
def test_every_page_has_its_view_module(spec):
    assert importlib.util.find_spec(f"tformer.ui.views.{spec.key}") is not None, (
        f"page {spec.key!r} has no view: write tformer/ui/views/{spec.key}.py (docs/adding-a-page.md)"
    )


@pytest.mark.parametrize("spec", PAGES, ids=lambda s: s.key)
def test_a_page_that_binds_its_own_keys_names_its_state(spec):
    code = "\n".join(p.read_text(encoding="utf-8") for p in [ROOT / spec.script, *view_files(spec)])
    if re.search(rf"[\"']{re.escape(spec.key)}\.[a-z_]+[\"']", code):
        assert spec.state is not None, (
            f"page {spec.key!r} binds {spec.key}.* keys but its registry entry names no state class "
            f"(add a dataclass to tformer/ui/state.py and state= to its PageSpec)"
        )


@pytest.mark.parametrize("spec", PAGES, ids=lambda s: s.key)
def test_every_page_has_its_chinese_strings(spec):
    zh = catalog("zh")
    files = [ROOT / spec.script, *(p for p in view_files(spec) if p.exists())]
    missing = sorted(t for f in files for t in tr_templates(f) if t not in zh)
    assert not missing, (
        f"page {spec.key!r} has strings without a Chinese translation "
        f"(add them to assets/i18n/zh/{spec.key}.json): {missing[:5]}"
    )


@pytest.mark.parametrize("spec", PAGES, ids=lambda s: s.key)
def test_every_page_has_an_apptest_of_its_own(spec):
    own = ROOT / "tests" / f"test_app_{spec.key}.py"
    named = [
        p.name
        for p in (ROOT / "tests").glob("test_app_*.py")
        if p.name not in ("test_app_pages.py",) and f'"{spec.script}"' in p.read_text(encoding="utf-8")
    ]
    assert own.exists() or named, (
        f"page {spec.key!r} has no AppTest of its own: write tests/test_app_{spec.key}.py"
    )


def test_the_facade_types_every_name_it_loads():
    tree = ast.parse((ROOT / "tformer" / "ui" / "__init__.py").read_text(encoding="utf-8"))
    lazy: dict[str, str] = {}
    typed: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "_EXPORTS":
            assert isinstance(node.value, ast.Dict)
            lazy = {k.value: v.value for k, v in zip(node.value.keys, node.value.values, strict=True)}  # type: ignore[union-attr]
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom)
                assert imp.level == 1
                typed |= {a.name: str(imp.module) for a in imp.names}
    assert lazy
    assert lazy == typed, {
        "loaded, not typed": sorted(set(lazy) - set(typed)),
        "typed, not loaded": sorted(set(typed) - set(lazy)),
        "other module": sorted(n for n in set(lazy) & set(typed) if lazy[n] != typed[n]),
    }


def test_importing_the_app_layer_loads_no_torch():
    code = "import sys, tformer, tformer.ui, tformer.ui.views; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"

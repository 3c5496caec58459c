"""The import direction holds: core (torch, numpy) <- figures (plotly, numpy) <- ui (streamlit)
<- pages. No module imports another's private names."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "tformer"
PAGES = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]


def layer_of(path: Path) -> str:
    rel = path.relative_to(PKG).parts if PKG in path.parents else ()
    if not rel:
        return "pages"
    return rel[0] if rel[0] in ("figures", "ui") else "core"


def type_checking_imports(tree: ast.AST) -> set[ast.AST]:
    """The imports under ``if TYPE_CHECKING:``: read by type checkers, never run."""
    out: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in (
            getattr(node.test, "id", None),
            getattr(node.test, "attr", None),
        ):
            out |= {
                n for stmt in node.body for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom))
            }
    return out


def imports(path: Path, *, runtime: bool = False) -> list[tuple[str, list[str]]]:
    """(absolute module, imported names) for every import in ``path``; with ``runtime``, only
    the imports that run (not those under ``if TYPE_CHECKING:``)."""
    out = []
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = type_checking_imports(tree) if runtime else set()
    for node in ast.walk(tree):
        if node in skip:
            continue
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out.append((module, [a.name for a in node.names]))
    return out


MODULES = sorted(PKG.rglob("*.py"))
# What each layer may not import (top-level packages, or tformer's own layers).
FORBIDDEN = {
    "core": {"streamlit", "plotly", "tformer.figures", "tformer.ui"},
    "figures": {"streamlit", "torch", "tformer.ui"},
    "ui": set(),
    "pages": {"torch"},  # pages hold no tensor math
}


@pytest.mark.parametrize("path", MODULES + PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_module_imports_only_from_the_layers_below_it(path):
    banned = FORBIDDEN[layer_of(path)]
    for module, names in imports(path):
        full = [module] + [f"{module}.{n}" for n in names]
        hit = [m for m in full for b in banned if m == b or m.startswith(b + ".")]
        assert not hit, f"{path.relative_to(ROOT)} imports {hit}"
    # A figure module may name a core type for the type checker (``if TYPE_CHECKING:``), which
    # loads nothing at run time; what it runs is numpy, plotly and tformer.i18n.
    for module, _ in imports(path, runtime=True):
        if (
            layer_of(path) == "figures"
            and module.startswith("tformer")
            and not module.startswith("tformer.figures")
            and module != "tformer.i18n"  # the interface's language: stdlib only
        ):
            pytest.fail(
                f"{path.name}: figure builders import numpy, plotly and tformer.i18n only, not {module}"
                " (a core type for annotations goes under `if TYPE_CHECKING:`)"
            )


@pytest.mark.parametrize("path", MODULES + PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_imports_another_modules_private_names(path):
    for module, names in imports(path):
        private = [n for n in names if n.startswith("_") and n != "__future__"]
        assert not private, f"{path.relative_to(ROOT)} imports {private} from {module}"
        parts = [p for p in module.split(".") if p]
        assert not any(p.startswith("_") and p != "__future__" for p in parts), (path, module)


def test_import_tformer_loads_neither_streamlit_nor_plotly():
    code = "import sys, tformer; print(sorted(m for m in ('streamlit', 'plotly') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_figure_modules_load_no_core_module():
    """The types figures name under ``if TYPE_CHECKING:`` stay out of a run."""
    names = sorted(p.stem for p in (PKG / "figures").glob("*.py") if p.stem != "__init__")
    code = (
        f"import sys\nimport {', '.join('tformer.figures.' + n for n in names)}\n"
        "print(sorted(m for m in sys.modules if m.startswith('tformer.')"
        " and not m.startswith('tformer.figures') and m != 'tformer.i18n'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_figure_builders_load_no_streamlit():
    code = "import sys, tformer.figures, tformer.analysis; print('streamlit' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("package", ["tformer", "tformer.ui"])
def test_no_lazy_name_is_also_a_submodule(package):
    """An imported submodule becomes a package attribute and would shadow the lazy name of the
    same spelling (``ui.frame`` the function vs ``tformer/ui/frame.py``)."""
    import importlib

    pkg = importlib.import_module(package)
    folder = Path(pkg.__file__).parent
    clashes = [n for n in pkg._EXPORTS if (folder / f"{n}.py").exists() or (folder / n).is_dir()]
    assert clashes == []


@pytest.mark.parametrize("package", ["tformer", "tformer.ui"])
def test_every_lazy_name_resolves(package):
    import importlib

    pkg = importlib.import_module(package)
    for name in pkg.__all__:
        assert getattr(pkg, name) is not None, name


CORE_PACKAGES = [
    "tformer.model",
    "tformer.analysis",
    "tformer.efficiency",
    "tformer.training",
    "tformer.questions",
]


@pytest.mark.parametrize("package", CORE_PACKAGES)
def test_no_reexported_name_is_also_a_submodule(package):
    """Importing ``tformer.analysis.masks`` sets the package attribute ``masks`` to the module,
    so a re-exported name of that spelling would change with import order."""
    import importlib

    pkg = importlib.import_module(package)
    folder = Path(pkg.__file__).parent
    assert len(set(pkg.__all__)) == len(pkg.__all__)  # no name twice
    clashes = [n for n in pkg.__all__ if (folder / f"{n}.py").exists() or (folder / n).is_dir()]
    assert clashes == []
    assert [n for n in pkg.__all__ if getattr(pkg, n, None) is None] == []


# Core modules the app imports before torch loads (the view state, the Flash page, the Train
# page's settings): a package __init__ that re-exported a torch module would load it with them.
TORCH_FREE = [
    "tformer.model.config",
    "tformer.analysis",
    "tformer.analysis.walkthrough",
    "tformer.analysis.masks",
    "tformer.efficiency.flash",
    "tformer.training.tasks",
    "tformer.training.recipe",
    "tformer.training.runs",
    "tformer.training.role_timeline",
    "tformer.training.presets",
    "tformer.questions",  # every template registered, none run: the lesson bar imports them
    "tformer.ui",
    "tformer.ui.state",
]


def test_the_modules_the_app_imports_before_torch_load_no_torch():
    code = (
        f"import sys\nimport {', '.join(TORCH_FREE)}\n"
        "tformer.questions.templates()\nprint('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"

"""Every message the model-folder core can show has a Chinese translation with the same fields."""

from __future__ import annotations

import ast
import string
from pathlib import Path

import pytest

from tformer.i18n import catalog

ROOT = Path(__file__).resolve().parent.parent / "tformer" / "model"
MODULES = ["config", "families", "model_files", "model_loader", "models_dir", "predictions", "pretrained"]


def templates(module: str) -> list[str]:
    tree = ast.parse((ROOT / f"{module}.py").read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "tr":
            arg = node.args[0]
            assert isinstance(arg, ast.Constant), ast.dump(arg)
            assert isinstance(arg.value, str), ast.dump(arg)
            found.append(arg.value)
    return found


def fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


@pytest.mark.parametrize("module", MODULES)
def test_every_template_is_translated(module: str) -> None:
    zh = catalog("zh")
    found = templates(module)
    assert found, module
    missing = [t for t in found if t not in zh]
    assert not missing, missing
    for t in found:
        assert fields(zh[t]) == fields(t), t

"""The README's notebook block runs as written, with tformer alone: it draws the overview and a
head, and Streamlit is never imported."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"

RUNNER = """
import sys
import plotly.graph_objects as go
shown = []
go.Figure.show = lambda self, *a, **k: shown.append(self)  # a notebook would render it
exec(compile(sys.stdin.read(), "README.md", "exec"))
assert [len(f.data) for f in shown] and all(len(f.data) >= 1 for f in shown), shown
kinds = [f.data[0].type for f in shown]
assert kinds == ["image", "heatmap"], kinds
assert shown[1].data[0].z is not None and len(shown[1].data[0].z) == len(cap.labels)
assert "streamlit" not in sys.modules, "the notebook path imported streamlit"
print("ok", len(cap.labels))
"""


def snippet() -> str:
    text = README.read_text(encoding="utf-8")
    found = re.search(r"<!-- notebook-snippet -->\s*```python\n(.*?)```", text, re.S)
    assert found, "README lost its notebook block"
    return found.group(1)


def test_the_readme_notebook_block_runs_without_streamlit():
    result = subprocess.run(
        [sys.executable, "-c", RUNNER], input=snippet(), capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("ok")

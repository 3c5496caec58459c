"""A regular (non-editable) install has every module and file the library reads."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        cwd=out,
    )
    (path,) = out.glob("tformer-*.whl")
    return path


@pytest.mark.slow
def test_the_wheel_holds_every_module_and_asset(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tformer").rglob("*.py")}
    assert modules <= names, sorted(modules - names)
    assets = {f"tformer/assets/{p.name}" for p in (ROOT / "assets").iterdir() if p.is_file()}
    assert assets <= names, sorted(assets - names)
    for f in ("tformer/py.typed", "tformer/data/scratch_tokenizer.json", "tformer/ui/static/head_grid.js"):
        assert f in names


@pytest.mark.slow
def test_the_library_reads_its_files_from_the_installed_wheel(wheel, tmp_path):
    code = (
        "import tformer, tformer.resources as r\n"
        "from tformer.model.tokenizer import scratch_tokenizer\n"
        "assert 'tformer-' in tformer.__file__ and tformer.__file__.startswith(sys.path[0]), tformer.__file__\n"
        "print(len(r.examples()), scratch_tokenizer().encode('attention').ids[:1] != [])\n"
    )
    # the wheel first on sys.path (zip import), from a folder that is not the repo
    out = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(wheel)!r})\n" + code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    n_examples, tokenized = out.stdout.split()
    assert int(n_examples) >= 5
    assert tokenized == "True"

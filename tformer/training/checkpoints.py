"""Save a trained encoder as a run folder, list the saved runs, load one back.

A run folder holds four files, each readable without tformer:

- ``model.safetensors``: the state dict (safetensors, never a pickle);
- ``config.json``: the `EncoderConfig`, field by field (``dataclasses.asdict``);
- ``tokenizer.json``: the tokenizers-library file of the tokenizer the model was trained with;
- ``run.json``: what was trained and how (task, recipe, history, example texts), the format
  version and the time it was saved.

Runs live under `runs_dir()`: the folder named by the environment variable ``TFORMER_RUNS_DIR``,
else ``runs`` in the current working directory.

Where a run is named: a ``str`` is a run *name* (ASCII letters, digits, ``-`` and ``_``, at most
64 characters) inside `runs_dir()`; a `pathlib.Path` is a folder anywhere. So text a person typed
can never reach outside `runs_dir()` (``"../x"`` is refused); `sanitize_run_name` turns any text
into a valid name.

A run appears whole or not at all: `save_run` writes into a hidden temporary folder next to the
target and renames it in one step. Every problem on loading raises `CheckpointError` (a
ValueError) naming the file and what is wrong with it, worded in the current language
(`tformer.i18n.tr`: the app shows it to the reader who picked the run).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import re
import secrets
import shutil
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

from ..i18n import tr
from ..model.config import EncoderConfig
from ..model.encoder import Encoder
from ..model.model_files import (
    MAX_CONFIG_BYTES,
    MAX_TOKENIZER_BYTES,
    ModelFolderError,
    Refusals,
    check_config_bounds,
    check_file_size,
    contained,
    expected_shapes,
    folder_stamp,
    inside,
    open_weights,
    read_json_file,
)
from ..model.tokenizer import Tokenizer

__all__ = [
    "FORMAT_VERSION",
    "RUNS_DIR_ENV",
    "CheckpointError",
    "RunInfo",
    "finite_number",
    "is_run_name",
    "list_runs",
    "load_run",
    "read_run_config",
    "read_run_meta",
    "remove_stale_temp",
    "runs_dir",
    "sanitize_run_name",
    "save_run",
]

RUNS_DIR_ENV = "TFORMER_RUNS_DIR"
FORMAT = "tformer-run"
FORMAT_VERSION = 1  # bump when run.json or the file set changes incompatibly
MAX_NAME_LEN = 64

MODEL_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
TOKENIZER_FILE = "tokenizer.json"
RUN_FILE = "run.json"
RUN_FILES = (MODEL_FILE, CONFIG_FILE, TOKENIZER_FILE, RUN_FILE)

_NAME = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_NAME_LEN}}}")
_NOT_NAME = re.compile(r"[^A-Za-z0-9_-]+")
_TMP_PREFIX = ".tmp-"  # not a valid run name, so list_runs never shows a half-written run
# A save takes about a second; a temporary folder this old was left by an interrupted one.
STALE_TMP_S = 10 * 60
_REFUSED = Refusals()  # refused run folders, per folder state: the next visitor is told at once
MAX_RUN_JSON_BYTES = 16 * 2**20  # run.json holds the training history


_log = logging.getLogger(__name__)


class CheckpointError(ModelFolderError):
    """A run folder cannot be written or read; the message names the file and the problem."""


@contextmanager
def _as_checkpoint_error() -> Iterator[None]:
    """The checks shared with model folders (`tformer.model.model_files`) raise ModelFolderError;
    here they are CheckpointErrors, with the same message."""
    try:
        yield
    except CheckpointError:
        raise
    except ModelFolderError as exc:
        raise CheckpointError(str(exc)) from exc


@dataclass(frozen=True)
class RunInfo:
    """One saved run, as `list_runs` finds it (only run.json is read)."""

    name: str
    path: Path
    task: str  # task["name"] as saved, "" when the task had none
    created: datetime  # timezone-aware (UTC)
    accuracy: float | None  # the final accuracy, when the history held one


# --- names and places --------------------------------------------------------------------------


def runs_dir() -> Path:
    """Where runs are saved: ``$TFORMER_RUNS_DIR``, else ``./runs`` (both from the working dir)."""
    configured = os.environ.get(RUNS_DIR_ENV, "").strip()
    return (Path(configured).expanduser() if configured else Path("runs")).absolute()


def is_run_name(name: str) -> bool:
    """True for 1..64 ASCII letters, digits, ``-`` and ``_`` (nothing else: no dots, no slashes)."""
    return isinstance(name, str) and _NAME.fullmatch(name) is not None


def sanitize_run_name(text: str, fallback: str = "run") -> str:
    """A valid run name from any text: other characters become ``-``, cut to 64 characters.

    ``"My run: 2 layers!"`` -> ``"My-run-2-layers"``; text with nothing usable gives ``fallback``.
    """
    name = _NOT_NAME.sub("-", text).strip("-")[:MAX_NAME_LEN].strip("-")
    if name:
        return name
    if not is_run_name(fallback):
        raise ValueError(f"fallback={fallback!r} is not a valid run name either")
    return fallback


def _run_folder(folder: str | os.PathLike[str]) -> Path:
    """A ``str`` is a run name under runs_dir(); a path is used as it is (its name still checked)."""
    if isinstance(folder, str):
        if not is_run_name(folder):
            raise CheckpointError(
                tr(
                    "run name {name!r} is not allowed: use 1 to {most} ASCII letters, digits, '-' or '_' "
                    "(sanitize_run_name makes one from any text; pass a pathlib.Path for a folder outside {root})",
                    name=folder,
                    most=MAX_NAME_LEN,
                    root=runs_dir(),
                )
            )
        root = runs_dir()
        path = root / folder
        if not inside(path, root):
            raise CheckpointError(
                tr(
                    "{path} points outside the runs folder {root} (a symlink?): it is not loaded",
                    path=path,
                    root=root,
                )
            )
        return path
    path = Path(folder)
    if ".." in path.parts:
        raise CheckpointError(tr("{path}: a run folder path may not contain '..'", path=path))
    return path


# --- saving ------------------------------------------------------------------------------------


def save_run(
    folder: str | os.PathLike[str],
    model: Encoder,
    tokenizer: Tokenizer,
    *,
    task: Mapping[str, Any],
    recipe: Mapping[str, Any],
    history: Mapping[str, Any] | None = None,
    examples: Sequence[str] = (),
) -> Path:
    """Write ``model`` and ``tokenizer`` as a new run folder and return its path.

    ``folder``: a run name (str, saved under `runs_dir()`) or a `pathlib.Path`, whose last part
    must be a valid run name too. ``task`` and ``recipe`` are JSON-able mappings (numpy values
    are converted); ``task["name"]`` is what `list_runs` shows. ``history`` is what the trainer
    recorded, e.g. ``{"steps": [...], "evals": [{"step": 100, "accuracy": 0.9}, ...]}``; the
    final accuracy is ``history["final"]["accuracy"]``, else ``history["accuracy"]``, else the
    last ``accuracy`` in ``history["evals"]``.

    Refuses (CheckpointError) an existing run of the same name: a run is never overwritten.
    """
    if not isinstance(model, Encoder):
        raise TypeError(f"model must be a tformer Encoder, got {type(model).__name__}")
    if not isinstance(tokenizer, Tokenizer):
        raise TypeError(f"tokenizer must be a tformer Tokenizer, got {type(tokenizer).__name__}")
    target = _run_folder(folder)
    if not is_run_name(target.name):
        raise CheckpointError(
            f"{target}: the folder name {target.name!r} is not a valid run name (1 to {MAX_NAME_LEN} "
            f"ASCII letters, digits, '-' or '_')"
        )
    cfg = model.cfg
    if tokenizer.vocab_size > cfg.vocab_size:
        raise CheckpointError(
            f"the tokenizer has {tokenizer.vocab_size} tokens but the model's vocab_size is "
            f"{cfg.vocab_size}: ids past {cfg.vocab_size - 1} would have no embedding"
        )

    # Everything that can fail on bad input fails here, before a single file is written.
    if isinstance(examples, str) or not all(isinstance(t, str) for t in examples):
        raise TypeError("examples must be a sequence of str (a list of texts, not one text)")
    hist = dict(history) if history is not None else None
    run = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "name": target.name,
        "created": datetime.now(timezone.utc).isoformat(timespec="microseconds"),
        "task": dict(task),
        "recipe": dict(recipe),
        "history": hist,
        "accuracy": _final_accuracy(hist),
        "examples": list(examples),
        "tokenizer_max_len": tokenizer.max_len,
        "n_params": cfg.n_params(),
    }
    run_text = _to_json(run, RUN_FILE)
    config_text = _to_json(dataclasses.asdict(cfg), CONFIG_FILE)
    tokenizer_text = tokenizer.backend.to_str()
    # Own CPU copies: safetensors wants contiguous tensors that share no memory.
    state = {k: v.detach().to("cpu", copy=True).contiguous() for k, v in model.state_dict().items()}

    parent = target.parent
    if target.exists():
        raise CheckpointError(f"{target} already exists: runs are never overwritten, pick another name")
    parent.mkdir(parents=True, exist_ok=True)
    tmp = parent / f"{_TMP_PREFIX}{target.name}-{secrets.token_hex(4)}"
    try:
        tmp.mkdir()
        from safetensors.torch import save_file

        save_file(state, str(tmp / MODEL_FILE), metadata={"format": "pt", FORMAT: str(FORMAT_VERSION)})
        _fsync(tmp / MODEL_FILE)
        for name, text in (
            (CONFIG_FILE, config_text),
            (TOKENIZER_FILE, tokenizer_text),
            (RUN_FILE, run_text),
        ):
            _write_text(tmp / name, text)
        _fsync_dir(tmp)
        if target.exists():  # someone saved the same name meanwhile
            raise CheckpointError(f"{target} already exists: runs are never overwritten, pick another name")
        try:
            os.rename(tmp, target)  # one step: the run appears whole or not at all
        except OSError as exc:
            raise CheckpointError(f"cannot create {target}: {exc}") from exc
        _fsync_dir(parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _final_accuracy(history: Mapping[str, Any] | None) -> float | None:
    if not history:
        return None
    final = history.get("final")
    candidates: list[Any] = [final.get("accuracy") if isinstance(final, Mapping) else None]
    candidates.append(history.get("accuracy"))
    evals = history.get("evals")
    if isinstance(evals, Sequence) and not isinstance(evals, str):
        candidates += [e.get("accuracy") for e in reversed(evals) if isinstance(e, Mapping)]
    for value in candidates:
        number = finite_number(value)
        if number is not None:
            return number
    return None


def finite_number(value: Any) -> float | None:
    """A finite float from a Python or numpy number (bools are not numbers here)."""
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value) if math.isfinite(value) else None
    except OverflowError:  # an integer too large for a float (JSON allows any number of digits)
        return None


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "tolist"):  # numpy arrays and scalars, torch tensors
        return obj.tolist()
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, set | frozenset):
        return sorted(obj, key=repr)
    raise TypeError(f"{type(obj).__name__} is not JSON-serialisable")


def _to_json(data: Any, file_name: str) -> str:
    try:
        return json.dumps(data, indent=2, ensure_ascii=False, default=_json_default) + "\n"
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"cannot write {file_name}: {exc}") from exc


def _write_text(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    """Make a rename durable (POSIX only: Windows cannot open a folder)."""
    if os.name == "nt":
        return
    # some filesystems refuse fsync on folders; the rename itself is still atomic
    with contextlib.suppress(OSError):
        _fsync(path)


# --- listing -----------------------------------------------------------------------------------


def list_runs(root: str | os.PathLike[str] | None = None) -> list[RunInfo]:
    """Saved runs under ``root`` (default `runs_dir()`), newest first.

    Reads only each run.json. Folders that are not runs (no run.json, unreadable or foreign
    JSON, a missing file, a name that is not a run name, a half-written temporary folder, a
    symlink or file that leads outside ``root``, a run.json past its size bound) are skipped,
    never raised on; a missing ``root`` gives ``[]``.
    """
    base = Path(root) if root is not None else runs_dir()
    try:
        entries = list(base.iterdir())
    except OSError:  # missing, not a folder, no permission
        return []
    found = []
    for entry in entries:
        info = _run_info(entry, base)
        if info is not None:
            found.append(info)
    found.sort(key=lambda r: (r.created, r.name), reverse=True)
    return found


def _run_info(folder: Path, root: Path) -> RunInfo | None:
    try:
        if not is_run_name(folder.name) or not folder.is_dir() or not inside(folder, root):
            return None
        if not all(contained(folder, name).is_file() for name in RUN_FILES):
            return None
        run = read_json_file(folder / RUN_FILE, MAX_RUN_JSON_BYTES)
        if run.get("format") != FORMAT:
            return None
        created = datetime.fromisoformat(run["created"])
        if created.tzinfo is None:
            created = created.replace(tzinfo=timezone.utc)
        task = run.get("task")
        task_name = task.get("name") if isinstance(task, dict) else None
        return RunInfo(
            name=folder.name,
            path=folder,
            task=task_name if isinstance(task_name, str) else "",
            created=created,
            accuracy=finite_number(run.get("accuracy")),
        )
    except (OSError, ValueError, TypeError, KeyError):  # junk: not a run we can show
        return None


def remove_stale_temp(
    root: str | os.PathLike[str] | None = None, older_than_s: float = STALE_TMP_S
) -> list[Path]:
    """Delete the temporary folders that interrupted saves left in ``root`` (default
    `runs_dir()`): ``.tmp-*`` entries not changed for ``older_than_s`` seconds (a save in
    progress is younger). A ``.tmp-*`` symlink is unlinked, never followed. Returns what was
    removed; what cannot be removed is left (and logged), never raised on."""
    base = Path(root) if root is not None else runs_dir()
    try:
        entries = [e for e in base.iterdir() if e.name.startswith(_TMP_PREFIX)]
    except OSError:
        return []
    now = time.time()
    removed = []
    for entry in entries:
        try:
            st = os.stat(entry, follow_symlinks=False)
            if now - st.st_mtime < older_than_s:
                continue
            if stat.S_ISDIR(st.st_mode):
                shutil.rmtree(entry)
            else:
                entry.unlink()
            removed.append(entry)
        except OSError as exc:
            _log.warning("cannot remove the stale temporary folder %s: %s", entry, exc)
    return removed


# --- loading -----------------------------------------------------------------------------------


def read_run_meta(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """A run's run.json as a dict (task, recipe, history, examples), read with the same checks
    as `load_run` (the folder inside `runs_dir()` for a name, the file inside the folder, its
    size bounded); CheckpointError naming the file otherwise."""
    path = _run_folder(folder)
    with _as_checkpoint_error():
        run = read_json_file(contained(path, RUN_FILE), MAX_RUN_JSON_BYTES)
    if run.get("format") != FORMAT:
        raise CheckpointError(
            tr(
                "{path} is not a tformer run file (format={found!r})",
                path=path / RUN_FILE,
                found=run.get("format"),
            )
        )
    return run


def read_run_config(folder: str | os.PathLike[str]) -> EncoderConfig:
    """A run's config.json as its `EncoderConfig`, read with `load_run`'s checks (the file inside
    the folder, its size bounded, no unknown field, every size within
    `tformer.model.model_files.CONFIG_BOUNDS`); CheckpointError naming the file otherwise.
    Nothing else of the run is read."""
    path = _run_folder(folder)
    with _as_checkpoint_error():
        config_file = contained(path, CONFIG_FILE)
        cfg = _read_config(config_file)
        check_config_bounds(cfg, config_file)
    return cfg


def load_run(
    folder: str | os.PathLike[str], device: str | torch.device = "cpu"
) -> tuple[Encoder, Tokenizer, dict[str, Any]]:
    """``(model, tokenizer, run)`` from a run folder: the model in eval mode on ``device``.

    ``folder``: a run name (str, under `runs_dir()`) or a `pathlib.Path` (`RunInfo.path`).
    ``run`` is run.json as a dict. Raises CheckpointError naming the file and the problem: a
    missing file, bad JSON, an unknown or invalid config field, a size past
    `tformer.model.model_files.CONFIG_BOUNDS`, a damaged or truncated safetensors file, a missing, extra or
    wrongly shaped tensor, a file that leads outside the folder. Everything is checked before
    the model is built or a weight is read (the weights' header alone gives their shapes);
    weights are only ever read with safetensors (no pickle is unpickled).

    A refusal is remembered until one of the folder's files changes: asking again costs a
    few stat calls.
    """
    path = _run_folder(folder)
    stamp = folder_stamp(path, RUN_FILES)
    _REFUSED.check(path, stamp, CheckpointError)
    try:
        with _as_checkpoint_error():
            return _load_checked(path, device)
    except CheckpointError as err:
        _REFUSED.remember(path, stamp, str(err))
        raise


def _load_checked(path: Path, device: str | torch.device) -> tuple[Encoder, Tokenizer, dict[str, Any]]:
    if not path.is_dir():
        raise CheckpointError(
            tr("{path} is not a run folder (it does not exist or is not a folder)", path=path)
        )
    run = read_run_meta(path)
    version = run.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= FORMAT_VERSION:
        raise CheckpointError(
            tr(
                "{path}: format_version={version!r} is not supported (this tformer reads 1..{newest}; a "
                "newer tformer may have written it)",
                path=path / RUN_FILE,
                version=version,
                newest=FORMAT_VERSION,
            )
        )
    cfg = read_run_config(path)

    # The shapes first, from the weights' header: nothing is allocated for a file that lies.
    weights_file = contained(path, MODEL_FILE)
    with open_weights(weights_file) as header:
        _check_state(header.shapes, expected_shapes(cfg), weights_file)
    tokenizer = _read_tokenizer(path, run, cfg)
    try:
        weights = _read_weights(weights_file)
        model = Encoder(cfg, init_weights=False)
        _check_state(_shapes(weights), _shapes(model.state_dict()), weights_file)  # changed since?
        _check_float(weights, weights_file)
        model.load_state_dict(weights, strict=True)
        model.to(torch.device(device)).eval()
    except (MemoryError, RuntimeError) as exc:
        raise CheckpointError(
            tr(
                "{path}: the model cannot be built here: {kind}: {error}",
                path=path,
                kind=type(exc).__name__,
                error=exc,
            )
        ) from exc
    return model, tokenizer, run


def _read_tokenizer(path: Path, run: Mapping[str, Any], cfg: EncoderConfig) -> Tokenizer:
    tok_file = path / TOKENIZER_FILE
    if not os.path.lexists(tok_file):
        raise CheckpointError(
            tr("missing file {path}: the run cannot tokenize text without it", path=tok_file)
        )
    contained(path, TOKENIZER_FILE)
    check_file_size(tok_file, MAX_TOKENIZER_BYTES, tr("a tokenizer"))
    max_len = run.get("tokenizer_max_len", cfg.max_len)
    if not isinstance(max_len, int) or isinstance(max_len, bool) or not 1 <= max_len <= cfg.max_len:
        raise CheckpointError(
            tr(
                "{path}: tokenizer_max_len={value!r} must be an integer in 1..{most} (max_len in {config})",
                path=path / RUN_FILE,
                value=max_len,
                most=cfg.max_len,
                config=CONFIG_FILE,
            )
        )
    try:
        tokenizer = Tokenizer.from_file(tok_file, max_len=max_len)
    except ValueError as exc:
        raise CheckpointError(tr("{path}: {error}", path=tok_file, error=exc)) from exc
    if tokenizer.vocab_size > cfg.vocab_size:
        raise CheckpointError(
            tr(
                "{path} has {n} tokens but {config} has vocab_size={vocab_size}",
                path=tok_file,
                n=tokenizer.vocab_size,
                config=path / CONFIG_FILE,
                vocab_size=cfg.vocab_size,
            )
        )
    return tokenizer


def _read_config(path: Path) -> EncoderConfig:
    data = read_json_file(path, MAX_CONFIG_BYTES)
    known = {f.name for f in dataclasses.fields(EncoderConfig)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise CheckpointError(
            tr(
                "{path} has unknown keys {unknown} (EncoderConfig fields: {known})",
                path=path,
                unknown=unknown,
                known=sorted(known),
            )
        )
    try:
        return EncoderConfig(**data)
    except (ValueError, TypeError, OverflowError) as exc:
        raise CheckpointError(tr("{path}: {error}", path=path, error=exc)) from exc


def _read_weights(path: Path) -> dict[str, torch.Tensor]:
    if not path.is_file():
        raise CheckpointError(tr("missing file {path}", path=path))
    try:
        from safetensors.torch import load_file

        weights = load_file(str(path), device="cpu")
    except Exception as exc:  # safetensors raises its own error type, OSError, or others
        raise CheckpointError(
            tr(
                "{path} cannot be read (truncated, damaged or not a safetensors file): `{kind}: {error}`",
                path=path,
                kind=type(exc).__name__,
                error=exc,
            )
        ) from exc
    return dict(weights)


def _shape(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


def _shapes(state: Mapping[str, torch.Tensor]) -> dict[str, tuple[int, ...]]:
    return {k: tuple(v.shape) for k, v in state.items()}


def _listed(names: list[str], sep: str = ", ") -> str:
    shown = sep.join(names[:5])
    return tr("{names} and {n} more", names=shown, n=len(names) - 5) if len(names) > 5 else shown


def _check_state(
    shapes: Mapping[str, tuple[int, ...]], expected: Mapping[str, tuple[int, ...]], source: Path
) -> None:
    """Every expected tensor present and of the right shape; nothing extra."""
    missing = [k for k in expected if k not in shapes]
    if missing:
        raise CheckpointError(
            tr(
                "{path} lacks tensors that {config} calls for: {names}",
                path=source,
                config=CONFIG_FILE,
                names=_listed(missing),
            )
        )
    extra = sorted(set(shapes) - set(expected))
    if extra:
        raise CheckpointError(
            tr("{path} has tensors this config has no place for: {names}", path=source, names=_listed(extra))
        )
    wrong = [
        tr(
            "{name}: {found} in the file, {expected} expected",
            name=k,
            found=_shape(shapes[k]),
            expected=_shape(v),
        )
        for k, v in expected.items()
        if tuple(shapes[k]) != tuple(v)
    ]
    if wrong:
        raise CheckpointError(
            tr(
                "{path} does not match {config}: {problems}",
                path=source,
                config=CONFIG_FILE,
                problems=_listed(wrong, "; "),
            )
        )


def _check_float(state: Mapping[str, torch.Tensor], source: Path) -> None:
    not_float = [k for k, v in state.items() if not v.is_floating_point()]
    if not_float:
        raise CheckpointError(
            tr("{path}: tensors {names} are not floating point", path=source, names=_listed(not_float))
        )

"""One typed view state: what the user chose, on every page, in one object.

`ViewState` holds the text, the model settings, the chosen layer / head / query token, and one
namespace per page for that page's own choices (the class its registry entry names,
`tformer.ui.registry.PageSpec.state`). The app keeps one per browser session
(`tformer.ui.binding`), restores each widget from it before drawing, and writes a widget's new
value back in its on_change callback, so choices survive page switches.

Every page's state class lives here, not in its view module: the view state holds every page's
namespace on every page (a share link carries them all), and this module loads no torch and no
Streamlit, while the views do.

It converts to and from flat URL query parameters (``to_query`` / ``from_query``): the keys are
the widget keys (``text``, ``n_heads``, ``layer``, ``attention.kind``...). Reading never trusts
the URL: each value is parsed by its field's type and checked against its bounds or choices;
anything else falls back to the default with a notice. No Streamlit here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..figures.colors import WEIGHT_SCALES
from ..i18n import LANGUAGES, tr, use_language
from ..model.config import NORMS, POS_ENCODINGS
from ..resources import examples
from .progress import QUIZ_CHARS, QUIZ_PATTERN

MAX_CHARS = 20_000  # the text box refuses more; the tokenizer keeps at most max_len tokens anyway
MAX_LIST = 12  # longest list a multiselect keeps
SOURCES = ("minilm", "scratch", "local", "run", "folder")  # folder: a model of TFORMER_MODELS_DIR
RUN_NAME = r"[A-Za-z0-9_-]{1,64}"
# A models-folder entry's name in a link: letters of any script, digits, . _ + -; it is only ever
# compared with the names `find_models` lists, never used as a path.
MODEL_NAME = r"[\w.+-]{1,100}"
HEAD_NAME = r"L\d{1,2}H\d{1,2}"


# The number of heads a model may have, wherever heads are counted (the sidebar's encoder,
# the comparison's model B, the cost model): one range, so the widgets cannot disagree.
HEADS = (1, 32)


def _bounded(default: Any, lo: int, hi: int, step: int | None = None) -> Any:
    """An integer field allowed in ``lo..hi``; ``step`` is the step of its widget's arrows
    (the widget reads all three, `tformer.ui.binding.bind_number`; values between steps are
    still allowed, as a link may carry them)."""
    meta = {"min": lo, "max": hi} if step is None else {"min": lo, "max": hi, "step": step}
    return field(default=default, metadata=meta)


def _one_of(default: Any, choices: tuple[Any, ...]) -> Any:
    return field(default=default, metadata={"choices": choices})


def _items_of(choices: tuple[Any, ...]) -> dict[str, Any]:
    """A list field's metadata: its items are ``choices`` (a multiselect's options), each at most once."""
    return {"choices": choices, "max_items": len(choices)}


# --- each page's own choices ------------------------------------------------------------------


@dataclass
class AttentionState:
    kind: str = _one_of("pattern", ("pattern", "attn_scores"))


@dataclass
class QKVState:
    kind: str = _one_of("attn_scores", ("attn_scores", "pattern"))


@dataclass
class PositionalState:
    section: str = _one_of("table", ("table", "offsets", "rotation", "learned", "without"))
    n_pos: int = _bounded(128, 8, 4096)
    dims: list[int] | None = field(default=None, metadata={"min": 0, "max": 4095})  # None: defaults
    pos: int = _bounded(3, 0, 10_000)
    k: int = _bounded(5, -1000, 1000)


@dataclass
class HeadsState:
    section: str = _one_of("compare", ("compare", "numbers", "likeness", "ablation"))
    compare: list[str] | None = field(default=None, metadata={"pattern": HEAD_NAME})
    metric: str = "entropy"
    ablate: list[str] | None = field(default=None, metadata={"pattern": HEAD_NAME})


STEP_KEY = r"[a-z_0-9]{1,24}"


@dataclass
class StepsState:
    section: str = _one_of("walk", ("walk", "neuron", "layouts"))
    step: str = field(default="q", metadata={"pattern": STEP_KEY})  # a `walkthrough.Step` key
    zoom: str = _one_of("window", ("window", "all"))  # 16 rows and columns with numbers, or all
    dim: int = _bounded(0, 0, 8191)  # the first dimension shown in the window
    key: int | None = _bounded(None, 0, 4095)  # neuron view's key token; None: the most attended


@dataclass
class EncoderState:
    section: str = _one_of("architecture", ("architecture", "ffn", "residual", "layernorm"))
    norm: str = _one_of("ln1", ("ln1", "ln2"))  # which LayerNorm of the layer


@dataclass
class CompareState:
    what: str = _one_of("text", ("text", "positions", "heads", "norm", "causal", "model"))
    text_b: str = field(default="The dog chased the ball across the park.", metadata={"max_chars": 2000})
    n_heads_b: int = _bounded(8, *HEADS)


TAUS = ("0.1", "0.25", "0.5", "1", "2", "4", "10")


@dataclass
class ScalingState:
    tau: str = _one_of("1", TAUS)  # the temperature the logits are divided by
    scaled: bool = True  # divide by √d_k


@dataclass
class MasksState:
    kind: str = _one_of("causal", ("none", "padding", "causal", "window", "custom"))
    window: int = _bounded(2, 1, 64)
    spec: str = field(default="3:5, 6:*", metadata={"max_chars": 400})
    text_b: str = field(default="A short one.", metadata={"max_chars": 2000})


@dataclass
class LayersState:
    combine: str = _one_of("head", ("head", "mean", "max", "rollout"))
    size: int = _bounded(32, 8, 128)  # the zoom window's side (long texts)
    q0: int = _bounded(0, 0, 4095)  # its first query and key
    k0: int = _bounded(0, 0, 4095)
    find: str = field(default="", metadata={"max_chars": 60})


@dataclass
class QKSpaceState:
    translate: bool = False  # keys moved onto the queries' mean
    pairs: int = _bounded(8, 0, 30)


# The head finder's roles, in its order (`tformer.analysis.head_roles.ROLES`; a test holds them equal).
ROLES = ("previous", "next", "self", "cls", "duplicate", "antidiagonal", "broad")


@dataclass
class FinderState:
    role: str = _one_of("previous", ROLES)
    over: str = _one_of("text", ("text", "examples"))


@dataclass
class TrainState:
    section: str = _one_of("train", ("train", "heads", "memory", "compare", "overfit", "precision"))
    # the task
    task: str = _one_of("reverse", ("copy", "reverse", "sort", "shift", "lookup"))
    length: int = _bounded(16, 4, 64)
    vocab: int = _bounded(16, 2, 52)
    shift: int = _bounded(1, 1, 63)
    held_out: str = _one_of("0.2", ("0.1", "0.2", "0.3"))
    # the model (the same controls as the sidebar's from-scratch encoder; sized for training)
    n_layers: int = _bounded(2, 1, 6)
    n_heads: int = _bounded(4, 1, 16)
    d_model: int = _bounded(64, 8, 256, step=8)
    d_ff: int | None = _bounded(None, 8, 1024)
    pos_encoding: str = _one_of("sinusoidal", POS_ENCODINGS)
    norm: str = _one_of("pre", NORMS)
    # the recipe (floats as a short list of choices each)
    optimizer: str = _one_of("adamw", ("adamw", "adam"))
    lr: str = _one_of("7e-3", ("1e-4", "3e-4", "1e-3", "3e-3", "7e-3", "1e-2", "3e-2", "1"))
    beta1: str = _one_of("0.9", ("0.8", "0.9", "0.95"))
    beta2: str = _one_of("0.99", ("0.98", "0.99", "0.999"))
    eps: str = _one_of("1e-9", ("1e-9", "1e-8", "1e-6"))
    weight_decay: str = _one_of("0.01", ("0", "0.01", "0.1"))
    schedule: str = _one_of("noam", ("noam", "constant"))
    warmup: int = _bounded(50, 0, 2000)
    clip: str = _one_of("1", ("0", "0.5", "1", "5"))
    label_smoothing: str = _one_of("0", ("0", "0.05", "0.1", "0.2"))
    dropout: str = _one_of("0", ("0", "0.1", "0.2", "0.3"))
    batch: int = _bounded(64, 8, 512, step=8)
    accum: int = _bounded(1, 1, 8)
    steps: int = _bounded(2000, 10, 20_000, step=100)
    snapshot_every: int = _bounded(5, 1, 500)
    stop_at_99: bool = True
    snapshot: int = _bounded(0, 0, 100_000)  # the snapshot slider's position (-> its step)
    # a run for a class (`tformer.training.presets.PRESETS`; "" = the settings as they are) and
    # the saved run whose role timeline is shown (issue 26)
    preset: str = _one_of("", ("", "reverse", "shift"))
    roles_run: str | None = field(default=None, metadata={"pattern": RUN_NAME})
    # the role a timeline colours the heads by ("auto": the strongest at the end): the timeline of
    # the run training now, and that of the saved run shown
    role: str = _one_of("auto", ("auto", *ROLES))
    saved_role: str = _one_of("auto", ("auto", *ROLES))
    # compare runs: the saved runs overlaid, the run a comparison starts from, the updates the
    # loss and gradient norm are averaged over
    runs: list[str] | None = field(default=None, metadata={"pattern": RUN_NAME, "max_items": 4})
    base: str | None = field(default=None, metadata={"pattern": RUN_NAME})
    smooth: str = _one_of("10", ("1", "5", "10", "25", "50"))
    # memory of a step: the lengths and layer counts the checkpointing sweep measures (each
    # shape is checked against the memory and time budgets before it is built)
    memory_lengths: list[int] = field(
        default_factory=lambda: [32, 64], metadata=_items_of((16, 32, 64, 128, 256, 512))
    )
    memory_layers: list[int] = field(default_factory=lambda: [2, 4], metadata=_items_of((1, 2, 3, 4, 6, 8)))
    # heads and overfitting: the grid's task and how many seeds train it
    overfit_task: str = _one_of("reverse", ("copy", "reverse", "sort", "shift", "lookup"))
    overfit_seeds: int = _bounded(3, 1, 5)


@dataclass
class CostsState:  # pages/costs.py (issue 14); fields are the page's own choices
    section: str = _one_of("wall", ("wall", "rnn", "sparse"))
    n_heads: int = _bounded(12, *HEADS)  # MiniLM's 12 heads of 32 dimensions, d_model 384
    d_head: int = _bounded(32, 8, 256)
    d_model: int = _bounded(384, 16, 1024)  # the GRU's and the attention layer's width
    n_max: int = _bounded(16384, 64, 65536)  # the longest length tried (a budget stops most earlier)
    call_ms: int = _bounded(250, 10, 5000)  # time budget per call
    memory: str = _one_of("auto", ("auto", "64", "256", "1024", "4096"))  # MiB; auto: min(1 GiB, free/4)
    dtype: str = _one_of("auto", ("auto", "float32", "float16", "bfloat16"))  # auto: float16 on CUDA
    window: int = _bounded(2, 0, 64)  # the local window's w on the text
    stride: int = _bounded(4, 1, 64)  # the strided pattern's s on the text


@dataclass
class FlashState:  # pages/flash.py (issue 14)
    step: int = _bounded(0, 0, 1_000_000)  # the tiled loop's step shown
    # rows of a query tile and of a key tile (the page offers `flash.TILE_SIDES`); 0: sized for
    # the text's length (`flash.auto_tile`: at most 64 steps), so 16 tokens step over 4 x 4
    # tiles and 472 over 64 x 64. The page counts `step` from 1 (0 shows step 1).
    block_q: int = _bounded(0, 0, 512)
    block_k: int = _bounded(0, 0, 512)


@dataclass
class PrecisionState:  # pages/precision.py (issue 14)
    # the lower-precision copy compared with float32 (`tformer.efficiency.precision.VARIANTS`)
    variant: str = _one_of("bfloat16", ("bfloat16", "float16", "int8", "int8_channel"))
    metric: str = _one_of("changed", ("changed", "max_diff"))  # what the layer x head map shows


WHY_SCALES = ("0.5", "0.75", "0.9", "1", "1.25", "1.5", "2", "3")  # recurrent weight scales s


@dataclass
class WhyState:  # pages/why.py (issue 25)
    section: str = _one_of("steps", ("steps", "gradients", "recall"))
    step: int = _bounded(4, 1, 4096)  # the recurrent layers' step shown (clamped to the text's length)
    scale: str = _one_of("1", WHY_SCALES)  # W_hh = s * an orthogonal matrix: its spectral radius
    bound: bool = True  # the tanh RNN's bound s^(n-i) ||W_ih|| drawn dotted
    protocol: str = _one_of("separate", ("separate", "mixed"))  # recall: one model per distance, or one
    seed: int = _bounded(0, 0, 9999)  # recall: the weights' and the batches' seed
    distance: int = _bounded(128, 2, 511)  # recall: the distance whose look-back is shown


TEMPERATURES = ("0.1", "0.25", "0.5", "0.75", "1", "1.5", "2", "4", "10")


@dataclass
class PredictionsState:  # pages/predictions.py: the seeds' "Linear -> Softmax -> Output"
    position: int | None = _bounded(None, 0, 4095)  # None: the last token, or the first [MASK]
    temperature: str = _one_of("1", TEMPERATURES)  # the logits are divided by it
    k: int = _bounded(10, 1, 30)  # the top tokens drawn
    n_new: int = _bounded(5, 1, 32)  # tokens a causal LM generates greedily (predictions.MAX_NEW_TOKENS)


@dataclass
class ExportState:
    heads: list[str] | None = field(default=None, metadata={"pattern": HEAD_NAME})  # None: the chosen head


def page_namespaces() -> dict[str, Any]:
    """One default instance of each page's state, by registry key: the registry names each page's
    state class (`tformer.ui.registry.PageSpec.state`); imported here on use, as the registry
    imports this module's classes."""
    from .registry import page_states

    return {key: cls() for key, cls in page_states().items()}


def default_text() -> str:
    return str(examples()[0]["text"])


@dataclass
class ViewState:
    text: str = field(default_factory=default_text, metadata={"max_chars": MAX_CHARS})
    lang: str = _one_of("en", tuple(LANGUAGES))  # the interface's language (tformer.i18n)
    lesson: str | None = field(default=None, metadata={"pattern": r"[a-z0-9-]{1,40}"})  # lesson mode
    lesson_step: int = _bounded(0, 0, 99)  # the lesson's step shown (0-based)
    # the lesson's questions answered so far (`tformer.ui.progress`: "0r0:7,3w2:0.5,4s0")
    quiz: str = field(default="", metadata={"pattern": QUIZ_PATTERN, "max_chars": QUIZ_CHARS})
    # the model: the pretrained MiniLM, a from-scratch encoder of this shape, or a local folder
    source: str = _one_of("minilm", SOURCES)
    run: str | None = field(default=None, metadata={"pattern": RUN_NAME})  # a trained run's name
    model: str | None = field(default=None, metadata={"pattern": MODEL_NAME})  # a models-folder entry
    n_layers: int = _bounded(2, 1, 12)
    n_heads: int = _bounded(4, *HEADS)
    d_model: int = _bounded(64, 2, 1024, step=2)
    d_ff: int | None = _bounded(None, 1, 8192)  # None: 4 x d_model
    pos_encoding: str = _one_of("sinusoidal", POS_ENCODINGS)
    norm: str = _one_of("post", NORMS)
    causal: bool = False
    seed: int = _bounded(0, 0, 2**31 - 1)
    # what is looked at, on every page (clamped to the model's shape where used); layer and
    # head None: not chosen yet, so pages open on a head that shows something (ui.opening)
    layer: int | None = _bounded(None, 0, 63)
    head: int | None = _bounded(None, 0, 63)
    query: int = _bounded(0, 0, 4095)
    # how attention weights become colors on the heatmaps that offer the choice (figures.colors)
    weight_scale: str = _one_of("linear", WEIGHT_SCALES)
    pages: dict[str, Any] = field(default_factory=page_namespaces)

    # --- typed access ---

    def page(self, cls: type[T]) -> T:
        """The namespace of one page: ``view.page(AttentionState).kind``."""
        for value in self.pages.values():
            if isinstance(value, cls):
                return value
        raise KeyError(f"no page state of type {cls.__name__}")

    def get(self, key: str) -> Any:
        owner, name = self._owner(key)
        return getattr(owner, name)

    def set(self, key: str, value: Any) -> None:
        """Set one value by its widget key, validated; raises ValueError for a bad value."""
        owner, name = self._owner(key)
        spec = _field(type(owner), name)
        setattr(owner, name, _check(spec, _hint(type(owner), name), value, key))

    def choices(self, key: str) -> tuple[Any, ...]:
        """The values a choice field allows, in order."""
        owner, name = self._owner(key)
        return tuple(_field(type(owner), name).metadata["choices"])

    def bounds(self, key: str) -> tuple[int, int]:
        """The smallest and largest value an integer field allows."""
        owner, name = self._owner(key)
        meta = _field(type(owner), name).metadata
        return int(meta["min"]), int(meta["max"])

    def max_items(self, key: str) -> int:
        """The most items a list field keeps (its widget's ``max_selections``)."""
        owner, name = self._owner(key)
        return int(_field(type(owner), name).metadata.get("max_items", MAX_LIST))

    def step(self, key: str) -> int | None:
        """The step of an integer field's widget, None where it declares none (Streamlit's 1)."""
        owner, name = self._owner(key)
        step = _field(type(owner), name).metadata.get("step")
        return None if step is None else int(step)

    def default(self, key: str) -> Any:
        owner, name = self._owner(key)
        return getattr(type(owner)(), name)

    def keys(self) -> list[str]:
        """Every settable key: top-level fields, then "<page>.<field>"."""
        top = [f.name for f in dataclasses.fields(self) if f.name != "pages"]
        return top + [f"{p}.{f.name}" for p, v in self.pages.items() for f in dataclasses.fields(v)]

    def _owner(self, key: str) -> tuple[Any, str]:
        page, _, name = key.rpartition(".")
        owner: Any = self.pages.get(page) if page else self
        cls: type = type(owner)
        if owner is None or name == "pages" or name not in _fields(cls):
            raise KeyError(f"no view setting {key!r}")
        return owner, name

    # --- URL query parameters ---

    def to_query(self) -> dict[str, str]:
        """Flat query parameters of every value that differs from its default."""
        base = ViewState(text="")
        out = {}
        for key in self.keys():
            value = self.get(key)
            if (key == "text" or value != base.get(key)) and value is not None:
                out[key] = _format(value)
        return out

    @classmethod
    def from_query(cls, params: typing.Mapping[str, str | list[str]]) -> tuple[ViewState, list[str]]:
        """A view from query parameters, and one notice per value that was ignored. Keys and
        values an older link spells another way (`RENAMED_KEYS`, `RENAMED_VALUES`) are read
        under their current names."""
        params = current_names(params)
        view, notices = cls(), []
        known = set(view.keys())
        raw_lang = params.get("lang")  # the notices speak the link's language
        lang = raw_lang[-1] if isinstance(raw_lang, list) and raw_lang else raw_lang
        with use_language(lang) if isinstance(lang, str) and lang in LANGUAGES else contextlib.nullcontext():
            for key, raw in params.items():
                text = raw[-1] if isinstance(raw, list) else raw
                if key not in known:
                    notices.append(tr("ignored the unknown setting {key}", key=_short(key)))
                    continue
                owner, name = view._owner(key)
                try:
                    view.set(key, _parse(_hint(type(owner), name), text))
                except ValueError as err:
                    notices.append(tr("ignored {key}: {err}", key=key, err=err))
        return view, notices


# Names a setting or a value had in links made before it was renamed (one name per concept):
# such a link still opens the same view. An old key never wins over its new one.
RENAMED_KEYS: dict[str, str] = {
    "costs.heads": "costs.n_heads",  # a count of heads is n_heads everywhere
    "compare.heads_b": "compare.n_heads_b",
}
RENAMED_VALUES: dict[str, dict[str, str]] = {
    "heads.metric": {"prev": "previous"},  # the previous token is "previous" everywhere
    "finder.role": {"first": "cls"},  # the role measures p[q, cls_pos], the metric "cls"
}


def current_names(params: typing.Mapping[str, str | list[str]]) -> dict[str, str | list[str]]:
    """``params`` with every renamed key and value (`RENAMED_KEYS`, `RENAMED_VALUES`) under its
    current name."""
    out = {k: v for k, v in params.items() if k not in RENAMED_KEYS}
    for old, new in RENAMED_KEYS.items():
        if old in params and new not in params:
            out[new] = params[old]
    for key, values in RENAMED_VALUES.items():
        raw = out.get(key)
        if isinstance(raw, str):
            out[key] = values.get(raw, raw)
        elif isinstance(raw, list):
            out[key] = [values.get(r, r) for r in raw]
    return out


# The settings whose range is the model's shape (layers, heads, the text's tokens): a link may
# ask for more than the model has, and is then clamped to the model when it is known.
SHAPED = ("layer", "head", "query")


def shaped_asks(
    params: typing.Mapping[str, str | list[str]],
) -> tuple[dict[str, str | list[str]], dict[str, int]]:
    """``params`` with every model-shaped value (`SHAPED`) that is a whole number above its
    field's bound lowered to that bound, and what each of them asked for.

    A link made on a bigger model (layer 9 of a 12-layer BERT) or by hand (layer 99) is then
    no error: the view keeps the largest value it allows, and the page that knows the model
    clamps it to the model's shape and names what was asked (`tformer.ui.context`). Negative
    numbers and text are left to `ViewState.from_query`, which ignores them with a notice.
    """
    out = dict(params)
    asked: dict[str, int] = {}
    for key in SHAPED:
        raw = params.get(key)
        text = raw[-1] if isinstance(raw, list) and raw else raw
        if not isinstance(text, str) or not text.strip().isdigit() or len(text.strip()) > 12:
            continue
        value = int(text)
        asked[key] = value
        bound = ViewState().bounds(key)[1]
        if value > bound:
            out[key] = str(bound)
    return out, asked


T = TypeVar("T")


def _field(cls: type, name: str) -> dataclasses.Field[Any]:
    return _fields(cls)[name]


def _hint(cls: type, name: str) -> Any:
    return _hints(cls)[name]


@functools.cache
def _fields(cls: type) -> dict[str, dataclasses.Field[Any]]:
    return {f.name: f for f in dataclasses.fields(cls)}


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _short(value: str, n: int = 40) -> str:
    return repr(value if len(value) <= n else value[:n] + "...")


def _listed(choices: typing.Iterable[Any]) -> str:
    return ", ".join(str(c) for c in choices)


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def _split_optional(hint: Any) -> tuple[Any, bool]:
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        return next(a for a in args if a is not type(None)), True
    return hint, False


def _parse(hint: Any, text: str) -> Any:
    """A query-parameter string as a value of the field's type (ValueError if it is not one)."""
    base, optional = _split_optional(hint)
    if optional and text == "":
        return None
    if base is bool:
        if text not in ("0", "1", "true", "false"):
            raise ValueError(tr("{value} is not 0 or 1", value=_short(text)))
        return text in ("1", "true")
    if base is int:
        return _parse_int(text)
    if typing.get_origin(base) is list:
        (item,) = typing.get_args(base)
        parts = [p for p in text.split(",") if p != ""]
        return [_parse_int(p) if item is int else p for p in parts]
    return text


def _parse_int(text: str) -> int:
    t = text.strip()
    if not t.lstrip("-").isdigit():
        raise ValueError(tr("{value} is not an integer", value=_short(text)))
    if len(t) > 12:
        raise ValueError(tr("{value} is out of range", value=_short(text)))
    return int(t)


def _check(spec: dataclasses.Field[Any], hint: Any, value: Any, key: str) -> Any:
    """``value`` if it fits the field (type, bounds, choices, length), else ValueError."""
    base, optional = _split_optional(hint)
    meta = spec.metadata
    if value is None:
        if optional:
            return None
        raise ValueError(tr("may not be empty"))
    if base is bool:
        if not isinstance(value, bool):
            raise ValueError(tr("{value} is not true or false", value=_short(str(value))))
        return value
    if base is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(tr("{value} is not an integer", value=_short(str(value))))
        if not meta.get("min", value) <= value <= meta.get("max", value):
            raise ValueError(tr("{value} is outside {lo}..{hi}", value=value, lo=meta["min"], hi=meta["max"]))
        return value
    if typing.get_origin(base) is list:
        most = meta.get("max_items", MAX_LIST)
        if not isinstance(value, (list, tuple)) or len(value) > most:
            raise ValueError(tr("expected at most {n} items", n=most))
        (item,) = typing.get_args(base)
        for v in value:
            if item is int and (
                isinstance(v, bool)
                or not isinstance(v, int)
                or not meta.get("min", v) <= v <= meta.get("max", v)
            ):
                raise ValueError(tr("{value} is not an allowed number", value=_short(str(v))))
            if item is str and (not isinstance(v, str) or not re.fullmatch(meta.get("pattern", ".*"), v)):
                raise ValueError(tr("{value} is not an allowed name", value=_short(str(v))))
            if "choices" in meta and v not in meta["choices"]:
                raise ValueError(
                    tr(
                        "{value} is not one of {choices}",
                        value=_short(str(v)),
                        choices=_listed(meta["choices"]),
                    )
                )
        if "choices" in meta and len(set(value)) < len(value):
            raise ValueError(tr("an item is repeated"))
        return list(value)
    if not isinstance(value, str):
        raise ValueError(tr("{value} is not text", value=_short(str(value))))
    if "choices" in meta and value not in meta["choices"]:
        raise ValueError(
            tr("{value} is not one of {choices}", value=_short(value), choices=", ".join(meta["choices"]))
        )
    if "pattern" in meta and not re.fullmatch(meta["pattern"], value):
        raise ValueError(tr("{value} is not an allowed name", value=_short(value)))
    if len(value) > meta.get("max_chars", 200):
        raise ValueError(tr("the text is longer than {n} characters", n=meta.get("max_chars", 200)))
    return value

"""Every page of the app, declared once: the navigation, the start page's map, the state
namespaces and the test suites all loop over `PAGES`.

Adding a page (docs/adding-a-page.md): its `PageSpec` here, naming its state dataclass of
`tformer.ui.state` (``state=``) when it has choices of its own; the thin script
``pages/<url_path>.py``; its view ``tformer/ui/views/<key>.py`` (cached compute, widget helpers);
its test ``tests/test_app_<key>.py``; its Chinese strings ``assets/i18n/zh/<key>.json``.
tests/test_rooms_of_pages.py names whichever piece a registered page lacks.

Why the scripts live in pages/ and no `st.navigation` is used: Streamlit serves pages/*.py by
itself (its "pages directory" mode) to a fresh server's first visitor who opens /qkv before
anyone opened "/". Mixing that mode with `st.navigation` ran such a visitor's page without the
app's frame. In the pages-directory mode alone every page script draws the frame itself
(`tformer.ui.frame`), so a direct link gives the full app on any server, fresh or not; the
built-in page list is hidden (``client.showSidebarNavigation = false``) and the sidebar draws
this registry's sections with `st.page_link` instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from .state import (
    AttentionState,
    CompareState,
    CostsState,
    EncoderState,
    ExportState,
    FinderState,
    FlashState,
    HeadsState,
    LayersState,
    MasksState,
    PositionalState,
    PrecisionState,
    PredictionsState,
    QKSpaceState,
    QKVState,
    ScalingState,
    StepsState,
    TrainState,
    WhyState,
)

# The most tokens a page that caps the length shows: MiniLM's own limit, where every page is
# measured against its budget (benchmarks/latency.py). The from-scratch encoder reads 2,048; the
# pages whose work or drawing grows per token past a rerun's budget show the text's first 512.
CAPPED_TOKENS = 512

# Sections in the order of the lesson.
SECTIONS = (
    "Start",
    "Attention",
    "Multi-head",
    "Positions",
    "Encoder",
    "Training",
    "Efficiency",
    "Experiments",
    "Classroom",
)


@dataclass(frozen=True)
class PageSpec:
    key: str  # the page's namespace in the view state and in share links
    title: str  # navigation label and browser tab title
    heading: str  # the page's own header
    icon: str  # an emoji; a Material icon as the tab icon would be fetched from an internet host
    section: str
    script: str  # relative to the repo root: "app.py" for the start page, else "pages/<name>.py"
    summary: str  # one line on the start page's map
    needs_text: bool = True  # False: the page draws without a text (start, training, efficiency)
    # the dataclass of the page's own choices (`tformer.ui.state`), its namespace ``key`` in the
    # view state and in share links; None: the page has no choices of its own
    state: type | None = None
    # False: a live class's students do not follow their teacher onto this page (the room's own
    # page: its QR code and answers are the teacher's, `tformer.ui.room`)
    followed: bool = True
    # the most tokens the page shows (None: as many as the model reads) and why, an English
    # template completing "This page shows the first 512 of the text's 2,048 tokens: ...": a page
    # whose work or drawing grows past a rerun's budget with the text shows its first tokens
    max_tokens: int | None = None
    max_tokens_why: str = ""

    @property
    def url_path(self) -> str:
        """The URL path Streamlit serves the page at: "" for app.py, else the file's name
        (pages-directory mode takes it from the file name; keep names free of number prefixes)."""
        path = PurePosixPath(self.script)
        return "" if path.parent == PurePosixPath(".") else path.stem


PAGES: tuple[PageSpec, ...] = (
    PageSpec(
        "home",
        "Start",
        "tformer: what attention computes, on your own sentence",
        "🏠",
        "Start",
        "app.py",
        "What this app shows and where to begin.",
        needs_text=False,
    ),
    PageSpec(
        "why",
        "Why attention",
        "Why attention: an RNN's steps against attention's one",
        "🔁",
        "Attention",
        "pages/why.py",
        "A tanh RNN and a GRU step through your text one token at a time; attention computes every "
        "position at once: steps, time, gradients over distance, and a long-range recall trained here.",
        state=WhyState,
        max_tokens=CAPPED_TOKENS,
        max_tokens_why=(
            "its RNNs step through the text one token at a time, and its charts have a column "
            "for every token."
        ),
    ),
    PageSpec(
        "attention",
        "Attention",
        "Attention: who looks at whom",
        "🔥",
        "Attention",
        "pages/attention.py",
        "One head's weights in detail, and every head of every layer at a glance.",
        state=AttentionState,
    ),
    PageSpec(
        "qkv",
        "Q, K, V",
        "Q, K, V: where the scores come from",
        "🧮",
        "Attention",
        "pages/qkv.py",
        "The chosen head's queries, keys and values beside the scores they make.",
        state=QKVState,
        max_tokens=CAPPED_TOKENS,
        max_tokens_why=(
            "its Q, K, V and output panels have a row for every token: at {n:,} tokens several rows "
            "would share each pixel, and every row is sent in full."
        ),
    ),
    PageSpec(
        "qk_space",
        "Query/key space",
        "Query/key space: where a head's queries and keys lie",
        "🎯",
        "Attention",
        "pages/qk_space.py",
        "One head's queries and keys in one plane, with lines for the pairs that attend most.",
        state=QKSpaceState,
        max_tokens=CAPPED_TOKENS,
        max_tokens_why=(
            "it draws every query and every key as a point with its own hover text: 2 × {n:,} points "
            "at this length."
        ),
    ),
    PageSpec(
        "scaling",
        "Why √d_k",
        "Why divide by √d_k",
        "🌡️",
        "Attention",
        "pages/scaling.py",
        "The head under a temperature and without the scaling, and a sweep over d_k computed live.",
        state=ScalingState,
        max_tokens=CAPPED_TOKENS,
        max_tokens_why=(
            "its entropy chart has a bar for every query under each setting: 2 × {n:,} bars at this length."
        ),
    ),
    PageSpec(
        "masks",
        "Masks",
        "Masks: who may attend to whom",
        "🎭",
        "Attention",
        "pages/masks.py",
        "Padding, causal, a local window or blocked cells, through the encoder's own mask.",
        state=MasksState,
        max_tokens=CAPPED_TOKENS,
        max_tokens_why=(
            "every change runs the model again under the mask, beside the run without it, and draws both."
        ),
    ),
    PageSpec(
        "heads",
        "Heads compared",
        "Heads compared",
        "👥",
        "Multi-head",
        "pages/heads.py",
        "Heads side by side, a number for each head, their likeness, ablation.",
        state=HeadsState,
    ),
    PageSpec(
        "finder",
        "Head finder",
        "Head finder: heads by what they do",
        "🔎",
        "Multi-head",
        "pages/finder.py",
        "Previous-token, next-token, [CLS], duplicate-token and broad heads, ranked; click to open one.",
        state=FinderState,
        max_tokens=CAPPED_TOKENS,
        max_tokens_why=(
            "it scores every head on six roles, each a pass over every head's whole weight matrix."
        ),
    ),
    PageSpec(
        "layers",
        "Across layers",
        "Across layers: heads combined, attention rollout",
        "🧱",
        "Multi-head",
        "pages/layers.py",
        "One head, the mean or max over heads, or the rollout through the layers; zoom into long texts.",
        state=LayersState,
    ),
    PageSpec(
        "positional",
        "Positional encoding",
        "Positional encoding: how the model knows word order",
        "〰️",
        "Positions",
        "pages/positional.py",
        "The sinusoid table, offsets as rotations, attention with positions switched off.",
        state=PositionalState,
    ),
    PageSpec(
        "steps",
        "Step by step",
        "Step by step: one layer, one head, one token",
        "👣",
        "Encoder",
        "pages/steps.py",
        "Every step of a layer on your text, in order: formula, live numbers, the code; one score "
        "dimension by dimension; the seeds' two ways to write attention.",
        state=StepsState,
        max_tokens=CAPPED_TOKENS,
        max_tokens_why=(
            "it walks one token through a layer, and its token list and tables hold every token."
        ),
    ),
    PageSpec(
        "encoder",
        "The whole encoder",
        "The whole encoder: its parts, FFN, residual stream and LayerNorm",
        "🏗️",
        "Encoder",
        "pages/encoder.py",
        "The model drawn with its real shapes and parameter counts; what the FFN, the residual "
        "connections and LayerNorm do to your text, layer by layer.",
        state=EncoderState,
    ),
    PageSpec(
        "predictions",
        "Linear → Softmax → Output",
        "Linear → Softmax → Output: what the model predicts",
        "🔮",
        "Encoder",
        "pages/predictions.py",
        "The last step of the architecture: the last hidden state, its logits, the softmax at a "
        "temperature and the top tokens; GPT-2's next token and a short greedy generation.",
        state=PredictionsState,
    ),
    PageSpec(
        "train",
        "Train a model",
        "Train a small encoder and watch its heads form",
        "🏋️",
        "Training",
        "pages/train.py",
        "Copy, reverse, sort, shift or look up: Adam with warm-up, clipping, label smoothing, dropout, "
        "accumulation; live curves and attention snapshots; the trained model opens on every page.",
        needs_text=False,
        state=TrainState,
    ),
    PageSpec(
        "costs",
        "What attention costs",
        "What attention costs: the n² wall, measured on this device",
        "📈",
        "Efficiency",
        "pages/costs.py",
        "Time and memory against length for explicit attention, each SDPA backend and a tiled loop; "
        "attention against a GRU; local and strided masks.",
        needs_text=False,
        state=CostsState,
    ),
    PageSpec(
        "flash",
        "FlashAttention, stepped",
        "FlashAttention: the tiled online softmax, block by block",
        "⚡",
        "Efficiency",
        "pages/flash.py",
        "Your text's head computed tile by tile: the running maximum, the running sum, the rescaling, "
        "and never the whole n × n matrix.",
        state=FlashState,
        max_tokens=CAPPED_TOKENS,
        max_tokens_why="it steps the tiled loop over the whole score matrix and draws every tile.",
    ),
    PageSpec(
        "precision",
        "Precision and INT8",
        "Precision: float32, bfloat16, float16 and INT8 on your text",
        "🎚️",
        "Efficiency",
        "pages/precision.py",
        "MiniLM in lower precision and with INT8 Linear layers: time, size, and how much the "
        "attention moves.",
        state=PrecisionState,
        max_tokens=CAPPED_TOKENS,
        max_tokens_why="it runs the model in every format it compares, on this text.",
    ),
    PageSpec(
        "compare",
        "Side by side",
        "Side by side: change one thing and compare",
        "⚖️",
        "Experiments",
        "pages/compare.py",
        "The same head under two settings or for two texts: positions off, more heads, pre-norm, "
        "a causal mask, another model; and where the weights moved.",
        state=CompareState,
    ),
    PageSpec(
        "classroom",
        "Live class",
        "Live class: teach a room, or join your teacher's",
        "🎓",
        "Classroom",
        "pages/classroom.py",
        "Open a room for your class (a join code, its link and QR code), or join one: students follow "
        "the teacher's screen on their own devices and answer the lesson's questions live.",
        needs_text=False,
        followed=False,
    ),
    PageSpec(
        "export",
        "Export and report",
        "Export: an offline report, the tensors, the figures",
        "📦",
        "Classroom",
        "pages/export.py",
        "One HTML report that opens without a network; the tensors as NPZ, the metrics as CSV; every "
        "chart as PNG or SVG.",
        state=ExportState,
        max_tokens=CAPPED_TOKENS,
        max_tokens_why=(
            "its report and files carry every head's weights, and at {n:,} tokens a head has {n:,}² of them."
        ),
    ),
)


def page_for(script: str) -> PageSpec:
    """The spec of a running page script (pass ``__file__``)."""
    path = PurePosixPath(str(script).replace("\\", "/"))
    for spec in PAGES:
        if path.parts[-len(PurePosixPath(spec.script).parts) :] == PurePosixPath(spec.script).parts:
            return spec
    raise KeyError(f"{script} is not in tformer.ui.registry.PAGES")


def page_states() -> dict[str, type]:
    """Registry key -> the dataclass of that page's choices, for the pages that have one."""
    return {p.key: p.state for p in PAGES if p.state is not None}


def by_section() -> list[tuple[str, list[PageSpec]]]:
    return [(s, [p for p in PAGES if p.section == s]) for s in SECTIONS if any(p.section == s for p in PAGES)]


@dataclass(frozen=True)
class Concept:
    title: str
    summary: str
    pages: tuple[str, ...]  # registry keys, the first is where the concept starts


# The lesson of the seed documents, in their order, each concept with the pages that show it.
LESSON_MAP: tuple[Concept, ...] = (
    Concept(
        "Why attention",
        "An RNN steps through a sentence one token at a time; attention links any two positions at once.",
        ("why", "attention", "costs"),
    ),
    Concept("Q, K, V", "Each token is projected into a query, a key and a value.", ("qkv", "qk_space")),
    Concept(
        "Scaled dot product and masks",
        "softmax(QKᵀ/√d_k)V, why the √d_k, and masks that set scores to −∞.",
        ("steps", "scaling", "masks"),
    ),
    Concept(
        "Multi-head attention",
        "More subspaces, each with a smaller d_head; what the heads do, layer by layer.",
        ("heads", "finder", "layers"),
    ),
    Concept(
        "Positional encoding", "How a model that sees all tokens at once knows their order.", ("positional",)
    ),
    Concept("FFN, residual and LayerNorm", "The rest of a block, on your text.", ("encoder",)),
    Concept(
        "The whole encoder",
        "Every step of a layer in order, the model drawn with its shapes, and what its output head predicts.",
        ("steps", "encoder", "predictions"),
    ),
    Concept(
        "Training",
        "Adam with warm-up, gradient clipping, label smoothing, dropout and accumulation, live.",
        ("train",),
    ),
    Concept(
        "Running it efficiently",
        "The n² wall, FlashAttention's tiles, lower precision and INT8, sparse attention.",
        ("costs", "flash", "precision"),
    ),
)

"""The architecture diagram: the spec it reads (``architecture_spec``) and ``architecture_figure``."""

from __future__ import annotations

import html
import re

import pytest

from tformer import Encoder
from tformer.analysis.architecture import architecture_spec, parameter_counts
from tformer.figures.architecture import architecture_figure, compact
from tformer.figures.labels import text_px
from tformer.figures.layout import FULL_WIDTH

from ._figures import font_sizes
from ._models import tiny


def spec_of(n_pos: int = 16, **overrides):
    model = Encoder(tiny(**overrides))
    return model, architecture_spec(model.cfg, n_pos, parameter_counts(model))


def by_name(fig) -> dict[str, dict]:
    return {a["name"]: a for a in fig.to_dict()["layout"]["annotations"] if a.get("name")}


def shown_counts(fig) -> dict[str, int]:
    """The parameters each box's column states (all layers), read back from the text."""
    ann, out = by_name(fig), {}
    for key in fig.layout.meta["order"]:
        note = ann.get(f"{key}.params_note")
        main = ann.get(f"{key}.params")
        if note is not None:  # "x 6 = 7,089,408" or "11,720,448"
            out[key] = int(note["text"].split("= ")[-1].replace(",", ""))
        elif main is not None and main["text"].isdigit():  # small counts are written in full
            out[key] = int(main["text"])
    return out


def plain(text: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", text))


# ---------------------------------------------------------------------------------------------
# architecture_spec
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"norm": "pre", "pos_encoding": "learned", "type_vocab_size": 2, "embed_norm": True, "n_outputs": 7},
    ],
)
def test_spec_groups_the_counts_and_they_sum_to_the_models_total(overrides):
    model, spec = spec_of(**overrides)
    assert sum(spec.counts.values()) == spec.total == sum(p.numel() for p in model.parameters())
    d, f = model.cfg.d_model, model.cfg.d_mlp
    assert spec.layer_params("attn") == 4 * d * d + 4 * d
    assert spec.layer_params("mlp") == 2 * d * f + f + d
    assert spec.counts["attn"] == model.cfg.n_layers * spec.layer_params("attn")
    assert len(spec.per_layer) == model.cfg.n_layers
    assert spec.counts["embed"] == model.cfg.vocab_size * d
    assert ("ln_final" in spec.counts) == (model.cfg.norm == "pre")
    assert (spec.d_ff, spec.d_head, spec.n_pos) == (f, model.cfg.d_head, 16)


def test_spec_rejects_a_bad_length_and_a_layer_the_config_lacks():
    model = Encoder(tiny())
    parts = parameter_counts(model)
    with pytest.raises(ValueError, match="n_pos"):
        architecture_spec(model.cfg, 0, parts)
    with pytest.raises(ValueError, match="layer 1"):
        architecture_spec(tiny(n_layers=1), 4, parts)


# ---------------------------------------------------------------------------------------------
# architecture_figure
# ---------------------------------------------------------------------------------------------
TWO_CONFIGS = [
    dict(n_pos=16),
    dict(n_pos=9, n_layers=4, n_heads=6, d_model=48, d_ff=80, activation="gelu", pos_encoding="learned"),
]


@pytest.mark.parametrize("case", TWO_CONFIGS)
def test_architecture_shows_the_shapes_and_counts_of_the_config(case):
    case = dict(case)
    n = case.pop("n_pos")
    model, spec = spec_of(n, **case)
    cfg = model.cfg
    fig = architecture_figure(spec)
    ann = by_name(fig)
    resid = f"[{n} \u00d7 {cfg.d_model}]"
    for key in ("embed", "attn", "ln1", "mlp", "ln2"):
        assert ann[f"{key}.shape"]["text"] == resid
    assert ann["tokens.shape"]["text"] == f"[{n}] token ids"
    assert ann["attn.detail"]["text"] == f"{cfg.n_heads} heads \u00d7 d_head {cfg.d_head}"
    assert f"\u2192 {cfg.d_mlp} \u2192" in ann["mlp.detail"]["text"]
    assert ann["mlp.shape_note"]["text"] == f"inside: [{n} \u00d7 {cfg.d_mlp}]"
    assert ann["attn.shape_note"]["text"] == f"weights: {cfg.n_heads} \u00d7 [{n} \u00d7 {n}]"
    assert plain(ann["n_layers"]["text"]) == f"{cfg.n_layers} \u00d7"
    # block parts: per layer, then times N and the exact sum
    for key in ("attn", "mlp"):
        per = spec.layer_params(key)
        assert ann[f"{key}.params"]["text"] == f"{compact(per)} per layer"
        assert ann[f"{key}.params_note"]["text"] == f"\u00d7 {cfg.n_layers} = {spec.counts[key]:,}"
        assert f"{per:,} parameters per layer" in ann[f"{key}.name"]["hovertext"]
    assert ann["embed.params_note"]["text"] == f"{spec.counts['embed']:,}"
    # the counts shown add up to the total written under them, and to the model's
    meta = fig.layout.meta
    assert sum(meta["counts"].values()) == meta["total"] == sum(p.numel() for p in model.parameters())
    assert ann["total.exact"]["text"] == f"= {spec.total:,}"
    assert sum(shown_counts(fig).values()) == spec.total
    assert shown_counts(fig) == dict(spec.counts)


def test_architecture_follows_edits():
    _, small = spec_of(8, n_layers=2, n_heads=3, d_model=24)
    _, big = spec_of(8, n_layers=5, n_heads=4, d_model=32, d_ff=40)
    a, b = by_name(architecture_figure(small)), by_name(architecture_figure(big))
    assert plain(a["n_layers"]["text"]) == "2 \u00d7"
    assert plain(b["n_layers"]["text"]) == "5 \u00d7"
    assert a["attn.shape"]["text"] == "[8 \u00d7 24]"
    assert b["attn.shape"]["text"] == "[8 \u00d7 32]"
    assert "32 \u2192 40 \u2192 32" in b["mlp.detail"]["text"]
    assert a["total.exact"]["text"] != b["total.exact"]["text"]


def test_pre_and_post_norm_draw_the_norm_on_either_side_of_each_sublayer():
    _, post = spec_of(norm="post")
    _, pre = spec_of(norm="pre")
    fp, fq = architecture_figure(post), architecture_figure(pre)
    order_post, order_pre = fp.layout.meta["order"], fq.layout.meta["order"]
    assert (
        order_post.index("attn") < order_post.index("ln1") < order_post.index("mlp") < order_post.index("ln2")
    )
    assert order_pre.index("ln1") < order_pre.index("attn") < order_pre.index("add1")
    assert (
        order_pre.index("ln2")
        < order_pre.index("mlp")
        < order_pre.index("add2")
        < order_pre.index("ln_final")
    )
    assert "ln_final" not in order_post
    assert "add1" not in order_post
    # drawn bottom to top: y grows with the order
    for fig in (fp, fq):
        boxes, order = fig.layout.meta["boxes"], fig.layout.meta["order"]
        bottoms = [boxes[k][1] for k in order]
        assert bottoms == sorted(bottoms)
    assert by_name(fp)["ln1.name"]["text"] == "<b>add & norm</b>"
    assert by_name(fq)["ln1.name"]["text"] == "<b>LayerNorm</b>"
    # each residual connection returns to the add of its sublayer
    assert {s["name"] for s in fq.layout.shapes if s.name and s.name.startswith("residual")} == {
        "residual.add1",
        "residual.add2",
    }
    assert {s["name"] for s in fp.layout.shapes if s.name and s.name.startswith("residual")} == {
        "residual.ln1",
        "residual.ln2",
    }


def test_architecture_text_stays_inside_its_boxes_and_columns_at_940():
    _, spec = spec_of(
        512,
        pos_encoding="learned",
        type_vocab_size=2,
        embed_norm=True,
        n_outputs=12,
        d_model=384,
        n_heads=12,
        d_ff=1536,
        vocab_size=30522,
        max_len=512,
    )
    fig = architecture_figure(spec, width=FULL_WIDTH)
    meta = fig.layout.meta
    assert meta["fits"]
    assert not meta["narrow"]
    assert meta["fonts"][0] == 15
    boxes = meta["boxes"]
    ann = by_name(fig)
    for key, (x0, _, x1, _) in boxes.items():
        for field, bold in (("name", 1.08), ("detail", 1.0)):
            a = ann.get(f"{key}.{field}")
            if a is None:
                continue
            w = text_px(plain(a["text"]), a["font"]["size"]) * bold
            assert w + 2 * 6 <= x1 - x0, (key, field, w, x1 - x0)
    right = FULL_WIDTH - 8  # the x axis spans the width less the left margin
    for a in ann.values():
        if a.get("xanchor") == "left" and a["text"]:
            assert a["x"] + text_px(plain(a["text"]), a["font"]["size"]) * 1.08 <= right, a["name"]
    # the shape column ends before the right-aligned parameter column starts
    for key in boxes:
        shape = ann.get(f"{key}.shape_note") or ann.get(f"{key}.shape")
        params = ann.get(f"{key}.params")
        if shape and params and params["text"]:
            shape_end = shape["x"] + text_px(plain(shape["text"]), shape["font"]["size"])
            params_start = params["x"] - text_px(plain(params["text"]), params["font"]["size"])
            assert shape_end < params_start, key


@pytest.mark.parametrize("width", [FULL_WIDTH, 745, 460])
def test_architecture_fonts_are_projector_sized(width):
    _, spec = spec_of(16, n_outputs=3, norm="pre")
    fig = architecture_figure(spec, title="tiny encoder", width=width)
    sizes = font_sizes(fig.to_dict()["layout"])
    assert min(sizes) >= 12
    assert 15 <= fig.layout.title.font.size <= 17
    assert fig.layout.meta["width"] == width
    assert fig.layout.meta["fits"] or width < 745


def test_architecture_rejects_counts_that_do_not_add_up():
    _, spec = spec_of()
    from dataclasses import replace

    with pytest.raises(ValueError, match="add up"):
        architecture_figure(replace(spec, total=spec.total + 1))

"""Every question template on a small known capture: the right value (against an independent
computation), a value that follows the text (or the model, for sizes), an explanation that
quotes this text's numbers, and `NotAvailable` where the quantity cannot be computed. MiniLM
gives the realistic checks (the lessons' "it" -> "animal" 0.68, the previous-token head)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tformer import Encoder
from tformer.model.capture import ATTENTION, TextCapture, available_names, capture_text
from tformer.model.tokenizer import scratch_tokenizer
from tformer.questions import NotAvailable, QuestionContext, ask, parse_spec, templates
from tformer.questions.answers import NumberAnswer
from tformer.training.recipe import Recipe
from tformer.training.tasks import TaskSpec
from tformer.training.trainer import label_smoothed_loss

from ._models import tiny

TEXT_A = "the cat sat on the mat because it was tired"
TEXT_B = "a dog ran home"
TOK = scratch_tokenizer(max_len=64)


@pytest.fixture(scope="module")
def model():
    return Encoder(tiny(vocab_size=TOK.vocab_size)).eval()  # d_model 24, 3 heads, 2 layers, d_ff 96


@pytest.fixture(scope="module")
def other_model():
    return Encoder(tiny(vocab_size=TOK.vocab_size, d_model=32, n_heads=4, n_layers=3, d_ff=48, seed=3)).eval()


def capture(model, text, names=None) -> TextCapture:
    return capture_text(model, TOK, text, available_names(model.cfg) if names is None else names)


def context(model, text=TEXT_A, **kw) -> QuestionContext:
    kw.setdefault("layer", 1)
    kw.setdefault("head", 2)
    kw.setdefault("query", 2)
    return QuestionContext(capture(model, text), model=model, **kw)


def q(name, ctx, **params):
    return ask(parse_spec({"template": name, "params": params}, "test"), ctx)


def softmax(x):
    x = np.where(np.isfinite(x), x, -np.inf)
    e = np.exp(x - x.max())
    return e / e.sum()


def row_scores(ctx, layer, head, query):
    """q·k of one query against every key, recomputed from the capture by hand."""
    qv = ctx.capture.q[layer, query, head].astype(np.float64)
    return ctx.capture.k[layer, :, head].astype(np.float64) @ qv


# --- why attention --------------------------------------------------------------------------


def test_path_length_is_the_distance_in_a_gru_and_one_in_attention(model):
    ctx = context(model)
    n = ctx.n_pos
    gru = q("path_length", ctx)
    assert gru.answer.value == n - 1
    assert f"{n - 1} steps" in gru.explanation
    assert q("path_length", ctx, arch="attention").answer.value == 1
    between = q("path_length", ctx, source="cat", target="it")
    assert between.answer.value == ctx.labels.index("it") - ctx.labels.index("cat")
    assert between.mark.cols == (2, 8)
    assert q("path_length", context(model, TEXT_B)).answer.value == len(TOK.encode(TEXT_B).ids) - 1


def test_sequential_steps_are_n_in_a_gru(model):
    ctx = context(model)
    assert q("sequential_steps", ctx).answer.value == ctx.n_pos
    assert q("sequential_steps", ctx, arch="attention").answer.value == 1
    assert q("sequential_steps", context(model, TEXT_B)).answer.value == 6


# --- Q, K, V --------------------------------------------------------------------------------


def test_q_shape_is_pos_by_d_head(model):
    ctx = context(model)
    question = q("q_shape", ctx, of="k")
    assert question.answer.correct == {"pos_d_head"}
    assert dict(question.options)["pos_d_head"].startswith(f"{ctx.n_pos} × 8")
    assert f"{ctx.n_pos} × 8" in question.explanation
    short = q("q_shape", context(model, TEXT_B))
    assert dict(short.options)["pos_d_head"].startswith("6 × 8")


def test_q_shape_counts_every_option_with_the_same_numbers_as_right(model):
    cap = capture(model, "one two three four five six")  # 8 tokens: pos = d_head = 8
    question = q("q_shape", QuestionContext(cap))
    assert question.answer.correct == {"pos_d_head", "d_head_pos", "pos_pos"}


def test_argmax_key_is_the_rows_largest_weight(model):
    ctx = context(model)
    question = q("argmax_key", ctx, query="it")
    row = ctx.capture.pattern[1, 2, ctx.labels.index("it")]
    best = int(np.argmax(row))
    assert best in question.answer.positions
    assert all(row[p] >= row.max() - 0.01 for p in question.answer.positions)
    assert question.mark.row == 8
    assert best in question.mark.cols
    assert question.mark.layer == 1
    assert f"{row.max():.2f}" in question.explanation
    assert f'"{ctx.labels[best]}"' in question.explanation
    assert question.grade(best).correct


def test_argmax_key_follows_the_text(model):
    a = q("argmax_key", context(model, query=1))
    b = q("argmax_key", context(model, TEXT_B, query=1))
    assert a.answer.labels != b.answer.labels
    assert a.explanation != b.explanation


def test_a_causal_query_can_only_pick_keys_it_sees():
    causal = Encoder(tiny(vocab_size=TOK.vocab_size, causal=True)).eval()
    question = q("argmax_key", context(causal, query=3))
    assert question.answer.candidates == (0, 1, 2, 3)


# --- the scaled dot product and √d_k -------------------------------------------------------


def test_scale_factor_is_one_over_root_d_head(model, other_model):
    assert q("scale_factor", context(model)).answer.value == pytest.approx(1 / math.sqrt(8), rel=1e-6)
    other = q("scale_factor", context(other_model))
    assert other.answer.value == pytest.approx(1 / math.sqrt(8), rel=1e-6)  # 32 / 4 = 8 as well
    wider = Encoder(tiny(vocab_size=TOK.vocab_size, d_model=32, n_heads=2)).eval()
    question = q("scale_factor", context(wider))
    assert question.answer.value == pytest.approx(0.25)
    assert "0.250" in question.explanation


def test_max_weight_scaled_is_the_models_own_row_max(model):
    ctx = context(model)
    question = q("max_weight_scaled", ctx, query="cat")
    assert question.answer.value == pytest.approx(float(ctx.capture.pattern[1, 2, 2].max()), abs=1e-5)
    by_hand = softmax(row_scores(ctx, 1, 2, 2) / math.sqrt(8)).max()
    assert question.answer.value == pytest.approx(by_hand, abs=1e-5)
    assert question.expected in question.explanation


def test_max_weight_unscaled_drops_the_division(model):
    ctx = context(model)
    question = q("max_weight_unscaled", ctx, query="cat")
    assert question.answer.value == pytest.approx(softmax(row_scores(ctx, 1, 2, 2)).max(), abs=1e-5)
    assert question.answer.value >= q("max_weight_scaled", ctx, query="cat").answer.value - 1e-6
    assert question.expected in question.explanation
    other = q("max_weight_unscaled", context(model, TEXT_B), query="dog")
    assert other.answer.value != question.answer.value


@pytest.mark.parametrize(("tau", "scaled", "direction"), [(0.2, True, "lower"), (5.0, True, "higher"),
                                                    (1.0, True, "same"), (1.0, False, "lower")])  # fmt: skip
def test_entropy_change_follows_the_temperature(model, tau, scaled, direction):
    ctx = context(model)
    question = q("entropy_change", ctx, tau=tau, scaled=scaled, query="cat")
    s = row_scores(ctx, 1, 2, 2) / math.sqrt(8)
    h = [-(p * np.log2(p)).sum() for p in (softmax(s), softmax(s / tau * (1 if scaled else math.sqrt(8))))]
    assert question.answer.change == pytest.approx(h[1] - h[0], abs=1e-4)
    assert question.answer.direction == direction
    assert f"{h[0]:.2f}" in question.explanation
    assert f"{h[1]:.2f}" in question.explanation


# --- masks ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("mask", "params", "count"), [
    ("none", {}, lambda n: n * n),
    ("causal", {}, lambda n: n * (n + 1) // 2),
    ("window", {"window": 1}, lambda n: 3 * n - 2),
    ("window", {"window": 0}, lambda n: n),
    ("padding", {"pad": 3}, lambda n: (n + 3) * n),
])  # fmt: skip
def test_allowed_cells_counts_the_mask_for_this_text(model, mask, params, count):
    for text in (TEXT_A, TEXT_B):
        ctx = context(model, text)
        question = q("allowed_cells", ctx, mask=mask, **params)
        assert question.answer.value == count(ctx.n_pos)
        assert question.expected in question.explanation


def test_masked_weight_is_exactly_zero(model):
    ctx = context(model)
    question = q("masked_weight", ctx, query="cat")
    assert question.answer.value == 0.0
    assert question.mark.cols == (3,)  # the first key after "cat"
    assert q("masked_weight", ctx, query="cat", key="tired").mark.cols == (10,)
    window = q("masked_weight", ctx, mask="window", window=1, query="it")
    assert window.answer.value == 0.0
    assert window.mark.cols == (0,)
    assert '"sat"' in question.explanation
    assert "exactly 0" in question.explanation


def test_masked_weight_refuses_a_key_the_mask_allows_and_a_query_that_sees_all(model):
    ctx = context(model, query=2)
    with pytest.raises(NotAvailable) as err:
        q("masked_weight", ctx, key="the")
    assert err.value.field == "key"
    assert err.value.reason == "token"
    with pytest.raises(NotAvailable) as err:
        q("masked_weight", ctx, query="[SEP]")
    assert err.value.field == "query"


# --- heads ----------------------------------------------------------------------------------


def test_d_head_and_n_heads_follow_the_model(model, other_model):
    assert q("d_head", context(model)).answer.value == 8
    assert q("n_heads", context(model)).answer.value == 3
    assert q("n_heads", context(other_model)).answer.value == 4
    assert "32 / 4 = 8" in q("d_head", context(other_model)).explanation


def crafted(cap: TextCapture, layer: int, head: int) -> TextCapture:
    """``cap`` with every head uniform except (layer, head), an exact previous-token head."""
    n = cap.n_pos
    p = np.full(cap.pattern.shape, 1.0 / n, np.float32)
    prev = np.zeros((n, n), np.float32)
    prev[0, 0] = 1.0
    prev[np.arange(1, n), np.arange(n - 1)] = 1.0
    p[layer, head] = prev
    p[0, 0] = np.eye(n)  # a self head, to be a clear distractor
    return dataclasses.replace(cap, arrays={**cap.arrays, "pattern": p})


def test_role_head_finds_the_previous_token_head(model):
    cap = crafted(capture(model, TEXT_A), 1, 0)
    question = q("role_head", QuestionContext(cap))
    assert question.answer.correct == {"1.0"}
    assert len(question.options) == 4
    assert question.grade("layer 1, head 0").correct
    assert question.mark.layer == 1
    assert "1.00" in question.explanation
    self_q = q("role_head", QuestionContext(cap), role="self", options=2)
    assert self_q.answer.correct == {"0.0"}
    assert len(self_q.options) == 2


def test_role_head_is_not_available_without_a_repeated_token(model):
    with pytest.raises(NotAvailable) as err:
        q("role_head", QuestionContext(capture(model, TEXT_B)), role="duplicate")
    assert err.value.reason == "token"


# --- positional encoding --------------------------------------------------------------------


@pytest.mark.parametrize(("pos", "i"), [(0, 0), (1, 0), (3, 1), (7, 6), (40, 23)])
def test_pe_value_is_the_papers_formula(model, pos, i):
    question = q("pe_value", context(model), pos=pos, i=i)
    angle = pos / 10000 ** (2 * (i // 2) / 24)
    expected = math.sin(angle) if i % 2 == 0 else math.cos(angle)
    assert question.answer.value == pytest.approx(expected, abs=1e-6)
    assert f"{expected:.3f}".replace("-0.000", "0.000") in question.explanation
    assert q("pe_value", context(model, TEXT_B), pos=pos, i=i).answer.value == question.answer.value


def test_pe_value_refuses_a_dimension_the_model_lacks(model):
    with pytest.raises(NotAvailable) as err:
        q("pe_value", context(model), i=24)
    assert err.value.field == "i"
    assert "d_model = 24" in err.value.message


def test_positions_off_change_says_whether_the_weights_move(model):
    question = q("positions_off_change", context(model))
    assert question.answer.correct == {"changes"}
    none = Encoder(tiny(vocab_size=TOK.vocab_size, pos_encoding="none")).eval()
    still = q("positions_off_change", context(none))
    assert still.answer.correct == {"same"}
    assert "0.000" in still.explanation


def test_positions_off_role_is_the_role_score_without_positions(model):
    from tformer.analysis.head_roles import role_scores
    from tformer.model.interventions import patterns_without_positions

    ctx = context(model, layer=0, head=1)
    question = q("positions_off_role", ctx)
    enc = ctx.capture.encoded
    off = patterns_without_positions(model, enc.ids)
    scores = [role_scores(p, np.array(enc.ids), cls_pos=0, skip_special=enc.special)["previous"][0, 1]
              for p in (ctx.capture.pattern, off)]  # fmt: skip
    assert question.answer.change == pytest.approx(scores[1] - scores[0], abs=1e-9)
    assert f"{scores[0]:.2f}" in question.explanation


def test_questions_that_run_the_model_need_it(model):
    bare = QuestionContext(capture(model, TEXT_A), layer=0, head=0)
    for name in ("positions_off_change", "positions_off_role", "int8_ratio"):
        with pytest.raises(NotAvailable) as err:
            q(name, bare)
        assert err.value.reason == "model"


# --- FFN, residual and LayerNorm ------------------------------------------------------------


def test_d_ff_follows_the_model(model, other_model):
    assert q("d_ff", context(model)).answer.value == 96
    other = q("d_ff", context(other_model))
    assert other.answer.value == 48
    assert "1.50 × d_model" in other.explanation


@pytest.mark.parametrize("which", ["ln1", "ln2"])
def test_layernorm_mean_is_zero_for_every_token(model, which):
    ctx = context(model)
    question = q("layernorm_mean", ctx, which=which, query="mat")
    values = ctx.capture.at(f"{which}_normalized", 1)[6].astype(np.float64)
    assert question.answer.value == pytest.approx(values.mean(), abs=1e-7)
    assert abs(question.answer.value) < 1e-5
    sigma = float(ctx.capture.at(f"{which}_scale", 1)[6, 0])
    assert f"{sigma:.3f}" in question.explanation
    assert "1.000" in question.explanation
    other = q("layernorm_mean", context(model, TEXT_B), which=which, query="dog")
    assert other.explanation != question.explanation


# --- the whole encoder ----------------------------------------------------------------------


def named(model, prefix: str, rows: slice | None = None) -> int:
    """Parameters of ``model`` under ``prefix`` in block 0 (a slice of the fused qkv rows)."""
    total = 0
    for name, p in model.named_parameters():
        if name.startswith(f"blocks.0.{prefix}"):
            total += p[rows].numel() if rows is not None else p.numel()
    return total


def test_n_params_matches_the_built_models_parameters(model, other_model):
    for m in (model, other_model):
        d = m.cfg.d_model
        ctx = context(m)
        expected = {
            "W_Q": named(m, "attn.qkv", slice(0, d)),
            "W_V": named(m, "attn.qkv", slice(2 * d, 3 * d)),
            "W_O": named(m, "attn.out"),
            "W_1": named(m, "mlp.fc1"),
            "W_2": named(m, "mlp.fc2"),
            "ln1": named(m, "ln1"),
            "attn": named(m, "attn"),
            "mlp": named(m, "mlp"),
        }
        for group, count in expected.items():
            question = q("n_params", ctx, group=group)
            assert question.answer.value == count, group
            assert question.expected in question.explanation
        every = q("n_params", ctx, group="mlp", scope="model")
        assert every.answer.value == expected["mlp"] * m.cfg.n_layers
        assert q("n_params", ctx, group="embed").answer.value == m.embed.weight.numel()


@pytest.mark.parametrize(
    "group", ["W_Q", "W_K", "W_V", "W_O", "W_1", "W_2", "ln1", "ln2", "attn", "mlp", "embed"]
)
def test_the_formula_an_n_params_explanation_states_adds_up(model, group):
    question = q("n_params", context(model), group=group)
    formula = question.explanation.split(": ", 1)[1].split(" = ")[0]
    assert eval(formula.replace("×", "*").replace(",", ""), {}) == question.answer.value, formula


def test_n_params_of_a_part_the_model_lacks_is_not_available(model):
    for group in ("pos_embed", "head", "ln_final", "lm_head"):
        with pytest.raises(NotAvailable) as err:
            q("n_params", context(model), group=group)
        assert err.value.reason == "part"
        assert err.value.field == "group"


def test_total_params_and_n_layers(model, other_model):
    for m in (model, other_model):
        ctx = context(m)
        total = q("total_params", ctx)
        assert total.answer.value == sum(p.numel() for p in m.parameters())
        assert total.expected in total.explanation
        assert total.grade(f"{total.answer.value * 1.04:.0f}").correct
        assert q("n_layers", ctx).answer.value == m.cfg.n_layers


# --- training -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "expected"), [(10, 7e-3 * 10 / 50), (50, 7e-3), (200, 7e-3 * math.sqrt(50 / 200))]
)
def test_warmup_lr_follows_the_schedule(model, step, expected):
    question = q("warmup_lr", context(model), step=step)
    assert question.answer.value == pytest.approx(expected, rel=1e-12)
    assert question.expected in question.explanation
    constant = q(
        "warmup_lr", context(model, recipe=Recipe(schedule="constant", warmup=20, lr=1e-3)), step=step
    )
    assert constant.answer.value == pytest.approx(1e-3 * min(1.0, step / 20))


def test_effective_batch_is_batch_times_accumulation(model):
    question = q("effective_batch", context(model, recipe=Recipe(batch=16, accum=4)))
    assert question.answer.value == 64
    assert "16 × 4 = 64" in question.explanation
    assert q("effective_batch", context(model)).answer.value == Recipe().batch * Recipe().accum


def test_label_smoothing_target_matches_the_trainers_loss(model):
    task = TaskSpec(vocab=10)
    question = q("label_smoothing_target", context(model, task=task), epsilon=0.1)
    v = task.n_ids
    assert question.answer.value == pytest.approx(0.9 + 0.1 / v)
    # The trainer's loss is the cross-entropy against exactly this target distribution.
    logits = torch.randn(1, 3, v, generator=torch.Generator().manual_seed(0))
    targets = torch.tensor([[1, 4, 2]])
    target = torch.full((1, 3, v), 0.1 / v)
    target.scatter_(-1, targets[..., None], question.answer.value)
    by_hand = -(target * F.log_softmax(logits, -1)).sum(-1).mean()
    assert float(label_smoothed_loss(logits, targets, 0.1)) == pytest.approx(float(by_hand), rel=1e-6)
    recipe = q("label_smoothing_target", context(model, recipe=Recipe(label_smoothing=0.2), task=task))
    assert recipe.answer.value == pytest.approx(0.8 + 0.2 / v)
    assert recipe.expected in recipe.explanation


# --- efficiency -----------------------------------------------------------------------------


def test_scores_bytes_is_n_squared_float32(model):
    for text in (TEXT_A, TEXT_B):
        ctx = context(model, text)
        n = ctx.n_pos
        head = q("scores_bytes", ctx)
        assert head.answer.value == n * n * 4
        assert head.expected in head.explanation
        assert q("scores_bytes", ctx, scope="layer").answer.value == 3 * n * n * 4
        assert head.grade(f"{n * n * 4} bytes").correct


def test_flash_ratio_is_the_n_by_n_matrix_over_the_largest_tile(model):
    ctx = context(model)
    n = ctx.n_pos  # 12 tokens: tiles of 4
    question = q("flash_ratio", ctx)
    largest = 4 * max(4, 8)  # Q_i, K_j, V_j, O_i are [4 × d_head 8]; S_ij is [4 × 4]
    assert question.answer.value == pytest.approx(n * n / largest)
    assert question.params["block"] == 4
    assert question.expected in question.explanation
    assert q("flash_ratio", ctx, block=2).answer.value == pytest.approx(n * n / 16)
    with pytest.raises(NotAvailable):
        q("flash_ratio", ctx, block=3)


def test_int8_ratio_is_about_four_for_the_linear_layers(model):
    ctx = context(model)
    linear = q("int8_ratio", ctx)
    whole = q("int8_ratio", ctx, part="all")
    n_linear = sum(
        m.weight.numel() + m.bias.numel() for m in model.modules() if isinstance(m, torch.nn.Linear)
    )
    assert f"{4 * n_linear:,}" in linear.explanation  # float32: 4 bytes per Linear parameter
    assert 3.0 < linear.answer.value < 4.0
    assert 1.0 < whole.answer.value < linear.answer.value


# --- every template -------------------------------------------------------------------------


def test_every_number_question_quotes_its_value_in_the_explanation(model):
    ctx = context(model)
    for name, t in templates().items():
        if t.kind == "number":
            question = q(name, ctx)
            assert isinstance(question.answer, NumberAnswer)
            assert question.expected in question.explanation, name


# The templates whose answer depends on the text, and those that depend on the model's sizes.
TEXT = {"path_length", "sequential_steps", "q_shape", "argmax_key", "max_weight_scaled", "max_weight_unscaled",
        "entropy_change", "allowed_cells", "masked_weight", "role_head", "positions_off_change",
        "positions_off_role", "layernorm_mean", "scores_bytes", "flash_ratio"}  # fmt: skip
SIZES = {"scale_factor", "d_head", "n_heads", "d_ff", "n_params", "total_params", "n_layers", "pe_value",
         "int8_ratio"}  # fmt: skip
RECIPE = {"warmup_lr", "effective_batch", "label_smoothing_target"}


def shown(question) -> tuple:
    return question.prompt, question.expected, question.explanation, question.options


def test_every_template_is_recomputed_from_the_view(model, other_model):
    assert TEXT | SIZES | RECIPE == set(templates())
    recipe = Recipe(batch=8, accum=3, lr=1e-3, warmup=5, label_smoothing=0.1)
    for name in templates():
        base = q(name, context(model, query=1, layer=0, head=0))
        if name in TEXT:
            other = q(name, context(model, TEXT_B, query=1, layer=0, head=0))
        elif name in SIZES:
            other = q(name, context(other_model, query=1, layer=0, head=0))
            if name == "scale_factor":  # both models have d_head 8
                other = q(name, context(Encoder(tiny(vocab_size=TOK.vocab_size, n_heads=2)).eval()))
        else:
            other = q(name, context(model, query=1, layer=0, head=0, recipe=recipe))
        assert shown(base) != shown(other), name


LAYERED = [n for n, t in templates().items() if t.param("layer")]
HEADED = [n for n, t in templates().items() if t.param("head")]
QUERIED = [n for n, t in templates().items() if t.param("query")]


@pytest.mark.parametrize("name", LAYERED)
def test_a_layer_beyond_the_model_is_not_available(model, name):
    with pytest.raises(NotAvailable) as err:
        q(name, context(model), layer=2)
    assert err.value.reason == "layer"
    assert err.value.field == "layer"
    assert "2 layers" in err.value.message


@pytest.mark.parametrize("name", HEADED)
def test_a_head_beyond_the_model_is_not_available(model, name):
    with pytest.raises(NotAvailable) as err:
        q(name, context(model), head=3)
    assert err.value.reason == "head"
    assert "3 heads" in err.value.message


@pytest.mark.parametrize("name", QUERIED)
def test_a_query_token_not_in_the_text_is_not_available(model, name):
    with pytest.raises(NotAvailable) as err:
        q(name, context(model), query="zebra")
    assert err.value.reason == "token"
    assert err.value.field == "query"
    assert "'zebra'" in err.value.message
    with pytest.raises(NotAvailable, match="beyond this text"):
        q(name, context(model), query=40)
    with pytest.raises(NotAvailable, match="needs a query"):
        q(name, context(model, query=None))


def test_a_capture_without_the_activation_is_not_available(model):
    bare = QuestionContext(capture(model, TEXT_A, ATTENTION), query=1)
    with pytest.raises(NotAvailable) as err:
        q("layernorm_mean", bare)
    assert err.value.reason == "activation"
    limited = QuestionContext(capture_text(model, TOK, TEXT_A, ATTENTION, layers=[0]))
    with pytest.raises(NotAvailable):
        q("role_head", limited)


def test_the_spec_names_the_view_and_the_view_can_be_left_to_the_learner(model):
    ctx = context(model, layer=1, head=1, query=3)
    assert q("argmax_key", ctx).params == {"layer": 1, "head": 1, "query": 3}
    assert q("argmax_key", ctx, layer=0, head=2, query="it").params == {"layer": 0, "head": 2, "query": 8}


def test_a_spec_tolerance_replaces_the_templates(model):
    spec = parse_spec({"template": "max_weight_scaled", "tolerance": {"abs": 0.5}}, "test")
    question = ask(spec, context(model))
    assert question.tolerance == "within ±0.5"
    assert question.grade(f"{question.answer.value + 0.4:.3f}").correct


# --- MiniLM: the lessons' numbers -----------------------------------------------------------

IT = "The animal didn't cross the street because it was too tired."


@pytest.fixture(scope="module")
def minilm():
    from tformer.model.pretrained import load_pretrained

    model, tok = load_pretrained("minilm", "cpu")
    cap = capture_text(model, tok, IT, available_names(model.cfg))
    return QuestionContext(cap, layer=3, head=1, query=10, model=model)


def test_minilm_it_attends_to_animal(minilm):
    question = q("argmax_key", minilm, query="it")
    assert question.answer.positions == {2}
    assert "0.68" in question.explanation
    assert question.grade("animal").correct
    assert not question.grade("street").correct
    assert q("max_weight_scaled", minilm).grade("0.7").correct


def test_minilm_previous_token_head_and_what_positions_do_to_it(minilm):
    question = q("role_head", minilm)
    assert "0.2" in question.answer.correct
    assert question.grade("layer 0, head 2").correct
    off = q("positions_off_role", minilm, layer=0, head=2)
    assert off.answer.direction == "lower"
    assert off.answer.change < -0.5


def test_minilm_sizes(minilm):
    assert q("total_params", minilm).answer.value == 22_565_376
    assert q("d_ff", minilm).grade("1,536").correct
    assert q("n_params", minilm, group="W_Q").answer.value == 384 * 384 + 384
    assert q("d_head", minilm).grade("３２").correct

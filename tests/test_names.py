"""One name per concept, in one order: the encoder's two masks and the model source's encoding."""

from __future__ import annotations

import inspect

import pytest
import torch

from tests._models import tiny
from tformer.model.encoder import Encoder


def test_forward_logits_and_hidden_take_their_arguments_in_one_order():
    order = ["ids", "attention_mask", "token_type_ids", "attn_mask"]
    for method in (Encoder.forward, Encoder.logits, Encoder.hidden):
        assert list(inspect.signature(method).parameters)[1:] == order, method.__name__


@pytest.mark.parametrize("method", ["forward", "logits", "hidden"])
def test_each_takes_the_rule_mask_as_attn_mask_by_position_and_by_name(method):
    model = Encoder(tiny(n_outputs=3)).eval()
    ids = torch.tensor([[1, 2, 3, 4]])
    padding = torch.tensor([[1, 1, 1, 0]])
    rule = torch.ones(4, 4, dtype=torch.bool).tril()  # causal, as a rule
    fn = getattr(model, method)
    with torch.no_grad():
        positional = fn(ids, padding, None, rule)
        named = fn(ids, attention_mask=padding, attn_mask=rule)
    assert torch.equal(positional, named)


def test_a_model_choice_names_its_source_as_the_view_and_a_link_do():
    from tformer.ui.caches import ModelChoice
    from tformer.ui.state import SOURCES, ViewState

    view, notices = ViewState.from_query({"source": "run", "run": "tiny-copy"})  # a link of main
    assert not notices
    choice = ModelChoice(view.source, run=view.run)
    assert (choice.source, choice.run) == ("run", "tiny-copy")
    assert choice.label == "trained run tiny-copy"
    assert ModelChoice("folder", path="/models/tiny-gpt2").label == "local checkpoint /models/tiny-gpt2"
    assert set(ViewState().choices("source")) == set(SOURCES)
    with pytest.raises(ValueError, match="is not one of"):
        ModelChoice("run:tiny-copy")  # the old second encoding
    with pytest.raises(ValueError, match="needs run"):
        ModelChoice("run")
    with pytest.raises(ValueError, match="needs path"):
        ModelChoice("local")


def _public_callables(package_name: str):
    """(qualified name, callable) for every public function and method defined in the package."""
    import importlib
    import pkgutil

    package = importlib.import_module(package_name)
    for info in pkgutil.iter_modules(package.__path__, f"{package_name}."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj):
                yield f"{info.name}.{name}", obj
            elif inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if inspect.isfunction(member) and (not attr.startswith("_") or attr == "__init__"):
                        yield f"{info.name}.{name}.{attr}", member


@pytest.mark.parametrize("package", ["tformer.analysis", "tformer.efficiency", "tformer.questions"])
def test_the_may_attend_mask_is_called_attn_mask_in_the_numpy_side(package):
    named_allowed, mask_arrays = [], []
    for qualname, fn in _public_callables(package):
        params = inspect.signature(fn).parameters
        if "allowed" in params:
            named_allowed.append(qualname)
        if "mask" in params and params["mask"].annotation not in (str, "str"):
            mask_arrays.append(qualname)  # `mask` is left to a question's mask kind ("causal", ...)
    assert named_allowed == []
    assert mask_arrays == []


def test_a_question_context_gives_a_heads_mask_as_attn_mask():
    from tformer.questions.context import QuestionContext

    assert hasattr(QuestionContext, "attn_mask")
    assert not hasattr(QuestionContext, "allowed")


def test_a_count_of_heads_is_n_heads_and_heads_is_a_list():
    import dataclasses
    import typing

    from tformer.efficiency.costs import WallSettings
    from tformer.efficiency.rnn import RnnSettings
    from tformer.efficiency.sparse_costs import SparseSettings
    from tformer.ui.registry import page_states

    classes = [*page_states().values(), WallSettings, RnnSettings, SparseSettings]
    checked = 0
    for cls in classes:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if "heads" not in f.name:
                continue
            checked += 1
            if hints[f.name] is int:
                assert f.name.startswith("n_heads"), f"{cls.__name__}.{f.name} counts heads: call it n_heads"
            else:
                assert f.name == "heads", f"{cls.__name__}.{f.name}: a list of heads is called heads"
    assert checked >= 5  # n_heads of the three sweeps, costs and the comparison; export's heads


def test_metric_and_role_keys_say_previous_and_cls():
    from tformer.analysis.head_roles import ROLES
    from tformer.analysis.metrics import METRICS

    assert "previous" in METRICS
    assert "prev" not in METRICS
    assert {"previous", "cls"} <= set(ROLES)
    assert "first" not in ROLES  # "first" is position 0, the metric; the role measures cls_pos

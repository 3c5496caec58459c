"""Role timelines: the rule that names a head (threshold, hysteresis, held snapshots, a run's
end), the recorder fed synthetic snapshots, the JSON form a saved run keeps (and refuses when
it is hostile), and a real run of the shift task that forms a previous-token head."""

from __future__ import annotations

import threading
from types import MappingProxyType

import numpy as np
import pytest

from tformer.analysis.head_roles import ROLES
from tformer.training.role_timeline import (
    MAX_SAVED_HEADS,
    MAX_SAVED_SNAPSHOTS,
    NAMED_ROLES,
    Change,
    RoleRecorder,
    RoleTimeline,
    Rule,
)


def timeline(series: dict[str, list[float]] | list[float], steps: list[int] | None = None) -> RoleTimeline:
    """One head ([1, 1]) whose scores follow ``series`` (a list: its "previous" score; other
    roles 0, "broad" 1), snapshots at steps 0, 10, 20, ..."""
    by_role = {"previous": series} if isinstance(series, list) else series
    n = len(next(iter(by_role.values())))
    steps = list(range(0, 10 * n, 10)) if steps is None else steps
    scores = {}
    for role in ROLES:
        default = 1.0 if role == "broad" else 0.0
        values = by_role.get(role, [default] * n)
        scores[role] = np.asarray(values, dtype=np.float64).reshape(n, 1, 1)
    return RoleTimeline(tuple(steps), MappingProxyType(scores), "a b c", (1, 1))


def kinds(t: RoleTimeline, **kw) -> list[tuple[str, int, str]]:
    return [(c.kind, c.step, c.role) for c in t.changes(**kw)]


# --- the rule -----------------------------------------------------------------------------------


def test_the_rule_needs_off_below_on_and_a_positive_hold():
    assert (Rule().on, Rule().off, Rule().held) == (0.5, 0.4, 3)
    for bad in ({"on": 0.4, "off": 0.5}, {"off": 0.0}, {"on": 1.5}):
        with pytest.raises(ValueError, match="off <= on"):
            Rule(**bad)
    for bad in ({"held": 0}, {"held": True}):
        with pytest.raises(ValueError, match="held"):
            Rule(**bad)


def test_a_head_forms_when_its_score_passes_the_threshold_and_holds():
    t = timeline([0.05, 0.2, 0.45, 0.55, 0.6, 0.7, 0.8])
    assert kinds(t) == [("formed", 30, "previous")]
    [c] = t.changes()
    assert c == Change(0, 0, "previous", 30, 0.55, "formed")


def test_a_single_spike_names_nothing():
    assert kinds(timeline([0.05, 0.9, 0.1, 0.1, 0.1, 0.1])) == []
    # above on twice, then back under off: still short of three held snapshots
    assert kinds(timeline([0.05, 0.9, 0.8, 0.1, 0.1, 0.1])) == []
    # held = 1: every crossing counts, spikes included
    assert kinds(timeline([0.05, 0.9, 0.1, 0.1]), rule=Rule(held=1)) == [
        ("formed", 10, "previous"),
        ("faded", 20, "previous"),
    ]


def test_hysteresis_a_dip_between_off_and_on_keeps_the_name():
    t = timeline([0.1, 0.6, 0.45, 0.42, 0.6, 0.7, 0.2, 0.1, 0.3, 0.35])
    assert kinds(t) == [("formed", 10, "previous"), ("faded", 60, "previous")]
    # without the band (off = on) the dips break every run of snapshots above 0.5 short of 3:
    # the head is never named
    assert kinds(t, rule=Rule(on=0.5, off=0.5)) == []


def test_a_fade_needs_to_hold_too():
    # one snapshot under off, then back above on: the head keeps its name
    t = timeline([0.1, 0.7, 0.7, 0.7, 0.2, 0.8, 0.8, 0.8])
    assert kinds(t) == [("formed", 10, "previous")]


def test_a_crossing_at_the_end_counts_once_the_run_has_ended():
    t = timeline([0.1, 0.2, 0.3, 0.55, 0.6])
    assert kinds(t) == []  # still training: two snapshots cannot confirm three
    assert kinds(t, final=True) == [("formed", 30, "previous")]
    # a last-snapshot spike after a fall does not count even at the end if the fall held
    assert kinds(timeline([0.1, 0.2, 0.3, 0.55, 0.1]), final=True) == []


def test_nan_never_forms_and_broad_is_never_named():
    nan = float("nan")
    t = timeline({"duplicate": [nan, nan, nan, nan], "broad": [1.0, 1.0, 1.0, 1.0]})
    assert t.changes(final=True) == []
    assert "broad" not in NAMED_ROLES
    assert set(NAMED_ROLES) | {"broad"} == set(ROLES)
    assert kinds(t, roles=["broad"], final=True) == [("formed", 0, "broad")]  # asked for by name
    with pytest.raises(ValueError, match="not among"):
        t.changes(roles=["nope"])


def _slow_changes(x: np.ndarray, rule: Rule, final: bool) -> list[tuple[int, str]]:
    """The rule read straight off the module docstring, one snapshot at a time."""
    y = np.nan_to_num(x, nan=-1.0)
    out, formed = [], False

    def holds(t: int, ok: np.ndarray) -> bool:
        window = ok[t : t + rule.held]
        return bool(window.all()) and (window.size == rule.held or final)

    for t in range(y.size):
        if not formed and y[t] >= rule.on and holds(t, y >= rule.off):
            formed = True
            out.append((t, "formed"))
        elif formed and y[t] < rule.off and holds(t, y < rule.on):
            formed = False
            out.append((t, "faded"))
    return out


@pytest.mark.parametrize("seed", range(8))
def test_changes_match_the_rule_read_one_snapshot_at_a_time(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    a = rng.random((n, 3, 2))
    a[rng.random(a.shape) < 0.1] = np.nan
    t = RoleTimeline(tuple(range(0, 5 * n, 5)), MappingProxyType(dict.fromkeys(ROLES, a)), "", (3, 2))
    for rule in (Rule(), Rule(held=1), Rule(on=0.7, off=0.2, held=4)):
        for final in (False, True):
            got = [
                (c.layer, c.head, t.steps.index(c.step), c.kind)
                for c in t.changes(rule, final=final, roles=["self"])
            ]
            want = sorted(
                (t_, layer, head, kind)
                for layer in range(3)
                for head in range(2)
                for t_, kind in _slow_changes(a[:, layer, head], rule, final)
            )
            assert got == [(layer, head, t_, kind) for t_, layer, head, kind in want]


def test_changes_come_in_order_of_update_then_head_then_role():
    n = 6
    scores = {role: np.zeros((n, 2, 2)) for role in ROLES}
    scores["self"][2:, 1, 0] = 0.9  # layer 1 head 0 at step 20
    scores["previous"][2:, 0, 1] = 0.9  # layer 0 head 1 at step 20
    scores["antidiagonal"][1:, 1, 1] = 0.9  # layer 1 head 1 at step 10
    scores["cls"][2:, 0, 1] = 0.8  # layer 0 head 1 at 20, after "previous" in ROLES order
    t = RoleTimeline(tuple(range(0, 10 * n, 10)), MappingProxyType(scores), "", (2, 2))
    got = [(c.step, c.layer, c.head, c.role) for c in t.formed()]
    assert got == [
        (10, 1, 1, "antidiagonal"),
        (20, 0, 1, "previous"),
        (20, 0, 1, "cls"),
        (20, 1, 0, "self"),
    ]
    assert t.strongest_role() == "previous"  # 0.9 ties: the first of ROLES order


def test_formed_keeps_the_first_formation_of_a_head_that_comes_back():
    t = timeline([0.6, 0.6, 0.6, 0.1, 0.1, 0.1, 0.7, 0.7, 0.7])
    assert kinds(t) == [("formed", 0, "previous"), ("faded", 30, "previous"), ("formed", 60, "previous")]
    assert [(c.step, c.kind) for c in t.formed()] == [(0, "formed")]


def test_a_timeline_checks_its_shape():
    good = timeline([0.1, 0.2])
    with pytest.raises(ValueError, match="increase"):
        RoleTimeline((10, 10), good.scores, "", (1, 1))
    with pytest.raises(ValueError, match="shape"):
        RoleTimeline((0, 10), good.scores, "", (1, 2))
    with pytest.raises(ValueError, match="roles"):
        RoleTimeline((0, 10), MappingProxyType({"self": good.scores["self"]}), "", (1, 1))
    assert len(RoleTimeline.empty(2, 4)) == 0
    assert RoleTimeline.empty(2, 4).strongest_role() is None


# --- the recorder --------------------------------------------------------------------------------


def forming(n: int, mix: float) -> np.ndarray:
    """[1 layer, 2 heads, n, n]: head 0 mixes uniform and the anti-diagonal (``mix`` of it), head
    1 stays uniform."""
    uniform = np.full((n, n), 1 / n)
    mirror = np.eye(n)[::-1]
    return np.stack([(1 - mix) * uniform + mix * mirror, uniform])[None]


def test_the_recorder_scores_each_snapshot_and_names_the_forming_head():
    n = 8
    rec = RoleRecorder(np.arange(n) + 3, text="a b c d e f g h")
    for step, mix in zip(range(0, 80, 10), (0.0, 0.1, 0.2, 0.4, 0.6, 0.8, 0.9, 1.0), strict=True):
        rec.add(step, forming(n, mix))
    rec.add(70, forming(n, 0.0))  # a replayed step is ignored
    t = rec.timeline()
    assert len(t) == len(rec) == 8
    assert t.shape == (1, 2)
    assert t.text == "a b c d e f g h"
    a = t.scores["antidiagonal"][:, 0, 0]
    np.testing.assert_allclose(a, [m + (1 - m) / n for m in (0.0, 0.1, 0.2, 0.4, 0.6, 0.8, 0.9, 1.0)])
    assert [(c.layer, c.head, c.role, c.step) for c in t.formed(final=True)] == [(0, 0, "antidiagonal", 40)]
    assert not t.scores["antidiagonal"].flags.writeable
    with pytest.raises(ValueError, match="heads"):
        rec.add(80, np.full((2, 2, n, n), 1 / n))


def test_the_recorder_is_read_while_it_is_written():
    n = 6
    rec = RoleRecorder(np.arange(n))
    seen: list[int] = []

    def read() -> None:
        for _ in range(200):
            t = rec.timeline()
            assert all(a.shape[0] == len(t.steps) for a in t.scores.values())
            seen.append(len(t))

    reader = threading.Thread(target=read)
    reader.start()
    for step in range(200):
        rec.add(step, forming(n, 0.5))
    reader.join()
    assert seen == sorted(seen)
    assert rec.timeline().steps == tuple(range(200))


# --- run.json ------------------------------------------------------------------------------------


def test_the_json_form_round_trips_to_a_thousandth():
    rng = np.random.default_rng(0)
    n = 7
    scores = {role: rng.random((n, 2, 3)) for role in ROLES}
    scores["duplicate"][:, 0, 0] = np.nan
    t = RoleTimeline(tuple(range(0, 70, 10)), MappingProxyType(scores), "c a b", (2, 3))
    data = t.to_json()
    assert data["scores"]["self"][0].count(" ") == 5  # one string a snapshot, 6 heads
    back = RoleTimeline.from_json(data)
    assert back.steps == t.steps
    assert back.shape == (2, 3)
    assert back.text == "c a b"
    for role in ROLES:
        np.testing.assert_allclose(back.scores[role], t.scores[role], atol=0.0005 + 1e-12)
    assert np.isnan(back.scores["duplicate"][:, 0, 0]).all()


def test_a_long_timeline_is_thinned_to_its_bound_keeping_the_last_snapshot():
    n = MAX_SAVED_SNAPSHOTS * 2 + 3
    t = timeline([0.1] * n)
    data = t.to_json()
    assert len(data["steps"]) <= MAX_SAVED_SNAPSHOTS
    assert data["steps"][0] == 0
    assert data["steps"][-1] == t.steps[-1]
    assert len(RoleTimeline.from_json(data)) == len(data["steps"])


def hostile_cases() -> list[tuple[str, object, str]]:
    good = timeline([0.1, 0.6, 0.7]).to_json()

    def edit(**changes: object) -> dict[str, object]:
        return {**good, **changes}

    def score_row(row: object) -> dict[str, object]:
        return edit(scores={**good["scores"], "self": [row, "0", "0"]})

    return [
        ("not an object", [1, 2, 3], "format"),
        ("another format", edit(format="float"), "format"),
        ("negative layers", edit(layers=-1), "heads in all"),
        ("too many heads", edit(layers=MAX_SAVED_HEADS, heads=2), "heads in all"),
        ("a bool for heads", edit(heads=True), "whole numbers"),
        ("steps not a list", edit(steps="0 10 20"), "list of at most"),
        ("too many steps", edit(steps=list(range(MAX_SAVED_SNAPSHOTS + 1))), "list of at most"),
        ("a negative step", edit(steps=[-10, 0, 10]), "whole numbers >= 0"),
        ("steps going back", edit(steps=[0, 20, 10]), "increase"),
        ("a float step", edit(steps=[0, 10.5, 20]), "whole numbers >= 0"),
        ("a role missing", edit(scores={k: v for k, v in good["scores"].items() if k != "self"}), "roles"),
        ("a role too many", edit(scores={**good["scores"], "other": good["scores"]["self"]}), "roles"),
        ("a row too few", edit(scores={**good["scores"], "self": ["0", "0"]}), "list of 3 strings"),
        ("a score over 1000", score_row("1001"), "0..1000 or -"),
        ("a negative score", score_row("-5"), "0..1000 or -"),
        ("a float score", score_row("0.5"), "0..1000 or -"),
        ("a superscript digit", score_row("\u00b2"), "0..1000 or -"),  # "²".isdigit() is True
        ("two scores for one head", score_row("1 2"), "must hold 1 scores"),
        ("a huge row", score_row("1" * 10_000), "must hold 1 scores"),
        ("a number for a row", score_row(5), "must hold 1 scores"),
        ("text not a string", edit(text=["a"]), "text"),
    ]


@pytest.mark.parametrize(("why", "data", "match"), hostile_cases(), ids=[c[0] for c in hostile_cases()])
def test_a_hostile_saved_timeline_is_refused_with_a_message(why, data, match):
    with pytest.raises(ValueError, match=match):
        RoleTimeline.from_json(data)


def test_a_hostile_timelines_message_is_in_the_readers_language():
    from tformer.i18n import use_language

    with use_language("zh"), pytest.raises(ValueError, match="实际为 10000 × 10000"):
        RoleTimeline.from_json({"format": "permille", "layers": 10_000, "heads": 10_000, "steps": [0]})


# --- a real run: the shift task forms a previous-token head --------------------------------------


@pytest.fixture
def one_thread():
    """Tiny models train fastest on one thread (two crawl while other processes share the
    cores); restored afterwards."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_a_run_of_the_shift_task_forms_a_previous_token_head(one_thread):
    """Shift by one (position i gives token i-1) trained on a one-head model: its head has to
    read the previous token, and the timeline names it when it does."""
    from tformer.training.recipe import Recipe, model_config
    from tformer.training.tasks import TaskSpec
    from tformer.training.trainer import Trainer

    spec = TaskSpec("shift", length=8, vocab=8, shift=1)
    recipe = Recipe(lr=1e-2, steps=150, warmup=20, snapshot_every=10, eval_every=50, seed=0)
    trainer = Trainer(model_config(spec, n_layers=1, n_heads=1, d_model=32), spec, recipe)
    rec = RoleRecorder(trainer.probe, trainer.probe_text)
    summary = trainer.run(on_snapshot=rec.add)
    t = rec.timeline()
    assert summary.reason == "steps"
    assert t.steps[0] == 0
    assert t.steps[-1] == 150
    formed = t.formed(final=True)
    assert [(c.layer, c.head, c.role) for c in formed] == [(0, 0, "previous")], formed
    [c] = formed
    previous = t.scores["previous"][:, 0, 0]
    assert 0 < c.step < 150
    assert previous[0] < 0.25  # untrained: about 1/8 on every key
    assert (previous[np.array(t.steps) >= c.step] >= Rule().off).all()
    assert summary.accuracy is not None
    assert summary.accuracy > 0.95

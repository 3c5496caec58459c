"""Drive every widget that has a callback, through AppTest, the way a browser does.

`callback_widgets` finds, in the tree of the last run, every widget Streamlit registered an
``on_change`` / ``on_click`` callback for (or, for a custom component, per-event callbacks),
from the session's widget metadata: a widget added tomorrow is found without a list here.
`drive` changes one such widget and reruns: choice widgets (radio, selectbox, select slider,
segmented control, multiselect) get the widget state the browser sends (the *formatted*
option strings), so Streamlit itself deserializes the value and calls the callback with the
``args`` the widget was given; numbers, checkboxes, text and buttons go through AppTest's own
setters; a custom component gets a JSON state like its frontend's.

Uses two private attributes of AppTest (``_session_state``, ``_tree``): the public API can
neither list callbacks nor send a component's state.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import (
    Button,
    ButtonGroup,
    Checkbox,
    Multiselect,
    NumberInput,
    Radio,
    Selectbox,
    SelectSlider,
    Slider,
    TextArea,
    TextInput,
    Toggle,
    UnknownElement,
    Widget,
)


@dataclass(frozen=True)
class Target:
    """One widget with a callback in the last run: its key, kind and where it lives."""

    key: str
    kind: str
    id: str
    sidebar: bool
    options: tuple[str, ...] = ()


def _walk(node: Any) -> Iterator[Any]:
    for child in getattr(node, "children", {}).values():
        yield child
        yield from _walk(child)


def _metadata(at: AppTest) -> dict[str, Any]:
    return dict(at._session_state._state._new_widget_state.widget_metadata)


def callback_widgets(at: AppTest) -> list[Target]:
    """Every enabled widget of the last run that Streamlit will call back on a change."""
    meta = _metadata(at)
    sidebar_ids = {n.id for n in _walk(at.sidebar) if isinstance(n, Widget)}
    found: dict[str, Target] = {}
    for node in _walk(at._tree):
        node_id = getattr(node, "id", None) or getattr(getattr(node, "proto", None), "id", None)
        m = meta.get(node_id) if node_id else None
        if m is None or not (m.callback is not None or m.callbacks):
            continue
        if getattr(getattr(node, "proto", None), "disabled", False) or not node.key:
            continue
        options = tuple(getattr(node, "options", ()) or ())
        kind = node.type if not isinstance(node, UnknownElement) else "component"
        found[node_id] = Target(node.key, kind, node_id, node_id in sidebar_ids, options)
    return list(found.values())


def _send(at: AppTest, widget_id: str, fill: Callable[[WidgetState], None]) -> None:
    """Rerun with ``widget_id``'s state replaced by what ``fill`` writes (as a browser would)."""
    tree = at._tree
    original = tree.get_widget_states

    def patched() -> Any:
        states = original()
        kept = [w for w in states.widgets if w.id != widget_id]
        del states.widgets[:]
        states.widgets.extend(kept)
        state = WidgetState(id=widget_id)
        fill(state)
        states.widgets.append(state)
        return states

    tree.get_widget_states = patched  # type: ignore[method-assign]
    at.run()


def _other(options: tuple[str, ...], current: str | None) -> str | None:
    """The option next to ``current`` (the one before it, else after it)."""
    if not options:
        return None
    if current not in options:
        return options[0]
    i = options.index(current)
    if len(options) == 1:
        return None
    return options[i - 1] if i > 0 else options[i + 1]


def _widget(at: AppTest, target: Target) -> Any:
    for node in _walk(at._tree):
        if (getattr(node, "id", None) or getattr(getattr(node, "proto", None), "id", None)) == target.id:
            return node
    raise LookupError(target.key)


def drive(at: AppTest, target: Target, option: str | None = None, text: str = "Birds sing at dawn.") -> bool:
    """Change the widget of ``target`` once (to ``option`` for a choice widget, if given) and
    rerun; False when it cannot change (a choice of one option)."""
    w = _widget(at, target)
    if isinstance(w, Radio | Selectbox):
        current = w.options[w.index] if w.index is not None else None
        pick = option or _other(tuple(w.options), current)
        if pick is None or pick == current:
            return False
        _send(at, w.id, lambda s: setattr(s, "string_value", pick))
    elif isinstance(w, SelectSlider | ButtonGroup):
        current_values = list(w.formatted_values) if isinstance(w, ButtonGroup) else [w.format_func(w.value)]
        pick = option or _other(tuple(w.options), current_values[0] if current_values else None)
        if pick is None or [pick] == current_values:
            return False
        _send(at, w.id, lambda s: s.string_array_value.data.extend([pick]))
    elif isinstance(w, Multiselect):
        chosen = list(w.values)
        rest = [o for o in w.options if o not in chosen]
        new = chosen[:-1] if len(chosen) > 1 else chosen + rest[:1]
        if new == chosen:
            return False
        _send(at, w.id, lambda s: s.string_array_value.data.extend(new))
    elif isinstance(w, NumberInput):
        value = w.value
        if value is None:
            w.set_value(w.min if w.min is not None else 1).run()
        elif w.min is None or value - w.step >= w.min:
            w.set_value(value - w.step).run()
        elif w.max is None or value + w.step <= w.max:
            w.set_value(value + w.step).run()
        else:
            return False
    elif isinstance(w, Slider):
        lo, hi, step = w.proto.min, w.proto.max, w.proto.step or 1
        value = w.value
        new = value - step if value - step >= lo else value + step
        if not lo <= new <= hi or new == value:
            return False
        w.set_value(type(value)(new)).run()
    elif isinstance(w, Checkbox | Toggle):
        w.set_value(not w.value).run()
    elif isinstance(w, TextArea | TextInput):
        if w.value == text:
            return False
        w.input(text).run()
    elif isinstance(w, Button):
        w.click().run()
    elif isinstance(w, UnknownElement):  # the heads grid: a click on the last layer's head 1
        grid = json.loads(w.proto.json)
        pick = [max(grid["rows"] - 1, 0), min(1, grid["cols"] - 1)]
        _send(at, w.proto.id, lambda s: setattr(s, "json_value", json.dumps({"select": pick})))
    else:
        raise TypeError(f"no driver for {type(w).__name__} {target.key!r}")
    return True


CHOICES = {"radio", "selectbox", "select_slider", "button_group"}


def explore(
    at: AppTest,
    check: Callable[[AppTest, Target, str | None], None],
    *,
    keep: Callable[[Target], bool] = lambda t: True,
    max_options: int = 6,
    driven: dict[str, set[str]] | None = None,
) -> dict[str, set[str]]:
    """Drive every callback widget the page shows (those ``keep`` accepts), once each; a
    choice of at most ``max_options`` options goes through every option, and what each one
    reveals (a page's sections, a task's own setting) is driven in turn. ``check(at, target,
    option)`` runs after every change. Returns each key driven and the options it was set to."""
    driven = {} if driven is None else driven

    def find(key: str) -> Target | None:
        return next((t for t in callback_widgets(at) if t.key == key), None)

    def visit() -> None:
        while True:
            todo = [t for t in callback_widgets(at) if t.key not in driven and keep(t)]
            if not todo:
                return
            target = todo[0]
            driven[target.key] = set()
            n = len(target.options)
            if target.kind in CHOICES and 1 < n <= max_options:
                for i in (*range(1, n), 0):  # every option, ending where it started
                    now = find(target.key)
                    if now is None or len(now.options) != n:
                        break
                    option = now.options[i]  # by place: labels change with the language
                    if drive(at, now, option):
                        driven[target.key].add(option)
                        check(at, now, option)
                        visit()
            elif drive(at, target):
                driven[target.key].add("changed")
                check(at, target, None)

    visit()
    return driven

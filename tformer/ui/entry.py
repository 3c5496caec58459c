"""How a page script starts: ``with ui.page_context(__file__) as ctx:`` or ``with ui.frame(__file__)``.

Importing this module loads neither torch nor the model, so a page whose top-level imports are
only this package, figure builders and analysis starts the browser loading its chart code
(`tformer.ui.warm`) before torch is imported on a fresh server's first run.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from streamlit.runtime.scriptrunner_utils.exceptions import StopException

from .guard import no_traceback, stop_on_error
from .room import settle
from .warm import charts_prefetched

if TYPE_CHECKING:
    from .context import PageContext
    from .page_frame import Frame


@contextmanager
def page_context(
    script: str, names: Iterable[str] | None = None, *, one_layer: bool = False
) -> Iterator[PageContext]:
    """Draw the frame, then capture ``names`` (short hook names; the attention set by default)
    for the current text (``one_layer``: for the chosen layer only); the page inside the ``with`` block is guarded (an error becomes a
    short message, never a traceback)::

        with ui.page_context(__file__, ["pattern", "resid_mid"]) as ctx:
            ...

    Shows a friendly message and stops the page when there is nothing to show: invalid model
    settings, no text, a model that cannot run, a capture over the memory guard.
    """
    with charts_prefetched():
        from .context import open_page  # torch is imported from here on

        with stop_on_error(), _settled(on_return=False):
            ctx = open_page(script, names, one_layer=one_layer)
        with _settled(), no_traceback():
            yield ctx


@contextmanager
def frame(script: str) -> Iterator[Frame]:
    """The frame for a page that needs no text (pass ``__file__``); the body is guarded::

    with ui.frame(__file__) as fr:
        ...
    """
    with charts_prefetched():
        from .page_frame import draw_frame

        with stop_on_error():
            fr = draw_frame(script)
        with _settled(), no_traceback():
            yield fr


@contextmanager
def _settled(*, on_return: bool = True) -> Iterator[None]:
    """A run that ends in this block (the page drawn, or stopped on purpose: st.stop) settles a
    live class student's view (`tformer.ui.room.settle`); a rerun or a page switch does not.
    ``on_return=False``: only a stop ends the run here (the page's body is still to come)."""
    try:
        yield
    except StopException:
        settle()
        raise
    if on_return:
        settle()

"""A server that warms itself while its first visitor's browser loads the page.

`streamlit run app.py` starts nothing before the first session: its first run then imports
torch, loads the model and captures the text, after the browser has spent seconds loading
Streamlit's frontend (docs/performance.md has the figures). Started as `streamlit run
serve.py` (an `st.App` around app.py), the server runs `warm_up` in a thread as soon as it
starts: the same cached calls a page makes first, so the first visitor's run finds them done
(or waits for the one still running, as Streamlit's resource cache makes a second caller of a
key wait for the first).
"""

from __future__ import annotations

import logging
import threading
import time

log = logging.getLogger("tformer.app")


THREAD = "tformer-warm-up"
READY = threading.Event()  # set when the warm-up is over, done or failed (serve.py's /tformer-ready)


def warm_up() -> float:
    """What a fresh server's first page does before its first chart, for the default model and
    text: import a page's modules, set the process up (`caches.set_threads`), load the model,
    find the head pages open on (`opening.clearest_heads`: every example text captured once) and
    capture the text as the attention pages do. Also what Streamlit and the charts load on a
    first page: pandas and pyarrow (Streamlit imports them to scan the heads grid's data for
    tables), its emoji pattern (checking the page icon) and kaleido (the image
    buttons' check). Returns the seconds it took."""
    t0 = time.perf_counter()
    import pandas  # noqa: F401
    import pyarrow  # noqa: F401
    from streamlit.string_util import is_emoji

    from ..model.capture import ATTENTION
    from ..model.pretrained import pretrained_available
    from . import context  # noqa: F401  # a page's imports: torch, the model, the figures
    from .caches import ModelChoice, get_capture, get_model, scratch_config_of, set_threads
    from .charts import image_export_ready
    from .opening import clearest_heads
    from .state import ViewState

    is_emoji("🔍")
    image_export_ready()
    set_threads()
    view = ViewState()
    choice = (
        ModelChoice("minilm") if pretrained_available() else ModelChoice("scratch", scratch_config_of(view))
    )
    get_model(choice)
    clearest_heads(choice)
    get_capture(choice, view.text, ATTENTION)
    return time.perf_counter() - t0


class _OutsideARun(logging.Filter):
    """Streamlit warns that a thread has no script run when a cached function it calls shows a
    spinner: expected of the warm-up, whose spinners nobody sees."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.threadName != THREAD


def warm_in_background() -> threading.Thread:
    """`warm_up` in a daemon thread; a failure is logged, never raised (a visitor's own run
    then does the work and shows any error where it belongs)."""

    def run() -> None:
        try:
            log.info("warmed up in %.1f s", warm_up())
        except Exception:
            log.exception("warming up failed; the first visitor's run will do it")
        finally:
            READY.set()

    logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").addFilter(_OutsideARun())
    thread = threading.Thread(target=run, name=THREAD, daemon=True)
    thread.start()
    return thread

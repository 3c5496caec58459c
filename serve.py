"""tformer's server, warmed up at start: ``streamlit run serve.py`` (instead of app.py).

The same app (app.py and pages/), served by an ``st.App`` whose start-up loads torch, the
model and a first capture in a thread (`tformer.ui.startup`), while the first visitor's browser
is still loading Streamlit's frontend. ``GET /tformer-ready`` answers 200 once that is over
(503 before): a deployment can wait for it before sending a class.
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import streamlit as st
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route


@asynccontextmanager
async def _warm_up(_app: st.App) -> AsyncIterator[None]:
    from tformer.ui.startup import warm_in_background

    warm_in_background()
    yield


async def _ready(_request: Request) -> PlainTextResponse:
    from tformer.ui.startup import READY

    return PlainTextResponse("ready", 200) if READY.is_set() else PlainTextResponse("warming up", 503)


app = st.App("app.py", lifespan=_warm_up, routes=[Route("/tformer-ready", _ready)])

"""A live class: the teacher opens a room (its join code, link and QR code, the students present,
the answers as they arrive, closing it); a student joins one with the code and a display name
and from then on follows the teacher's screen (`tformer.ui.room`)."""

import streamlit as st

from tformer import ui
from tformer.i18n import tr
from tformer.ui import room

with ui.frame(__file__):
    from tformer.ui.views import classroom as view

    problem = view.unavailable()
    t = room.ticket()
    if problem is not None and t is None and room.seat() is None:
        st.warning(ui.plain(problem, 400), icon="⚠️")
        st.caption(tr("Everything else in the app works without rooms."))
    elif t is not None:
        view.teacher_panel(t)
    elif room.seat() is not None:
        view.student_panel()
    else:
        teach, join = st.columns(2, gap="large")
        with teach:
            view.open_panel()
        with join:
            view.join_panel()

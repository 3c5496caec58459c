"""Training: an encoder trained from scratch on a synthetic task, the lesson's chapter on how
heads form. ``tasks`` makes the data (copy, reverse, sort, ...), ``recipe`` holds the settings
and the learning-rate schedule, ``trainer`` does one optimizer step at a time, ``checkpoints``
saves and loads a run, and ``runs`` keeps training in the background of the app.

This package's own namespace stays empty on purpose: ``tasks``, ``recipe`` and ``runs`` load no
torch and ``trainer`` and ``checkpoints`` do, so names re-exported here would make every import
of the first three load torch. Import the names from their module
(``from tformer.training.recipe import Recipe``).
"""

from __future__ import annotations

__all__: list[str] = []

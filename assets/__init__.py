"""Example texts and lessons, installed as the package data folder ``tformer.assets``.

Read them with `tformer.assets_path` (importlib.resources), never by a path relative to the repo.
"""

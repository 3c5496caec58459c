"""The start page's view: none of its own; it draws the lessons (`tformer.ui.lessons`) and the
registry's lesson map, both shared."""

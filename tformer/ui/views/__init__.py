"""Each page's room: ``views/<key>.py`` (or a package ``views/<key>/`` when the page has parts
that stand on their own, a worker beside its compute) holds the cached compute and the widget
helpers of the page whose registry key is ``<key>``, and nothing another page draws from the
app layer's root (`tformer.ui`: the frame, shared widgets, caches, the view state, the registry,
share links, language). The page's own choices are its state class in `tformer.ui.state`, which
its registry entry names.

A page script imports its view inside its ``with ui.page_context(...)`` (or ``ui.frame``) block,
after the frame: a view loads torch, and a fresh server's first page starts the browser's chart
code before torch is imported (`tformer.ui.warm`). docs/adding-a-page.md lists the steps for a
new page; tests/test_rooms_of_pages.py checks that every registered page has its pieces.
"""

"""The Attention page's view: none of its own; the page draws from the shared widgets
(`tformer.ui.context`: the head picker, the matrix switch, the overview)."""

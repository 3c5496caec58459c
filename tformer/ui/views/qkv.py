"""The Q, K, V page's view: none of its own; the page draws from the shared widgets
(`tformer.ui.context`)."""

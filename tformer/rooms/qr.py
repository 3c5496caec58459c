"""The join link and its QR code, drawn here (segno, pure Python): no request to any host."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlencode, urlsplit, urlunsplit

from . import errors as E
from .errors import InvalidInput
from .limits import JOIN_PARAM, MAX_LINK_CHARS
from .rules import format_code

if TYPE_CHECKING:  # pragma: no cover - typing only
    import segno

__all__ = ["join_link", "join_qr", "qr_matrix"]


def join_link(base_url: str, code: str, page: str = "") -> str:
    """The link students open: ``base_url`` (the app's address as the browser sees it, any path
    and query dropped) + ``page`` + ``?room=ABCD-2345``."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"the app's address must be an http(s) URL, not {base_url[:80]!r}")
    root = parts.path.rsplit("/", 1)[0] if parts.path else ""
    path = f"{root}/{page.strip('/')}" if page.strip("/") else (root or "/")
    return urlunsplit((parts.scheme, parts.netloc, path, urlencode({JOIN_PARAM: format_code(code)}), ""))


def _make(link: str) -> segno.QRCode:
    import segno

    if not isinstance(link, str) or not link:
        raise InvalidInput(E.LINK_TOO_LONG, n=0, max=MAX_LINK_CHARS)
    if len(link) > MAX_LINK_CHARS:
        raise InvalidInput(E.LINK_TOO_LONG, n=len(link), max=MAX_LINK_CHARS)
    # level M (15 % of the code may be unreadable): a projector's glare, a phone far away
    return segno.make(link, error="m", micro=False, boost_error=False)


def qr_matrix(link: str) -> tuple[tuple[bool, ...], ...]:
    """The QR code's modules, row by row (True: dark), without the quiet zone."""
    return tuple(tuple(bool(m) for m in row) for row in _make(link).matrix)


def join_qr(link: str, kind: Literal["svg", "png"] = "svg", *, scale: int = 8, border: int = 4) -> bytes:
    """The QR code of ``link`` as SVG (scales to any projector) or PNG bytes, black on white,
    with the standard quiet zone of 4 modules."""
    if kind not in ("svg", "png"):
        raise ValueError(f"kind is 'svg' or 'png', not {kind!r}")
    if not (1 <= scale <= 64 and 0 <= border <= 16):
        raise ValueError(f"scale={scale} must be in 1..64 and border={border} in 0..16")
    out = io.BytesIO()
    options = {"xmldecl": False, "svgclass": None, "lineclass": None} if kind == "svg" else {}
    _make(link).save(out, kind=kind, scale=scale, border=border, dark="#000", light="#fff", **options)
    return out.getvalue()

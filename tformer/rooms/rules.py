"""The rules both stores apply before touching storage: codes, secrets, names, answers, views.

Kept apart from the stores so that the in-process store and the Redis store refuse exactly the
same input with exactly the same message, and so that nothing a student typed reaches storage
unbounded.

Why a join code is not guessable in practice: a code is 8 characters drawn with `secrets` from
30, so there are 30**8 ≈ 6.6e11 codes, while a store holds at most ``max_rooms`` (200) open
rooms, each living only while used (it expires after ``idle_s`` without activity, or when its
teacher closes it). Every guess is one join attempt, a full script run of the app over a
websocket: a replica serves tens of those a second. A guesser making 100 attempts a second for
a three-hour lecture (1.1e6 guesses) finds one of 200 open rooms with probability
1.1e6 * 200 / 6.6e11 ≈ 3e-4, and finding a room only lets them sit in it as a student: the
teacher's token (192 random bits) is what drives or closes a room.

The teacher key (12 characters from the same 30: 30**12 ≈ 5.3e17) takes a room back after the
teacher's session was lost. Its tries are limited per room (`RoomLimits.key_tries`: 5 wrong
keys, then one per 10 s): a three-hour lecture allows about 1,100 wrong keys, a chance of
2e-15 to hit the one (without the limit, 100 tries a second would take 8e7 years on average).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import unicodedata
from collections.abc import Mapping

from . import errors as E
from .errors import InvalidInput
from .limits import (
    CODE_ALPHABET,
    CODE_LENGTH,
    SEAT_BYTES,
    TEACHER_KEY_LENGTH,
    TEACHER_TOKEN_BYTES,
    RoomLimits,
)

__all__ = [
    "check_seat",
    "check_step",
    "clean_answer",
    "clean_name",
    "decode_view",
    "encode_view",
    "format_code",
    "format_key",
    "name_key",
    "new_code",
    "new_seat",
    "new_teacher_key",
    "new_teacher_token",
    "normalize_code",
    "normalize_key",
    "token_digest",
    "token_matches",
]

_STEP = re.compile(r"[A-Za-z0-9_.:\-]+")
_VIEW_KEY = re.compile(r"[A-Za-z0-9_.\-]+")
_SEAT = re.compile(r"[A-Za-z0-9_\-]{16,64}")
_EXAMPLE = "ABCD-2345"
_KEY_EXAMPLE = "K7QM-X2P9-H4TW"
# Kept although they are format characters: they join the letters of some scripts and the
# parts of emoji (family, flags of regions), so removing them changes what a name says.
_KEEP_FORMAT = {"\u200c", "\u200d"} | {chr(c) for c in range(0xE0020, 0xE0080)}


# --- codes and secrets --------------------------------------------------------------------------


def new_code() -> str:
    """A fresh join code (normalized form: 8 characters, no dash)."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normalize_code(code: str) -> str:
    """The code as stored: upper case, spaces and dashes dropped. Raises InvalidInput."""
    if not isinstance(code, str):
        raise TypeError(f"a join code is a str, not {type(code).__name__}")
    shown = code[:40]
    cleaned = re.sub(r"[\s\-]", "", code[:200]).upper()
    if len(cleaned) != CODE_LENGTH or any(c not in CODE_ALPHABET for c in cleaned):
        raise InvalidInput(E.BAD_CODE, code=shown, n=CODE_LENGTH, example=_EXAMPLE)
    return cleaned


def format_code(code: str) -> str:
    """The code as shown and read aloud: ``ABCD-2345``."""
    c = normalize_code(code)
    half = CODE_LENGTH // 2
    return f"{c[:half]}-{c[half:]}"


def new_teacher_token() -> str:
    return secrets.token_urlsafe(TEACHER_TOKEN_BYTES)


def new_teacher_key() -> str:
    """A fresh teacher key (normalized: 12 characters, no dashes)."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(TEACHER_KEY_LENGTH))


def normalize_key(key: object) -> str:
    """A teacher key as typed (any case, spaces or dashes) in its stored form. Raises
    InvalidInput, whose message never repeats what was typed (a near miss of the real key
    must not reach the screen or a log)."""
    if not isinstance(key, str):
        raise TypeError(f"a teacher key is a str, not {type(key).__name__}")
    cleaned = re.sub(r"[\s\-]", "", key[:200]).upper()
    if len(cleaned) != TEACHER_KEY_LENGTH or any(c not in CODE_ALPHABET for c in cleaned):
        raise InvalidInput(E.BAD_KEY, n=TEACHER_KEY_LENGTH, example=_KEY_EXAMPLE)
    return cleaned


def format_key(key: str) -> str:
    """The key as shown to its teacher: ``ABCD-2345-EFGH``."""
    k = normalize_key(key)
    return "-".join(k[i : i + 4] for i in range(0, TEACHER_KEY_LENGTH, 4))


def new_seat() -> str:
    return secrets.token_urlsafe(SEAT_BYTES)


def token_digest(token: str) -> str:
    """What a store keeps of a teacher token: its SHA-256, so a dump of the store drives no room."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def token_matches(token: object, digest: str | None) -> bool:
    """Whether ``token`` is the one whose digest is kept, in time independent of where they differ."""
    if not isinstance(token, str) or not token or digest is None:
        return False
    return hmac.compare_digest(token_digest(token), digest)


def check_seat(seat: object) -> str:
    """A seat id as `new_seat` makes them. Raises InvalidInput."""
    if not isinstance(seat, str) or not _SEAT.fullmatch(seat):
        raise InvalidInput(E.BAD_SEAT)
    return seat


# --- what students type -------------------------------------------------------------------------


def _clean_text(text: object, max_chars: int) -> tuple[str, bool]:
    """(cleaned, cut): NFC, control characters gone (line breaks and tabs become spaces), runs
    of white space made one space, trimmed; ``cut`` says the input was far over ``max_chars``.
    Invisible format characters (bidirectional overrides, zero-width spaces) are removed too:
    they can make a name look like another or reverse the text after it. The result is stored
    as given and must still be escaped wherever it is shown."""
    if not isinstance(text, str):
        raise TypeError(f"expected a str, not {type(text).__name__}")
    raw = text[: max_chars * 8 + 64]  # bound the work before looking at every character
    out = []
    for ch in unicodedata.normalize("NFC", raw):
        cat = unicodedata.category(ch)
        if ch.isspace():
            out.append(" ")
        elif cat in ("Cc", "Cs") or (cat == "Cf" and ch not in _KEEP_FORMAT):
            continue
        else:
            out.append(ch)
    return " ".join("".join(out).split()), len(raw) < len(text)


def clean_name(name: object, limits: RoomLimits) -> str:
    """A display name as stored. Raises InvalidInput when empty or longer than the limit."""
    cleaned, cut = _clean_text(name, limits.max_name_chars)
    if not cleaned:
        raise InvalidInput(E.NAME_EMPTY)
    if cut or len(cleaned) > limits.max_name_chars:
        raise InvalidInput(E.NAME_TOO_LONG, n=limits.max_name_chars)
    return cleaned


def name_key(name: str) -> str:
    """Two names that read the same to a class are one name: case-folded, compatibility-normalized."""
    return unicodedata.normalize("NFKC", name).casefold()


def clean_answer(answer: object, limits: RoomLimits) -> str:
    """An answer as stored and counted. Raises InvalidInput when empty or too long."""
    cleaned, cut = _clean_text(answer, limits.max_answer_chars)
    if not cleaned:
        raise InvalidInput(E.ANSWER_EMPTY)
    if cut or len(cleaned) > limits.max_answer_chars:
        raise InvalidInput(E.ANSWER_TOO_LONG, n=limits.max_answer_chars)
    return cleaned


def check_step(step: object, limits: RoomLimits) -> str:
    """A question id (e.g. ``attention-basics:3``). Raises InvalidInput."""
    if not isinstance(step, str) or len(step) > limits.max_step_chars or not _STEP.fullmatch(step):
        shown = step[:40] if isinstance(step, str) else repr(step)[:40]
        raise InvalidInput(E.BAD_STEP, step=shown, n=limits.max_step_chars)
    return step


# --- what the teacher shares --------------------------------------------------------------------


def encode_view(params: Mapping[str, str], limits: RoomLimits) -> str:
    """The teacher's view as canonical JSON (sorted keys), so an unchanged view encodes the same
    and is not published again. Values are kept as given: the app reads them back through its
    share-link parser, which checks each against its field's type and bounds."""
    if not isinstance(params, Mapping):
        raise TypeError(f"a view is a mapping of str to str, not {type(params).__name__}")
    if len(params) > limits.max_view_params:
        raise InvalidInput(E.VIEW_TOO_MANY, count=len(params), n=limits.max_view_params)
    for key, value in params.items():
        if not isinstance(key, str) or len(key) > limits.max_view_key_chars or not _VIEW_KEY.fullmatch(key):
            shown = key[:40] if isinstance(key, str) else repr(key)[:40]
            raise InvalidInput(E.VIEW_BAD_KEY, key=shown, n=limits.max_view_key_chars)
        if not isinstance(value, str):
            raise InvalidInput(E.VIEW_NOT_TEXT, key=key)
        if len(value) > limits.max_view_bytes:  # before encoding a huge value
            raise _too_big(len(value), limits)
    text = json.dumps(dict(params), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate: not text any browser sent
        raise InvalidInput(E.VIEW_NOT_TEXT, key="?") from None
    if size > limits.max_view_bytes:
        raise _too_big(size, limits)
    return text


def _too_big(size: int, limits: RoomLimits) -> InvalidInput:
    return InvalidInput(E.VIEW_TOO_BIG, size=-(-size // 1024), n=limits.max_view_bytes // 1024)


def decode_view(text: str) -> dict[str, str]:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("a stored view is a JSON object")
    return {str(k): str(v) for k, v in value.items()}

"""Tokenizers: text -> token ids plus the labels the figures show on their axes.

`Tokenizer` wraps a `tokenizers.Tokenizer` (a ``tokenizer.json``) and returns `Encoded`, which
keeps three views of every position side by side:

- ``ids``: what the model reads;
- ``tokens``: the vocabulary pieces (``"##ing"``, ``"[UNK]"``);
- ``labels``: what a person should read on an axis. A label is the slice of the input text the
  token came from (``offsets``), so Chinese stays readable and case is kept, with what the
  model saw marked on it: a piece that continues a word keeps the vocabulary's ``##``
  (``"Una ##ffa ##ble"``: three tokens, one word) and a token the vocabulary does not have, which
  the model reads as ``[UNK]``, shows its characters followed by ``?`` (`UNK_MARK`: ``"爱?"``).
  Specials show their name (``"[CLS]"``). Whitespace, control and invisible format characters
  are replaced by visible stand-ins.

`scratch_tokenizer()` loads the offline WordPiece vocabulary shipped in ``tformer/data`` (built by
``scripts/build_scratch_tokenizer.py``): common English words and every CJK character of the
basic block are one token each, rarer words fall back on learned ``##`` pieces.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

import tokenizers

__all__ = ["SCRATCH_TOKENIZER_FILE", "UNK_MARK", "Encoded", "Tokenizer", "scratch_tokenizer", "visible_label"]

SCRATCH_TOKENIZER_FILE = "scratch_tokenizer.json"
# Follows the characters of a token the model reads as [UNK]: "爱?" (MiniLM knows few Chinese
# characters; an axis that printed them bare would claim the model read them).
UNK_MARK = "?"

# Texts up to this many characters are tokenized whole, so n_input_tokens is exact.
# Longer texts are tokenized from a prefix just long enough to fill max_len (see Tokenizer.encode).
EXACT_COUNT_CHARS = 20_000
# Word ends `Tokenizer.head` tries before it shortens token by token (each try encodes the text).
MAX_HEAD_TRIES = 8

_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Encoded:
    """One encoded text. All per-position lists have the same length, ``len(ids) <= max_len``."""

    ids: list[int]  # [pos] vocabulary ids, specials included
    tokens: list[str]  # [pos] vocabulary pieces, e.g. "[CLS]", "trans", "##former"
    labels: list[str]  # [pos] display labels: the text each token came from, made visible, "##" / "?" marked
    offsets: list[tuple[int, int]]  # [pos] (start, end) character span in the text; (0, 0) for specials
    special: list[bool]  # [pos] True for the specials the post-processor added ([CLS], [SEP])
    truncated: bool  # the text had more than max_len tokens; the tail was dropped, [SEP] kept
    n_input_tokens: int  # token count before truncation, specials included (a lower bound if not exact)
    n_input_exact: bool = True  # False when a very long text was only tokenized as far as needed
    n_pad: int = 0  # padding positions at the end (see `padded`); they are not part of the text

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def n_real(self) -> int:
        """Positions that hold the text and its specials, padding excluded."""
        return len(self.ids) - self.n_pad

    @property
    def attention_mask(self) -> list[int]:
        """[pos] 1 for a real token, 0 for padding: the model's ``attention_mask`` row."""
        return [1] * self.n_real + [0] * self.n_pad

    def padded(self, n: int, pad_id: int, pad_token: str = "[PAD]", pad_label: str = "[PAD]") -> Encoded:
        """This text padded at the end to ``n`` positions with ``pad_id`` (shown as ``pad_label``).

        Pads count as specials (as in the tokenizers library's special_tokens_mask) with the
        empty span (0, 0). A model must be told which positions are padding: pass
        `attention_mask` along with the ids.
        """
        extra = n - len(self.ids)
        if extra < 0:
            raise ValueError(f"cannot pad {len(self.ids)} positions to n={n}: n is shorter")
        if extra == 0:
            return self
        return replace(
            self,
            ids=self.ids + [pad_id] * extra,
            tokens=self.tokens + [pad_token] * extra,
            labels=self.labels + [pad_label] * extra,
            offsets=self.offsets + [(0, 0)] * extra,
            special=self.special + [True] * extra,
            n_pad=self.n_pad + extra,
        )

    @property
    def leading_special(self) -> int | None:
        """Position of the special the tokenizer puts before the text (BERT's [CLS]), or None."""
        return 0 if self.special and self.special[0] else None

    @property
    def trailing_specials(self) -> list[int]:
        """Positions of the specials the tokenizer puts after the text (BERT's [SEP])."""
        start = 0 if self.leading_special is None else 1
        return [i for i in range(start, self.n_real) if self.special[i]]


# --- display labels ---------------------------------------------------------------------------

_OPEN_BOX = "\u2423"  # ␣ stands for a space
_NEWLINE_PICTURE = "\u2424"  # ␤ for line and paragraph separators
_DOTTED_CIRCLE = "\u25cc"  # ◌ carries a combining mark that has no base character
_EMPTY = "\u2205"  # ∅ for a token that covers no text at all
# Format characters that join or shape the visible text around them; kept when other text is there.
_JOINERS = {0x200C, 0x200D}  # zero-width non-joiner, zero-width joiner (emoji sequences, Persian)
# Letters and symbols that render as blank space although they are not whitespace.
_BLANK_LOOKING = {0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x034F, 0x180E}


def _code(cp: int) -> str:
    return f"\u27e8U+{cp:04X}\u27e9"  # ⟨U+200B⟩


def _keep_tag(cp: int) -> bool:
    return 0xE0020 <= cp <= 0xE007F  # emoji tag sequences (subdivision flags)


def visible_label(text: str) -> str:
    """Make a slice of input text safe to show as one axis label.

    C0 controls become the U+2400 control pictures (tab -> ␉, newline -> ␊), spaces become ␣,
    other controls, bidi overrides, zero-width characters and lone surrogates become ``⟨U+XXXX⟩``
    (a bidi override in a tick label would reorder the labels around it). A label made only of
    combining marks gets a dotted circle to sit on; an empty one becomes ∅. Plain text, no HTML
    escaping: figure builders escape.
    """
    out: list[str] = []
    has_base = False  # something that renders on its own (not a mark, not a joiner)
    has_mark = False
    for ch in text:
        cp = ord(ch)
        cat = unicodedata.category(ch)
        if cp < 0x20:
            out.append(chr(0x2400 + cp))
            has_base = True
        elif cp == 0x7F:
            out.append("\u2421")  # ␡
            has_base = True
        elif cat == "Zs":
            out.append(_OPEN_BOX)
            has_base = True
        elif cat in ("Zl", "Zp"):
            out.append(_NEWLINE_PICTURE)
            has_base = True
        elif cat in ("Cc", "Cs") or cp in _BLANK_LOOKING:
            out.append(_code(cp))
            has_base = True
        elif cat == "Cf":
            if cp in _JOINERS or _keep_tag(cp):
                out.append(ch)
            else:
                out.append(_code(cp))
                has_base = True
        elif cat in ("Mn", "Me"):
            out.append(ch)
            has_mark = True
        else:
            out.append(ch)
            has_base = True
    if has_base:
        return "".join(out)
    if has_mark:
        # Combining marks alone: give them a base. Joiners among them become visible codes.
        return _DOTTED_CIRCLE + "".join(
            c if unicodedata.category(c) in ("Mn", "Me") else _code(ord(c)) for c in out
        )
    if out:  # only joiners / tag characters: nothing would render
        return "".join(_code(ord(c)) for c in out)
    return _EMPTY


# --- the tokenizer -------------------------------------------------------------------------------


class Tokenizer:
    """A ``tokenizers.Tokenizer`` with padding and truncation off, and our own truncation.

    Thread-safe for ``encode`` (the wrapped tokenizer is only read after construction), so one
    cached instance can serve several Streamlit sessions.
    """

    def __init__(self, tokenizer: tokenizers.Tokenizer, max_len: int) -> None:
        """Wrap ``tokenizer`` (which is modified: its padding and truncation are switched off)."""
        padding = tokenizer.padding
        # tokenizer.json files often pad to a fixed length and truncate (MiniLM: 128): the model
        # must see exactly the tokens of the text, and we truncate to max_len ourselves below.
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self._tok = tokenizer
        self._n_special = tokenizer.num_special_tokens_to_add(is_pair=False)
        if not isinstance(max_len, int) or max_len <= self._n_special:
            raise ValueError(
                f"max_len={max_len!r} leaves no room for text: this tokenizer adds "
                f"{self._n_special} special tokens"
            )
        self._max_len = max_len
        self._pad_id = self._find_pad_id(padding)
        self._cls_token, self._sep_token = self._find_specials()
        model = self._tok.model
        unk = getattr(model, "unk_token", None)
        self._unk_token = unk if isinstance(unk, str) else None
        # WordPiece's "##": labels keep it on the pieces that continue a word
        piece = getattr(model, "continuing_subword_prefix", None)
        self._piece_prefix = piece if isinstance(piece, str) else ""

    @classmethod
    def from_file(cls, path: str | Path, max_len: int) -> Tokenizer:
        """Load a ``tokenizer.json``; raises ValueError naming the file if it cannot be read."""
        path = Path(path)
        try:
            tok = tokenizers.Tokenizer.from_file(str(path))
        except Exception as exc:  # the library raises a bare Exception for bad JSON and missing files
            raise ValueError(f"cannot load tokenizer file {path}: {exc}") from exc
        return cls(tok, max_len)

    @classmethod
    def from_str(cls, json_text: str, max_len: int, source: str = "<string>") -> Tokenizer:
        try:
            tok = tokenizers.Tokenizer.from_str(json_text)
        except Exception as exc:
            raise ValueError(f"cannot load tokenizer from {source}: {exc}") from exc
        return cls(tok, max_len)

    # --- properties ----------------------------------------------------------------------------

    @property
    def max_len(self) -> int:
        """Most positions `encode` returns, specials included."""
        return self._max_len

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    @property
    def pad_id(self) -> int | None:
        return self._pad_id

    @property
    def pad_token(self) -> str | None:
        """The padding token (``"[PAD]"``: id 0 in MiniLM's and the scratch vocabulary), or None."""
        return None if self._pad_id is None else self._tok.id_to_token(self._pad_id)

    @property
    def unk_id(self) -> int | None:
        """Id of the token for text outside the vocabulary (``"[UNK]"``), None if it has none."""
        unk = getattr(self._tok.model, "unk_token", None)
        return self._tok.token_to_id(unk) if isinstance(unk, str) else None

    @property
    def cls_token(self) -> str | None:
        """The special put before the text (``"[CLS]"``), None if the post-processor adds none."""
        return self._cls_token

    @property
    def sep_token(self) -> str | None:
        """The special put after the text (``"[SEP]"``), None if the post-processor adds none."""
        return self._sep_token

    @property
    def n_special(self) -> int:
        """Specials added around one text (2 for ``[CLS] A [SEP]``)."""
        return self._n_special

    @property
    def backend(self) -> tokenizers.Tokenizer:
        """The wrapped ``tokenizers.Tokenizer`` (do not re-enable padding or truncation on it)."""
        return self._tok

    def id_to_token(self, token_id: int) -> str | None:
        return self._tok.id_to_token(token_id)

    def token_to_id(self, token: str) -> int | None:
        return self._tok.token_to_id(token)

    def __repr__(self) -> str:
        return (
            f"Tokenizer(vocab_size={self.vocab_size}, max_len={self.max_len}, "
            f"cls={self.cls_token!r}, sep={self.sep_token!r})"
        )

    # --- encoding ------------------------------------------------------------------------------

    def encode(self, text: str) -> Encoded:
        """Tokenize ``text``; keep at most ``max_len`` positions, always with the closing special.

        Long texts: the ids of a text longer than ``EXACT_COUNT_CHARS`` come from a prefix of it,
        grown until the kept tokens can no longer change (every kept token lies in a word that
        ends before the last two words of the prefix; cutting the text only alters the word it
        cuts). The result is the same as tokenizing everything and truncating. ``n_input_tokens``
        is then a lower bound and ``n_input_exact`` is False.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be str, got {type(text).__name__}")
        # Lone surrogates cannot be encoded to UTF-8; U+FFFD is one character too, so offsets hold.
        safe = _SURROGATE.sub("\ufffd", text)
        budget = self._max_len - self._n_special  # content tokens that fit

        content, total, exact = self._content_tokens(safe, budget)
        truncated = total > budget
        if truncated:
            content.truncate(budget)
        enc = self._tok.post_process(content, None, add_special_tokens=True)

        ids = list(enc.ids)
        tokens = list(enc.tokens)
        offsets = [(int(o[0]), int(o[1])) for o in enc.offsets]
        special = [bool(m) for m in enc.special_tokens_mask]
        labels = [
            self._label(text, tok, off, sp) for tok, off, sp in zip(tokens, offsets, special, strict=True)
        ]
        return Encoded(
            ids=ids,
            tokens=tokens,
            labels=labels,
            offsets=offsets,
            special=special,
            truncated=truncated,
            n_input_tokens=total + self._n_special,
            n_input_exact=exact,
        )

    def head(self, text: str, n_tokens: int) -> str:
        """The start of ``text`` that encodes to at most ``n_tokens`` positions (specials
        included): ``text`` itself when it fits, else cut where its last whole word that fits
        ends, so the kept tokens are the text's first ones (a word cut between two of its pieces
        could encode differently). A page that shows fewer tokens than the model reads keeps
        this part of the text. Empty when not even the first word fits.
        """
        if not isinstance(n_tokens, int) or n_tokens <= self._n_special:
            raise ValueError(
                f"n_tokens={n_tokens!r} leaves no room for text: this tokenizer adds {self._n_special} specials"
            )
        enc = self.encode(text)
        if len(enc.ids) <= n_tokens and not enc.truncated:
            return text
        content = [i for i, special in enumerate(enc.special) if not special]
        prefix = self._piece_prefix
        tries = 0
        for keep in range(min(n_tokens - self._n_special, len(content)), 0, -1):
            if keep < len(content) and prefix and enc.tokens[content[keep]].startswith(prefix):
                continue  # the next token continues this word: the cut would split it
            start = text[: enc.offsets[content[keep - 1]][1]]
            if len(self.encode(start).ids) <= n_tokens:
                return start
            tries += 1
            if tries == MAX_HEAD_TRIES:
                return self._cut_tokens(start, n_tokens)
        return ""

    def _cut_tokens(self, text: str, n_tokens: int) -> str:
        """``text`` shortened token by token until it encodes to at most ``n_tokens``: the
        fallback of `head` for a text whose word ends all re-encode longer."""
        while text and len(self.encode(text).ids) > n_tokens:
            enc = self.encode(text)
            last = max((i for i, special in enumerate(enc.special) if not special), default=None)
            text = "" if last is None else text[: enc.offsets[last][0]]
        return text

    def _content_tokens(self, text: str, budget: int) -> tuple[tokenizers.Encoding, int, bool]:
        """Encoding of the text without specials, its full (or lower-bound) length, exactness."""
        if len(text) > EXACT_COUNT_CHARS:
            # Characters per token is rarely above ~10; start generous, grow 4x when unsure.
            n_chars = max(4096, 16 * budget)
            while n_chars < len(text):
                enc = self._tok.encode(text[:n_chars], add_special_tokens=False)
                word_ids = enc.word_ids
                last = max((w for w in word_ids if w is not None), default=None)
                if last is not None:
                    # Tokens of every word but the last two cannot depend on where we cut.
                    stable = sum(1 for w in word_ids if w is not None and w < last - 1)
                    if stable >= budget + 1:
                        # Lower bound on the full count: the last two words give >= 1 token each.
                        tail_words = len({w for w in word_ids if w is not None and w >= last - 1})
                        return enc, stable + tail_words, False
                n_chars *= 4
        enc = self._tok.encode(text, add_special_tokens=False)
        return enc, len(enc.ids), True

    def _label(self, text: str, token: str, offset: tuple[int, int], special: bool) -> str:
        if special:
            return token
        start, end = offset
        span = text[start:end]
        prefix = self._piece_prefix
        continues = bool(prefix) and token.startswith(prefix) and len(token) > len(prefix)
        if not span:
            # A token that covers no characters (a normalizer inserted it): fall back on its piece.
            span = token[len(prefix) :] if continues else token
        label = visible_label(span)
        if token == self._unk_token:
            return label + UNK_MARK
        return prefix + label if continues else label

    # --- helpers -------------------------------------------------------------------------------

    def _find_pad_id(self, padding: dict[str, Any] | None) -> int | None:
        if padding and padding.get("pad_token") is not None:
            found = self._tok.token_to_id(padding["pad_token"])
            if found is not None:
                return found
        for name in ("[PAD]", "<pad>", "<PAD>"):
            found = self._tok.token_to_id(name)
            if found is not None:
                return found
        return None

    def _find_specials(self) -> tuple[str | None, str | None]:
        """Names of the specials the post-processor puts before and after a text."""
        probe = self._tok.encode("a", add_special_tokens=True)
        tokens, mask = probe.tokens, probe.special_tokens_mask
        first_content = next((i for i, m in enumerate(mask) if not m), len(mask))
        last_content = max((i for i, m in enumerate(mask) if not m), default=-1)
        before = [tokens[i] for i in range(first_content) if mask[i]]
        after = [tokens[i] for i in range(last_content + 1, len(mask)) if mask[i]]
        return (before[0] if before else None), (after[-1] if after else None)


@functools.lru_cache(maxsize=8)
def scratch_tokenizer(max_len: int = 512) -> Tokenizer:
    """The offline WordPiece tokenizer for from-scratch models: 39,430 tokens, no download.

    Ids 0..4 are [PAD] [UNK] [CLS] [SEP] [MASK] and a text becomes ``[CLS] text [SEP]``. The
    vocabulary holds 3,905 pieces learned on assets/corpus_*.txt (the fallback that spells rare
    words, ``unbelievably`` -> un ##b ##el ...); the first 16,000 whole English words of
    bert-base-uncased's vocabulary, roughly the most frequent (``animal``, ``street``,
    ``attention``: one token each); the punctuation and symbols of Chinese text (，。“” 〇 ２);
    and all 20,992 CJK Unified Ideographs U+4E00..U+9FFF plus the 12 in the compatibility block
    (every GB2312, Big5 and GBK hanzi is one token; the extension blocks, U+3400.. and U+20000..,
    give one [UNK] per character).
    ``scripts/build_scratch_tokenizer.py`` builds the file and says why each part is there.

    Cached: the app asks for it on every rerun, and `Tokenizer.encode` is thread-safe."""
    source = resources.files("tformer").joinpath("data").joinpath(SCRATCH_TOKENIZER_FILE)
    return Tokenizer.from_str(source.read_text(encoding="utf-8"), max_len, source=str(source))

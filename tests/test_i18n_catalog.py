"""The Chinese catalog against its English templates: a translation changes the words, not what
the interface draws from the markup. Plotly and markdown render ``<sub>``, ``<span style>``,
``<b>``, `code` and $math$; str.format fills {fields}. A translation that writes ``XW_Q`` for
``XW<sub>Q</sub>`` shows a literal underscore where English shows a subscript."""

from __future__ import annotations

import re
import string

from tformer.i18n import catalog

_TAG = re.compile(r"</?([a-zA-Z]+)[^>]*>")
_SUB = re.compile(r"<sub>(.*?)</sub>")
_CODE = re.compile(r"`[^`]*`")
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.S)
# Tags a translation may drop: a line break (Chinese lines run longer) and a subscript written
# as a Unicode subscript character (dₖ, W₁) or reworded; every other tag carries a meaning
# (a colour, bold) and stays.
_MAY_DROP = {"br", "sub"}

ZH = sorted(catalog("zh").items())


def fields(text: str) -> set[str]:
    try:
        return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
    except ValueError:  # braces that are not fields
        return {"<not a template>"}


def markup_lost(template: str, translation: str) -> list[str]:
    """What of ``template``'s markup ``translation`` does not render the same way."""
    lost: list[str] = []
    tags = [t for t in _TAG.findall(template) if t not in _MAY_DROP]
    if sorted(tags) != sorted(t for t in _TAG.findall(translation) if t not in _MAY_DROP):
        lost.append(f"tags {tags}")
    lost.extend(
        f"<sub>{sub}</sub> written _{sub}"
        for sub in _SUB.findall(template)
        if f"_{sub}" in _TAG.sub("", translation) and f"_{sub}" not in _TAG.sub("", template)
    )
    if sorted(_MATH.findall(template)) != sorted(_MATH.findall(translation)):
        lost.append("$math$")
    lost += [f"code {c}" for c in _CODE.findall(template) if c not in translation]
    if fields(template) != fields(translation):
        lost.append(f"fields {sorted(fields(template) ^ fields(translation))}")
    return lost


def test_the_catalog_is_not_empty():
    assert len(ZH) > 500


def test_every_translation_keeps_its_templates_markup():
    lost = {t: (z, markup_lost(t, z)) for t, z in ZH if markup_lost(t, z)}
    assert not lost, lost


def test_the_check_finds_lost_markup():
    assert markup_lost("Q = XW<sub>Q</sub>", "Q=XW_Q") == ["<sub>Q</sub> written _Q"]
    assert markup_lost("with 1/√d<sub>k</sub>", "乘以 1/√dₖ") == []
    assert markup_lost("<span style='color:{red}'>red</span>", "红色") == [
        "tags ['span', 'span']",
        "fields ['red']",
    ]
    assert markup_lost("times `x` and $a_b$", "乘以 `x` 和 `y`") == ["$math$"]
    assert markup_lost("{n} tokens, {m} heads", "{n} 个") == ["fields ['m']"]

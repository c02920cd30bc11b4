"""Who said a transcript line, and whether a query names them.

Memories imported from a conversation with several people ("Caroline: I went to a support group
yesterday") carry their speaker as a leading label. A question that names a person ("What did
Caroline research?") is nearly always answered by that person's own lines, while the words of
the question match the other speaker's replies just as well ("That's great, Caroline! What
did you research?"). On LoCoMo 96% of the evidence turns of questions naming one speaker are
that speaker's lines, against 59% of what hybrid search ranked in the top 20; retrieval gives
memories whose speaker the query names a relevance boost (``Settings.speaker_match_boost``).

A label is only taken when it looks like a name: one to three words, each starting with a
capital letter (or a short run of CJK characters), no digits, and not a common heading such
as "Note:" or "Subject:". Anything else (a time "10:30", a URL, "TODO:") is no speaker.
"""
from __future__ import annotations

import re
from functools import lru_cache

from memory_core.text.lang import CJK_CLASS

__all__ = ["speaker_label", "query_names_speaker"]

_NAME_WORD = r"[A-ZÀ-ÖØ-Þ][\w'’.\-]{0,24}"
_LABEL_RE = re.compile(
    rf"^\s*(?P<label>{_NAME_WORD}(?:[ \t]{_NAME_WORD}){{0,2}}|[{CJK_CLASS}]{{1,8}})\s*[:：]\s*\S"
)
# Leading labels that are headings, not people.
_NOT_SPEAKERS = frozenset(
    """note notes todo to-do re fw fwd subject summary reminder tip warning error question answer
    q a update edit ps p.s. nb attention important info fyi date time title tl;dr
    user assistant system bot ai 注意 提醒 备注 问题 回答 总结 更新 标题""".split()
)


def speaker_label(content: str) -> str | None:
    """The name a transcript line opens with (``"Caroline: …"`` -> ``"Caroline"``), or None."""
    match = _LABEL_RE.match(content[:80])
    if match is None:
        return None
    label = match.group("label").strip()
    if label.casefold() in _NOT_SPEAKERS or any(ch.isdigit() for ch in label):
        return None
    return label


@lru_cache(maxsize=4096)
def _label_pattern(label: str) -> re.Pattern[str]:
    if re.fullmatch(rf"[{CJK_CLASS}]+", label):
        return re.compile(re.escape(label))  # no word boundaries in Chinese
    return re.compile(rf"(?<![\w]){re.escape(label)}(?![\w])", re.IGNORECASE)


def query_names_speaker(query: str, label: str) -> bool:
    """True when ``query`` names ``label`` as a whole word (any case; "Caroline's" counts)."""
    return bool(label) and _label_pattern(label).search(query) is not None

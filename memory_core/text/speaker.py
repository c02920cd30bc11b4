"""Who said a transcript line, and whether a query names them.

Memories imported from a conversation with several people ("Caroline: I went to a support group
yesterday") carry their speaker as a leading label. A question that names a person ("What did
Caroline research?") is nearly always answered by that person's own lines, while the words of
the question match the other speaker's replies just as well ("That's great, Caroline! What
did you research?"). On LoCoMo 96% of the evidence turns of questions naming one speaker are
that speaker's lines, against 59% of what hybrid search ranked in the top 20; retrieval gives
memories whose speaker the query names a relevance boost (``Settings.speaker_match_boost``),
and its dense legs embed the question without the names that are speaker labels of the user's
memories (``name_candidates`` proposes, the store confirms, ``strip_names`` removes): e5 reads
"What exercises has John done?" mostly as "John".

A label is only taken when it looks like a name: one to three words, each starting with a
capital letter (or a short run of CJK characters), no digits, and not a common heading such
as "Note:" or "Subject:". Anything else (a time "10:30", a URL, "TODO:") is no speaker.
"""
from __future__ import annotations

import re
from functools import lru_cache

from memory_core.text.keywords import STOPWORDS
from memory_core.text.lang import CJK_CLASS

__all__ = ["speaker_label", "query_names_speaker", "name_candidates", "strip_names"]

_NAME_WORD = r"[A-ZÀ-ÖØ-Þ][\w'’.\-]{0,24}"
_LABEL_RE = re.compile(
    rf"^\s*(?P<label>{_NAME_WORD}(?:[ \t]{_NAME_WORD}){{0,2}}|[{CJK_CLASS}]{{1,8}})\s*[:：]\s*\S"
)
# Leading labels that are headings, not people.
_NOT_SPEAKERS = frozenset(
    """note notes todo to-do re fw fwd subject summary reminder tip warning error question answer
    q a update edit ps p.s. nb attention important info fyi date time title tl;dr
    user assistant system bot ai correction correct oops sorry btw also 注意 提醒 备注 问题 回答 总结 更新 标题""".split()
)


# Chinese labels that name a field of a note rather than a person: one said by "me" or "my"
# (我的..., 我妈...), or ending in a field noun.
_CJK_HEADING = re.compile(r"^[我你]|的|^(?:更正|纠正|补充|顺便说|对了)|(?:地址|电话|号码|手机|邮箱|密码|账号|时间|地点|日期|"
                          r"名字|名称|价格|生日|单号|型号|尺码|编号|备注|事项|要求|原因|结果|计划|安排|清单|目标)$")


def speaker_label(content: str) -> str | None:
    """The name a transcript line opens with (``"Caroline: …"`` -> ``"Caroline"``), or None."""
    match = _LABEL_RE.match(content[:80])
    if match is None:
        return None
    label = match.group("label").strip()
    if label.casefold() in _NOT_SPEAKERS or any(ch.isdigit() for ch in label):
        return None
    if _CJK_HEADING.search(label):
        return None  # "公司地址：朝阳区...", "我的邮箱：...": a field, not a person
    return label


@lru_cache(maxsize=4096)
def _name_pattern(name: str) -> re.Pattern[str]:
    """``name`` as a whole word in any case, with its possessive "'s" (one pattern for finding
    a name in a query and for leaving it out)."""
    if re.fullmatch(rf"[{CJK_CLASS}]+", name):
        return re.compile(re.escape(name))  # no word boundaries in Chinese
    return re.compile(rf"(?<![\w]){re.escape(name)}(?:['’]s)?(?![\w])", re.IGNORECASE)


def query_names_speaker(query: str, label: str) -> bool:
    """True when ``query`` names ``label`` as a whole word (any case; "Caroline's" counts)."""
    return bool(label) and _name_pattern(label).search(query) is not None


_CAPITALISED_RUN = re.compile(rf"(?<![\w'’.\-]){_NAME_WORD}(?:[ \t]+{_NAME_WORD}){{0,2}}")
_TRAILING = re.compile(r"(?:['’]s)?[?!,;:.]*$")
MAX_NAME_CANDIDATES = 8


def name_candidates(text: str) -> list[str]:
    """Capitalised runs of one to three words in ``text`` that could be a speaker label
    ("What did Mary Ann say?" -> "Mary Ann", "Mary", "Ann"), question words and headings left
    out; at most ``MAX_NAME_CANDIDATES``. Which of them really are speakers is the store's call."""
    found: dict[str, None] = {}
    for match in _CAPITALISED_RUN.finditer(text):
        words = match.group(0).split()
        for i in range(len(words)):
            for j in range(len(words), i, -1):
                name = " ".join(words[i:j - 1] + [_TRAILING.sub("", words[j - 1])])
                if (name and name.casefold() not in STOPWORDS and speaker_label(f"{name}: x") == name):
                    found.setdefault(name, None)
    return list(found)[:MAX_NAME_CANDIDATES]


def strip_names(text: str, names: set[str] | frozenset[str]) -> str:
    """``text`` without the given names (and their possessive "'s"); the text itself when
    nothing else would be left. The dense leg embeds a question about a speaker this way:
    "What exercises has John done?" -> "What exercises has done?" (see retrieval)."""
    if not names:
        return text
    stripped = text
    for name in sorted(names, key=len, reverse=True):
        stripped = _name_pattern(name).sub(" ", stripped)
    stripped = " ".join(stripped.split())
    return stripped if re.search(r"\w", stripped) else text

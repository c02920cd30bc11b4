"""Answer-type matching: a question that asks *when* is answered by a memory that states a time.

"When did Caroline go to the support group?" shares its words with every line about the support
group, but only "I went to a support group yesterday" answers it. Retrieval gives memories that
state a time ("yesterday", "last May", "上周六", "2023-05-07") a relevance boost when the query
asks when (``Settings.when_answer_boost``). On LoCoMo (one fp32 store), temporal questions,
boost 0 / 0.3 / 0.6 / 1.0: recall@10 .798 / .803 / .812 / .813, NDCG@10 .640 / .672 / .690 / .695; other categories
within ±.003 (they rarely ask "when").

Time detection reuses the query time parser (``parse_time_range``) on the memory's own words,
anchored at a fixed date (only *whether* a time is stated matters here), and is memoised by a
digest of the text (not the text itself: a chunk can be kilobytes), so a user's memories are
parsed once however often they are recalled.
"""
from __future__ import annotations

import hashlib
import re
import threading
from datetime import datetime, timezone

from memory_core.text.timeparse import parse_time_range

__all__ = ["asks_when", "states_time"]

_WHEN = re.compile(
    r"^\s*when\b|\bwhen\s+(?:did|was|is|will|does|do|has|have|are|were|would|should)\b|"
    r"\b(?:what|which)\s+(?:date|day|time|year|month|week(?:end)?)\b|\bhow\s+long\b|\bsince\s+when\b|"
    r"\bhow\s+many\s+(?:years|months|weeks|days)\b|"
    r"什么时候|啥时候|哪天|哪一天|几号|几月|哪年|哪一年|何时|多久|多长时间",
    re.IGNORECASE,
)
_ANCHOR = datetime(2000, 6, 15, 12, tzinfo=timezone.utc)  # any date: only whether a time is stated counts


def asks_when(query: str) -> bool:
    """True when the query asks for a time ("When did ...?", "what year ...", "什么时候")."""
    return _WHEN.search(query) is not None


_MEMO_MAX = 65536
_memo: dict[bytes, bool] = {}
_memo_lock = threading.Lock()


def states_time(text: str) -> bool:
    """True when ``text`` names a time the query parser understands (relative or absolute)."""
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    known = _memo.get(key)
    if known is not None:
        return known
    found = parse_time_range(text, _ANCHOR) is not None
    with _memo_lock:
        if len(_memo) >= _MEMO_MAX:
            _memo.clear()  # a bound, not an LRU: refilling costs one parse per memory
        _memo[key] = found
    return found

"""What a time rule is, the one ordered list of rules, and the matcher that runs them.

The rule modules (``rules_relative``, then ``rules_dates``: the package imports them in that
order) append their rules here as they are defined, so the list keeps the order of the single
module they came from; the order breaks ties between equally long matches at the same place.
The matcher lives with the list because the anchored rules parse their anchor ("May 3" in "the
week before May 3") with the whole parser.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Callable

from memory_core.text.lang import CJK_CLASS
from memory_core.text.timeparse.periods import _Ctx, _ctx
from memory_core.types import TimeRange

Span = tuple[datetime, datetime] | None
Handler = Callable[[re.Match[str], _Ctx], Span]


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    handler: Handler
    # Cheap preconditions, checked before the regex scans the text (the scans are most of the
    # parser's cost, and it runs several times on every memory written): a Chinese rule needs a
    # CJK character, and a rule with ``needs`` one of those lowercase words.
    cjk: bool = False
    needs: tuple[str, ...] = ()


_RULES: list[_Rule] = []  # filled by the rule modules, in the order they define rules
_CJK_CHAR = re.compile(f"[{CJK_CLASS}]")


def _rule(pattern: str, flags: int = 0, *, cjk: bool = False, needs: tuple[str, ...] = ()) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        _RULES.append(_Rule(re.compile(pattern, flags | re.IGNORECASE), fn, cjk, needs))
        return fn

    return register


_NB = r"(?<![A-Za-z])"  # English words must not continue another word
_NA = r"(?![A-Za-z])"
_NUMB = r"(?<!\d)"
_NUMA = r"(?!\d)"


def _hits(query: str, now: datetime) -> list[tuple[int, int, int, TimeRange]]:
    """(start, end, rule order, range) for every expression that resolves, best first:
    longest, then earliest, then the rule listed first."""
    return _hits_in(query, _ctx(now))


def _hits_in(query: str, ctx: _Ctx) -> list[tuple[int, int, int, TimeRange]]:
    hits: list[tuple[int, int, int, TimeRange]] = []
    has_cjk = _CJK_CHAR.search(query) is not None
    lower = query.lower()
    for order, rule in enumerate(_RULES):
        if (rule.cjk and not has_cjk) or (rule.needs and not any(word in lower for word in rule.needs)):
            continue
        for m in rule.pattern.finditer(query):
            if not m.group().strip():
                continue
            try:
                span = rule.handler(m, ctx)
            except (OverflowError, ValueError):  # "9999-12-31", "in 10000 years": past what dates hold
                continue  # read as no time at all, like any other expression that names none
            if span is None:
                continue
            hits.append((m.start(), m.end(), order, TimeRange(start=span[0], end=span[1], label=m.group().strip())))
    hits.sort(key=lambda h: (-(h[1] - h[0]), h[0], h[2]))
    return hits


def find_time_expressions(query: str, now: datetime) -> list[TimeRange]:
    """Every time expression in ``query`` in text order; where matches overlap, the best
    one (see :func:`_hits`) is kept and the others dropped."""
    return list(_expressions(query, _ctx(now)))


@lru_cache(maxsize=8192)
def _expressions(query: str, ctx: _Ctx) -> tuple[TimeRange, ...]:
    """``find_time_expressions`` for a day and time zone: what a text names depends on nothing
    else, so it is parsed once (a memory is parsed for its importance, its type, its told time
    and by the conflict rules, all as of the same write)."""
    taken = bytearray(len(query))
    chosen: list[tuple[int, TimeRange]] = []
    for start, end, _order, tr in _hits_in(query, ctx):
        if not any(taken[start:end]):
            taken[start:end] = b"\x01" * (end - start)
            chosen.append((start, tr))
    return tuple(tr for _, tr in sorted(chosen, key=lambda c: c[0]))


def parse_time_range(query: str, now: datetime) -> TimeRange | None:
    """The time window ``query`` asks about (half-open, aware UTC), or None if it names none.

    Overlapping matches resolve to the longest ("去年五月" over "去年"); of several separate
    expressions the first in the text wins.
    """
    found = find_time_expressions(query, now)
    return found[0] if found else None

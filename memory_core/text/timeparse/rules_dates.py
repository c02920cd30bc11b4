"""Rules for named months and dates ("last May", "May 3rd", "in 2019"), for periods anchored to a
date ("the week before May 3", "3月5日前的那个周末"), the n-th week of a month, and ranges
("between May 1 and May 9", "5月1日到5月9日")."""
from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta

from memory_core.text.timeparse.matcher import Span, _NA, _NB, _NUMA, _rule, parse_time_range
from memory_core.text.timeparse.periods import (
    _CN_NUM,
    _Ctx,
    _EN_NUM,
    _MONTHS_EN,
    _MONTH_EN,
    _WEEKDAYS_EN,
    _WEEKDAYS_ZH,
    _WEEKDAY_EN,
    _add_months,
    _at,
    _days,
    _en_number,
    _month,
    _recent_date,
    _recent_month_year,
    _safe_date,
    _year,
)

_AMBIGUOUS_LOWER = frozenset("march jan feb mar apr jun jul aug sep sept oct nov dec".split())


@_rule(_NB + r"(?:(last|this) )?(" + _MONTH_EN + r")(?:,? (?:of )?((?:19|20)\d{2}))?" + _NA)
def _en_month_name(m: re.Match[str], c: _Ctx) -> Span:
    word = m.group(2).lower()
    which = (m.group(1) or "").lower()
    if word == "may" and not which and not m.group(3):
        # "may" is mostly the modal verb; accept it only after in/since/during/of/early/late.
        before = m.string[max(0, m.start() - 12) : m.start()].lower()
        if not re.search(r"(?:in|since|during|of|early|late|mid|until|before|after)\s+$", before):
            return None
    if word in _AMBIGUOUS_LOWER and m.group(2)[0].islower() and not m.group(3) and not which:
        return None  # "we march", "jan" as a name: lowercase without a year is too ambiguous
    month = _MONTHS_EN[word]
    if m.group(3):
        return _month(c, int(m.group(3)), month)
    if which == "this":
        return _month(c, c.today.year, month)
    year = _recent_month_year(c, month)
    if which == "last" and year == c.today.year and month == c.today.month:
        year -= 1  # "last May" said in May means a year ago
    return _month(c, year, month)


@_rule(_NB + r"(?:(" + _MONTH_EN + r")\.? (\d{1,2})(?!\d)(?:st|nd|rd|th)?|(\d{1,2})(?:st|nd|rd|th)? (?:of )?(" + _MONTH_EN + r"))(?:,? ((?:19|20)\d{2}))?" + _NA)
def _en_month_day(m: re.Match[str], c: _Ctx) -> Span:
    month = _MONTHS_EN[(m.group(1) or m.group(4)).lower()]
    day = int(m.group(2) or m.group(3))
    if m.group(5):
        d = _safe_date(int(m.group(5)), month, day)
    else:
        d = _recent_date(c, month, day)
    return _days(c, d) if d else None


@_rule(_NB + r"(?:in|during|since|of) ((?:19|20)\d{2})" + _NUMA)
def _en_year_number(m: re.Match[str], c: _Ctx) -> Span:
    return _year(c, int(m.group(1)))


# ---------------------------------------------------------------- anchored to a date the text names

# "the week before August 3, 2023", "the Monday before July 24", "the last week of August 2023",
# "between August 11 and August 15 2023", "8月的最后一周", "从8月11日到8月15日": the anchor is an
# absolute date or month (parsed by the rules above), and the expression is read from it, not from
# today. Being longer, these win over the bare "last week" / "Monday" / "August 3" inside them.
_YEAR_EN = r"(?:,? (?:19|20)\d{2})?"
_ANCHOR_EN = (r"(?:(?:" + _MONTH_EN + r")\.? \d{1,2}(?!\d)(?:st|nd|rd|th)?|\d{1,2}(?:st|nd|rd|th)? (?:of )?" + _MONTH_EN
              + r")" + _YEAR_EN + r"|\d{4}-\d{1,2}-\d{1,2}|(?:" + _MONTH_EN + r")" + _YEAR_EN)
_DATE_ZH = r"(?:\d{4}\s*年\s*)?(?:\d{1,2}|" + _CN_NUM + r")\s*月(?:份)?(?:\s*(?:\d{1,2}|" + _CN_NUM + r")\s*[日号])?"
_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4, "last": -1,
             "第一": 1, "第二": 2, "第三": 3, "第四": 4, "最后一": -1, "最后": -1}


def _anchor_days(text: str, c: _Ctx) -> tuple[date, date] | None:
    """First and last local day of the absolute date or month ``text`` names."""
    tr = parse_time_range(text, datetime.combine(c.today, time(12), tzinfo=c.tz))
    if tr is None or tr.start is None or tr.end is None:
        return None
    return tr.start.astimezone(c.tz).date(), (tr.end.astimezone(c.tz) - timedelta(microseconds=1)).date()


def _relative_to(c: _Ctx, anchor: tuple[date, date], unit: str, n: int, after: bool) -> Span:
    """``n`` days / weeks / months, a weekend or a weekday before the anchor's first day or after
    its last (the weekday and weekend: the nearest one strictly outside the anchor)."""
    first, last = anchor
    if unit == "day":
        return _days(c, last + timedelta(days=n) if after else first - timedelta(days=n))
    if unit == "week":
        return _days(c, last + timedelta(days=1 + 7 * (n - 1)) if after else first - timedelta(weeks=n), 7)
    if unit == "month":
        y, mo = _add_months(first.year, first.month, n if after else -n)
        return _month(c, y, mo)
    weekday = 5 if unit == "weekend" else _WEEKDAYS_EN.get(unit, _WEEKDAYS_ZH.get(unit[-1:], 0))
    if after:
        d = last + timedelta(days=(weekday - last.weekday() - 1) % 7 + 1)
    else:
        d = first - timedelta(days=(first.weekday() - weekday - 1) % 7 + 1)
    return _days(c, d, 2 if unit == "weekend" else 1)


@_rule(_NB + r"(?:the |last |(" + _EN_NUM + r") )?(day|week|weekend|month|" + _WEEKDAY_EN[3:-1] + r")s? "
       r"(before|after|prior to) (" + _ANCHOR_EN + r")" + _NA, needs=("before", "after", "prior to"))
def _en_anchored(m: re.Match[str], c: _Ctx) -> Span:
    anchor = _anchor_days(m.group(4), c)
    n = _en_number(m.group(1)) if m.group(1) else 1
    if anchor is None or n is None or not 1 <= n <= 60:
        return None
    return _relative_to(c, anchor, m.group(2).lower(), n, m.group(3).lower() == "after")


def _nth_of_month(c: _Ctx, month: tuple[date, date], nth: int, weekend: bool) -> Span:
    """The ``nth`` (-1: last) week (days 1-7, 8-14, ...; the last: its final seven days) or
    weekend (Saturday and Sunday) of a month."""
    first, last = month
    if not weekend:
        start = last - timedelta(days=6) if nth < 0 else first + timedelta(weeks=nth - 1)
        return _days(c, start, 7) if start <= last else None
    if nth < 0:
        saturday = last - timedelta(days=(last.weekday() - 5) % 7)
    else:
        saturday = first + timedelta(days=(5 - first.weekday()) % 7 + 7 * (nth - 1))
    return _days(c, saturday, 2) if first <= saturday <= last else None


@_rule(_NB + r"(?:the )?(first|1st|second|2nd|third|3rd|fourth|4th|last) (week|weekend) of ((?:"
       + _MONTH_EN + r")" + _YEAR_EN + r")" + _NA, needs=("week",))
def _en_nth_of_month(m: re.Match[str], c: _Ctx) -> Span:
    month = _anchor_days(m.group(3), c)
    return _nth_of_month(c, month, _ORDINALS[m.group(1).lower()], m.group(2).lower() == "weekend") if month else None


@_rule(r"(" + _DATE_ZH + r")的?(第一|第二|第三|第四|最后一|最后)(?:个)?(周末|周|星期|礼拜)", cjk=True)
def _zh_nth_of_month(m: re.Match[str], c: _Ctx) -> Span:
    month = _anchor_days(m.group(1), c)
    if month is None or (month[1] - month[0]).days < 27:
        return None  # "the first week of" a day means nothing
    return _nth_of_month(c, month, _ORDINALS[m.group(2)], m.group(3) == "周末")


def _between(c: _Ctx, a: str, b: str) -> Span:
    """From the first day of ``a`` to the last of ``b``; ``a`` borrows ``b``'s year if it names none."""
    year = re.search(r"(?:19|20)\d{2}", b)
    if year and not re.search(r"(?:19|20)\d{2}", a):
        a = f"{a}, {year.group()}" if re.search(r"[A-Za-z]", a) else f"{year.group()}年{a}"
    first, last = _anchor_days(a, c), _anchor_days(b, c)
    if first is None or last is None or first[0] > last[1]:
        return None
    return _at(c, first[0]), _at(c, last[1] + timedelta(days=1))


@_rule(_NB + r"(?:between (" + _ANCHOR_EN + r") and|from (" + _ANCHOR_EN + r") (?:to|until|till|through)) ("
       + _ANCHOR_EN + r")" + _NA, needs=("between", "from"))
def _en_between(m: re.Match[str], c: _Ctx) -> Span:
    return _between(c, m.group(1) or m.group(2), m.group(3))


@_rule(r"(?:从|在)?(" + _DATE_ZH + r")\s*(?:到|至|—|-|~)\s*(" + _DATE_ZH + r")(?:之间|期间)?", cjk=True)
def _zh_between(m: re.Match[str], c: _Ctx) -> Span:
    return _between(c, m.group(1), m.group(2))


@_rule(r"(" + _DATE_ZH + r")(?:之前|以前|前)的?(?:那个|那)?(一周|周末|星期[一二三四五六日天]|周[一二三四五六日天]|一天|天)", cjk=True)
def _zh_anchored(m: re.Match[str], c: _Ctx) -> Span:
    anchor = _anchor_days(m.group(1), c)
    word = m.group(2)
    unit = {"一周": "week", "周末": "weekend", "一天": "day", "天": "day"}.get(word, word)
    return _relative_to(c, anchor, unit, 1, False) if anchor else None

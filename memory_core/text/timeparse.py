"""Time expressions in queries and memories, Chinese and English, resolved against ``now``.

``parse_time_range`` turns "上周" / "last May" / "3 days ago" into a half-open UTC window the
retrieval filter can apply; ``normalize_relative_dates`` rewrites relative words into
absolute dates so a memory written "yesterday" still says which day when read next year.

Conventions (documented because every caller depends on them):
- Calendar arithmetic happens in ``now``'s own timezone (naive = UTC), so "today" is the
  user's day; the returned bounds are converted to UTC.
- Weeks start on Monday. A weekend is Saturday 00:00 to Monday 00:00.
- A month or date without a year ("in May", "五月", "3月5日") means the most recent one that
  is not in the future (this year's if it has started, else last year's).
- "最近N天" / "in the last N days" = from the start of the day N days ago up to the end
  of today (generous on purpose: retrieval filters should not lose the edge day).
- Overlapping matches resolve to the longest ("去年五月" beats "去年"); of separate
  expressions the first in the text wins.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from typing import Callable

from memory_core.text.lang import CJK_CLASS
from memory_core.types import TimeRange

# ---------------------------------------------------------------- numbers

_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_NUM = r"[零〇一二两三四五六七八九十\d]{1,4}"
_EN_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
    "thirty": 30, "a couple of": 2, "couple of": 2, "a few": 3, "few": 3, "several": 3,
}
_EN_NUM = r"(?:\d{1,3}|a couple of|couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty)"


def cn_number(text: str) -> int | None:
    """Parse 1-99 written with digits or Chinese numerals ("十二", "二十一", "两")."""
    if text.isdigit():
        return int(text)
    if "十" in text:
        left, _, right = text.partition("十")
        tens = _CN_DIGITS.get(left, None) if left else 1
        ones = _CN_DIGITS.get(right, None) if right else 0
        if tens is None or ones is None:
            return None
        return tens * 10 + ones
    if len(text) == 1 and text in _CN_DIGITS:
        return _CN_DIGITS[text]
    return None


def _en_number(text: str) -> int | None:
    t = text.lower().strip()
    if t.isdigit():
        return int(t)
    return _EN_NUMBERS.get(t)


_MONTHS_EN = {
    name: i
    for i, names in enumerate(
        [(), ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
         ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sept", "sep"),
         ("october", "oct"), ("november", "nov"), ("december", "dec")]
    )
    for name in names
}
_MONTH_EN = r"(?:january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)"
_MONTH_NAMES_EN = ["", "January", "February", "March", "April", "May", "June", "July", "August",
                   "September", "October", "November", "December"]
_WEEKDAYS_EN = {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6}
_WEEKDAY_EN = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_WEEKDAYS_ZH = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "末": -1}

# ---------------------------------------------------------------- calendar helpers


@dataclass(frozen=True)
class _Ctx:
    today: date
    tz: tzinfo


def _ctx(now: datetime) -> _Ctx:
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    return _Ctx(today=now.date(), tz=now.tzinfo)  # type: ignore[arg-type]


def _at(ctx: _Ctx, d: date) -> datetime:
    return datetime.combine(d, time.min, tzinfo=ctx.tz).astimezone(timezone.utc)


def _days(ctx: _Ctx, start: date, n_days: int = 1) -> tuple[datetime, datetime]:
    return _at(ctx, start), _at(ctx, start + timedelta(days=n_days))


def _week_start(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _add_months(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + delta
    return index // 12, index % 12 + 1


def _month(ctx: _Ctx, year: int, month: int) -> tuple[datetime, datetime]:
    ny, nm = _add_months(year, month, 1)
    return _at(ctx, date(year, month, 1)), _at(ctx, date(ny, nm, 1))


def _months(ctx: _Ctx, year: int, month: int, count: int) -> tuple[datetime, datetime]:
    ny, nm = _add_months(year, month, count)
    return _at(ctx, date(year, month, 1)), _at(ctx, date(ny, nm, 1))


def _year(ctx: _Ctx, year: int) -> tuple[datetime, datetime]:
    return _at(ctx, date(year, 1, 1)), _at(ctx, date(year + 1, 1, 1))


def _recent_month_year(ctx: _Ctx, month: int) -> int:
    """Year of the most recent ``month`` that has started (this year's or last year's)."""
    return ctx.today.year if month <= ctx.today.month else ctx.today.year - 1


def _recent_date(ctx: _Ctx, month: int, day: int) -> date | None:
    """The most recent month/day not in the future."""
    for year in (ctx.today.year, ctx.today.year - 1, ctx.today.year - 2, ctx.today.year - 3, ctx.today.year - 4):
        try:
            d = date(year, month, day)
        except ValueError:
            continue
        if d <= ctx.today:
            return d
    return None


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _last_n_days(ctx: _Ctx, n: int) -> tuple[datetime, datetime]:
    return _at(ctx, ctx.today - timedelta(days=n)), _at(ctx, ctx.today + timedelta(days=1))


def _weekend(ctx: _Ctx, week_monday: date) -> tuple[datetime, datetime]:
    return _days(ctx, week_monday + timedelta(days=5), 2)


def _recent_weekday(ctx: _Ctx, weekday: int) -> date:
    """The most recent ``weekday`` on or before today."""
    return ctx.today - timedelta(days=(ctx.today.weekday() - weekday) % 7)


def _recent_weekend(ctx: _Ctx) -> tuple[datetime, datetime]:
    monday = _week_start(ctx.today)
    if ctx.today.weekday() < 5:
        monday -= timedelta(days=7)
    return _weekend(ctx, monday)


# ---------------------------------------------------------------- rules

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


_RULES: list[_Rule] = []
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

_REL_DAYS_ZH = {"今天": 0, "今日": 0, "今早": 0, "今晚": 0, "今天早上": 0, "今天晚上": 0, "昨天": -1, "昨日": -1,
                "昨晚": -1, "昨天晚上": -1, "前天": -2, "大前天": -3, "明天": 1, "明日": 1, "后天": 2}


@_rule(r"大前天|前天|昨天晚上|昨天|昨日|昨晚|今天早上|今天晚上|今天|今日|今早|今晚|明天|明日|(?<!然)后天", cjk=True)
def _zh_rel_day(m: re.Match[str], c: _Ctx) -> Span:
    return _days(c, c.today + timedelta(days=_REL_DAYS_ZH[m.group()]))


@_rule(_NB + r"(?:the day before yesterday|yesterday|last night|today|tonight|this (?:morning|afternoon|evening)|tomorrow)" + _NA)
def _en_rel_day(m: re.Match[str], c: _Ctx) -> Span:
    word = m.group().lower()
    offset = {"the day before yesterday": -2, "yesterday": -1, "last night": -1, "tomorrow": 1}.get(word, 0)
    return _days(c, c.today + timedelta(days=offset))


@_rule(r"(上上|上|本|这|下)(?:个)?(?:周|星期|礼拜)(?:末)", cjk=True)
def _zh_weekend(m: re.Match[str], c: _Ctx) -> Span:
    shift = {"上上": -2, "上": -1, "本": 0, "这": 0, "下": 1}[m.group(1)]
    return _weekend(c, _week_start(c.today) + timedelta(weeks=shift))


@_rule(r"(?<![上本这下个])(?:周末)", cjk=True)
def _zh_bare_weekend(m: re.Match[str], c: _Ctx) -> Span:
    return _recent_weekend(c)


@_rule(r"(上上|上|本|这|下)(?:个)?(?:周|星期|礼拜)(?![一二三四五六日天末])", cjk=True)
def _zh_week(m: re.Match[str], c: _Ctx) -> Span:
    shift = {"上上": -2, "上": -1, "本": 0, "这": 0, "下": 1}[m.group(1)]
    return _days(c, _week_start(c.today) + timedelta(weeks=shift), 7)


@_rule(r"(?<![每一二两三四五六七八九十几\d])(上上|上|本|这|下)?(?:个)?(?:周|星期|礼拜)([一二三四五六日天])", cjk=True)
def _zh_weekday(m: re.Match[str], c: _Ctx) -> Span:
    weekday = _WEEKDAYS_ZH[m.group(2)]
    if m.group(1) is None:
        return _days(c, _recent_weekday(c, weekday))
    shift = {"上上": -2, "上": -1, "本": 0, "这": 0, "下": 1}[m.group(1)]
    return _days(c, _week_start(c.today) + timedelta(weeks=shift, days=weekday))


@_rule(_NB + r"(?:(last|this|next|the past|past) weekend|(?:on |at )?the weekend)" + _NA)
def _en_weekend(m: re.Match[str], c: _Ctx) -> Span:
    which = (m.group(1) or "").lower()
    if which in ("", "the past", "past"):
        return _recent_weekend(c)
    shift = {"last": -1, "this": 0, "next": 1}[which]
    return _weekend(c, _week_start(c.today) + timedelta(weeks=shift))


@_rule(_NB + r"(?:(last|this|next) week|the week before last)" + _NA)
def _en_week(m: re.Match[str], c: _Ctx) -> Span:
    shift = {"last": -1, "this": 0, "next": 1}.get((m.group(1) or "").lower(), -2)
    return _days(c, _week_start(c.today) + timedelta(weeks=shift), 7)


@_rule(_NB + r"(?:(last|this|next|on) )?(" + _WEEKDAY_EN[3:-1] + r")" + _NA)
def _en_weekday(m: re.Match[str], c: _Ctx) -> Span:
    weekday = _WEEKDAYS_EN[m.group(2).lower()]
    which = (m.group(1) or "").lower()
    if which in ("", "on"):
        return _days(c, _recent_weekday(c, weekday))
    if which == "last":  # "last Friday": the most recent Friday before today
        d = _recent_weekday(c, weekday)
        return _days(c, d if d < c.today else d - timedelta(days=7))
    shift = 0 if which == "this" else 1
    return _days(c, _week_start(c.today) + timedelta(weeks=shift, days=weekday))


@_rule(r"(上上|上|本|这|下)(?:个)?月(?![一二三四五六七八九十\d份])|这个月|本月", cjk=True)
def _zh_month(m: re.Match[str], c: _Ctx) -> Span:
    shift = {"上上": -2, "上": -1, "本": 0, "这": 0, "下": 1}[m.group(1) or "本"]
    y, mo = _add_months(c.today.year, c.today.month, shift)
    return _month(c, y, mo)


@_rule(_NB + r"(?:(last|this|next) month|the month before last)" + _NA)
def _en_month(m: re.Match[str], c: _Ctx) -> Span:
    shift = {"last": -1, "this": 0, "next": 1}.get((m.group(1) or "").lower(), -2)
    y, mo = _add_months(c.today.year, c.today.month, shift)
    return _month(c, y, mo)


_ZH_YEAR_SHIFT = {"今年": 0, "本年": 0, "去年": -1, "前年": -2, "大前年": -3, "明年": 1}


@_rule(r"大前年|前年|去年|今年|本年|明年", cjk=True)
def _zh_year(m: re.Match[str], c: _Ctx) -> Span:
    return _year(c, c.today.year + _ZH_YEAR_SHIFT[m.group()])


@_rule(_NB + r"(?:(last|this|next) year|the year before last)" + _NA)
def _en_year(m: re.Match[str], c: _Ctx) -> Span:
    shift = {"last": -1, "this": 0, "next": 1}.get((m.group(1) or "").lower(), -2)
    return _year(c, c.today.year + shift)


@_rule(r"(大前年|前年|去年|今年|明年)(?:的)?(" + _CN_NUM + r")月(?:份)?(?:(" + _CN_NUM + r")[日号])?", cjk=True)
def _zh_year_month(m: re.Match[str], c: _Ctx) -> Span:
    year = c.today.year + _ZH_YEAR_SHIFT[m.group(1)]
    month = cn_number(m.group(2))
    if month is None or not 1 <= month <= 12:
        return None
    if m.group(3):
        day = cn_number(m.group(3))
        d = _safe_date(year, month, day) if day else None
        return _days(c, d) if d else None
    return _month(c, year, month)


@_rule(_NUMB + r"(\d{4})\s*年\s*(?:(\d{1,2}|" + _CN_NUM + r")\s*月(?:份)?\s*(?:(\d{1,2}|" + _CN_NUM + r")\s*[日号])?)?", cjk=True)
def _zh_abs_date(m: re.Match[str], c: _Ctx) -> Span:
    year = int(m.group(1))
    if not 1900 <= year <= 2100:
        return None
    if not m.group(2):
        return _year(c, year)
    month = cn_number(m.group(2))
    if month is None or not 1 <= month <= 12:
        return None
    if not m.group(3):
        return _month(c, year, month)
    day = cn_number(m.group(3))
    d = _safe_date(year, month, day) if day else None
    return _days(c, d) if d else None


@_rule(_NUMB + r"(?<![年\d])(" + _CN_NUM + r")月(?:份)?(?:(" + _CN_NUM + r")[日号])?", cjk=True)
def _zh_month_day(m: re.Match[str], c: _Ctx) -> Span:
    month = cn_number(m.group(1))
    if month is None or not 1 <= month <= 12:
        return None
    if m.group(2):
        day = cn_number(m.group(2))
        d = _recent_date(c, month, day) if day else None
        return _days(c, d) if d else None
    return _month(c, _recent_month_year(c, month), month)


@_rule(_NUMB + r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})" + _NUMA)
def _iso_date(m: re.Match[str], c: _Ctx) -> Span:
    d = _safe_date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    return _days(c, d) if d else None


@_rule(_NUMB + r"(\d{4})-(\d{1,2})" + r"(?![\d\-/.])")
def _iso_month(m: re.Match[str], c: _Ctx) -> Span:
    year, month = int(m.group(1)), int(m.group(2))
    if not (1900 <= year <= 2100 and 1 <= month <= 12):
        return None
    return _month(c, year, month)


def _zh_unit(word: str) -> str:
    """d / w / m / y for a Chinese unit word (the rules' patterns admit only these words)."""
    return {"天": "d", "日": "d", "年": "y", "个月": "m", "月": "m"}.get(word, "w")


@_rule(r"(" + _CN_NUM + r")\s*(天|日|周|个星期|星期|个礼拜|礼拜|个月|月|年)(?:以前|之前|前)", cjk=True)
def _zh_ago(m: re.Match[str], c: _Ctx) -> Span:
    n = cn_number(m.group(1))
    if n is None:
        return None
    return _ago(c, n, _zh_unit(m.group(2)))


@_rule(_NB + r"(" + _EN_NUM + r")\s+(day|week|month|year)s?\s+(?:ago|back|earlier)" + _NA)
def _en_ago(m: re.Match[str], c: _Ctx) -> Span:
    n = _en_number(m.group(1))
    return None if n is None else _ago(c, n, m.group(2).lower()[0])


# A duration in the perfect tense dates the start of what it tells: "I've had them for 3 years"
# (said in 2023: since 2020), "we've been together for three years", "我们在一起三年了". Only
# the perfect ("have/has/had ... for", "...了"): "I'm in Paris for 3 days" says nothing of when.
@_rule(r"(?:['’]ve|" + _NB + r"(?:have|has|had))(?: [\w'’-]+){0,6}? for (?:about |almost |over |nearly |around |more than )?("
       + _EN_NUM + r") (day|week|month|year)s?" + _NA + r"(?! (?:from now|later|ahead|time))", needs=("for",))
def _en_since_duration(m: re.Match[str], c: _Ctx) -> Span:
    n = _en_number(m.group(1))
    return None if n is None or n <= 0 else _ago(c, n, m.group(2).lower()[0])


@_rule(r"(?:已经|都|有)?(" + _CN_NUM + r")\s*(年|个月|个星期|个礼拜|周|天)(?:多)?了", cjk=True)
def _zh_since_duration(m: re.Match[str], c: _Ctx) -> Span:
    n = cn_number(m.group(1))
    if n is None or n <= 0:
        return None
    return _ago(c, n, _zh_unit(m.group(2)))


# Vague words for a few days back pin no day: they span the seven days before today ("I adopted
# another dog the other day", "前几天我去了杭州"). "A few days ago", with its number, stays one day.
@_rule(r"前几天|前些天|前些日子|几天(?:以前|之前|前)", cjk=True)
@_rule(_NB + r"the other day" + _NA, needs=("other day",))
def _a_few_days_back(m: re.Match[str], c: _Ctx) -> Span:
    return _days(c, c.today - timedelta(days=7), 7)


def _ago(c: _Ctx, n: int, unit: str) -> Span:
    """The calendar day/week/month/year that lies ``n`` units before today."""
    if unit == "d":
        return _days(c, c.today - timedelta(days=n))
    if unit == "w":
        return _days(c, _week_start(c.today - timedelta(weeks=n)), 7)
    if unit == "m":
        y, mo = _add_months(c.today.year, c.today.month, -n)
        return _month(c, y, mo)
    return _year(c, c.today.year - n)


@_rule(r"(?:最近|过去|近|这)\s*(" + _CN_NUM + r"|几)\s*(天|日|周|个星期|星期|个礼拜|礼拜|个月|年)(?:来|以来|内|里)?", cjk=True)
def _zh_last_n(m: re.Match[str], c: _Ctx) -> Span:
    n = 3 if m.group(1) == "几" else cn_number(m.group(1))
    if n is None or n <= 0:
        return None
    return _last_n(c, n, _zh_unit(m.group(2)))


@_rule(_NB + r"(?:(?:in|over|during|within) )?(?:the )?(?:last|past|previous|recent) (?:(" + _EN_NUM + r") )?(days?|weeks?|months?|years?)" + _NA)
def _en_last_n(m: re.Match[str], c: _Ctx) -> Span:
    n = _en_number(m.group(1)) if m.group(1) else 1
    if n is None or n <= 0:
        return None
    unit = m.group(2).lower()[0]
    if m.group(1) is None and unit == "d":
        n = 3  # "the past few days" / "recent days" without a number
    return _last_n(c, n, unit)


def _last_n(c: _Ctx, n: int, unit: str) -> Span:
    days = {"d": n, "w": 7 * n, "m": 30 * n, "y": 365 * n}[unit]
    return _last_n_days(c, days)


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


# ---------------------------------------------------------------- public API


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


# ---------------------------------------------------------------- rewriting

_NORMALIZE_ZH_DAYS = re.compile(r"大前天|前天|昨天|昨日|今天|今日|明天|明日|(?<!然)后天")
_NORMALIZE_ZH_AGO = re.compile(r"(" + _CN_NUM + r")\s*天(?:以前|之前|前)")
_NORMALIZE_EN_DAYS = re.compile(_NB + r"(the day before yesterday|yesterday|today|tomorrow)" + _NA, re.IGNORECASE)
_NORMALIZE_EN_AGO = re.compile(_NB + r"(" + _EN_NUM + r")\s+days?\s+ago" + _NA, re.IGNORECASE)
_NORMALIZE_ZH_COARSE = re.compile(r"(上上|上|这|本)(?:个)?(?:周|星期|礼拜)(?![一二三四五六日天末])|(上上|上|这|本)(?:个)?月(?![一二三四五六七八九十\d份])|这个月|大前年|前年|去年|今年")
_NORMALIZE_EN_COARSE = re.compile(_NB + r"((?:last|this) (?:week|month|year))" + _NA, re.IGNORECASE)
_ALREADY_ANNOTATED = re.compile(r"\s?[（(][^（()）]{0,40}\d[)）]")


def _iso(d: date) -> str:
    return d.isoformat()


def normalize_relative_dates(text: str, now: datetime) -> str:
    """Rewrite relative day words as absolute dates and annotate coarser ones.

    Day words are replaced ("昨天" -> "2024-05-31", "3 days ago" -> "2024-05-29"); week,
    month and year words keep their wording and gain the absolute period in brackets
    ("上个月（2024年4月）", "last week (2024-05-20 to 2024-05-26)"), which reads naturally
    and is idempotent: already-annotated words are left alone.
    """
    ctx = _ctx(now)
    today = ctx.today

    def zh_day(m: re.Match[str]) -> str:
        return _iso(today + timedelta(days={"大前天": -3, "前天": -2, "昨天": -1, "昨日": -1, "今天": 0, "今日": 0,
                                             "明天": 1, "明日": 1, "后天": 2}[m.group()]))

    def zh_ago(m: re.Match[str]) -> str:
        n = cn_number(m.group(1))
        return m.group() if n is None else _iso(today - timedelta(days=n))

    def en_day(m: re.Match[str]) -> str:
        return _iso(today + timedelta(days={"the day before yesterday": -2, "yesterday": -1, "today": 0,
                                             "tomorrow": 1}[m.group(1).lower()]))

    def en_ago(m: re.Match[str]) -> str:
        n = _en_number(m.group(1))
        return m.group() if n is None else _iso(today - timedelta(days=n))

    def annotate(m: re.Match[str], zh: bool) -> str:
        if _ALREADY_ANNOTATED.match(m.string, m.end()):
            return m.group()
        tr = parse_time_range(m.group(), now)
        if tr is None or tr.start is None or tr.end is None:
            return m.group()
        start = tr.start.astimezone(ctx.tz).date()
        last = tr.end.astimezone(ctx.tz).date() - timedelta(days=1)
        span_days = (last - start).days + 1
        if span_days == 7:
            body = f"{_iso(start)}至{_iso(last)}" if zh else f"{_iso(start)} to {_iso(last)}"
        elif span_days >= 365:
            body = f"{start.year}年" if zh else str(start.year)
        else:
            body = f"{start.year}年{start.month}月" if zh else f"{_MONTH_NAMES_EN[start.month]} {start.year}"
        return f"{m.group()}（{body}）" if zh else f"{m.group()} ({body})"

    text = _NORMALIZE_ZH_AGO.sub(zh_ago, text)
    text = _NORMALIZE_EN_AGO.sub(en_ago, text)
    text = _NORMALIZE_EN_DAYS.sub(en_day, text)
    text = _NORMALIZE_ZH_COARSE.sub(lambda m: annotate(m, True), text)
    text = _NORMALIZE_EN_COARSE.sub(lambda m: annotate(m, False), text)
    text = _NORMALIZE_ZH_DAYS.sub(zh_day, text)
    return text

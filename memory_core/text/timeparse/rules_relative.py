"""Rules for periods named by a word or a count: today / 昨天, weekends, weeks, weekdays, months,
years, numeric dates ("2024-05-03", "3月5日"), "3 days ago" / "三天前", "for two years" / "两年了",
and "the last N days" / "最近N天". Registered before the named-month and anchored rules
(``rules_dates``): on a tie that order decides."""
from __future__ import annotations

import re
from datetime import timedelta

from memory_core.text.timeparse.matcher import Span, _NA, _NB, _NUMA, _NUMB, _rule
from memory_core.text.timeparse.periods import (
    _CN_NUM,
    _Ctx,
    _EN_NUM,
    _WEEKDAYS_EN,
    _WEEKDAYS_ZH,
    _WEEKDAY_EN,
    _add_months,
    _days,
    _en_number,
    _last_n_days,
    _month,
    _recent_date,
    _recent_month_year,
    _recent_weekday,
    _recent_weekend,
    _safe_date,
    _week_start,
    _weekend,
    _year,
    cn_number,
)

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

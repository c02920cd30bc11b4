"""Numbers and calendar arithmetic the time rules share: "三" and "a couple of" as counts, month
and weekday names, and the day, week, month and year windows in ``now``'s own time zone (the
conventions are in the package docstring)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone, tzinfo


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

"""Rewriting relative time words in a memory as absolute dates, so "yesterday" still says which
day when it is read next year."""
from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from memory_core.text.timeparse.matcher import _NA, _NB, parse_time_range
from memory_core.text.timeparse.periods import _CN_NUM, _EN_NUM, _MONTH_NAMES_EN, _ctx, _en_number, cn_number

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

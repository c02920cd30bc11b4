"""Time expressions (zh + en) against a fixed "now": Saturday 2024-06-01 10:00 UTC."""
from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from memory_core.text.timeparse import cn_number, find_time_expressions, normalize_relative_dates, parse_time_range

NOW = datetime(2024, 6, 1, 10, 0, tzinfo=timezone.utc)  # a Saturday


def _d(s: str) -> datetime:
    return datetime.combine(date.fromisoformat(s), datetime.min.time(), tzinfo=timezone.utc)


CASES: list[tuple[str, str, str, str]] = [
    # query, start, end (exclusive), label
    ("我今天做了什么", "2024-06-01", "2024-06-02", "今天"),
    ("昨天吃了什么", "2024-05-31", "2024-06-01", "昨天"),
    ("前天见了谁", "2024-05-30", "2024-05-31", "前天"),
    ("本周的计划", "2024-05-27", "2024-06-03", "本周"),
    ("这周有什么安排", "2024-05-27", "2024-06-03", "这周"),
    ("上周我去了哪里", "2024-05-20", "2024-05-27", "上周"),
    ("上个星期的会议", "2024-05-20", "2024-05-27", "上个星期"),
    ("上上周", "2024-05-13", "2024-05-20", "上上周"),
    ("本月花了多少钱", "2024-06-01", "2024-07-01", "本月"),
    ("这个月的账单", "2024-06-01", "2024-07-01", "这个月"),
    ("上个月看的电影", "2024-05-01", "2024-06-01", "上个月"),
    ("上上个月", "2024-04-01", "2024-05-01", "上上个月"),
    ("今年去过哪些城市", "2024-01-01", "2025-01-01", "今年"),
    ("去年的生日", "2023-01-01", "2024-01-01", "去年"),
    ("前年", "2022-01-01", "2023-01-01", "前年"),
    ("3天前说过什么", "2024-05-29", "2024-05-30", "3天前"),
    ("两周前", "2024-05-13", "2024-05-20", "两周前"),
    ("三个月前", "2024-03-01", "2024-04-01", "三个月前"),
    ("最近7天", "2024-05-25", "2024-06-02", "最近7天"),
    ("最近三天聊了什么", "2024-05-29", "2024-06-02", "最近三天"),
    ("过去两周", "2024-05-18", "2024-06-02", "过去两周"),
    ("去年五月去了哪", "2023-05-01", "2023-06-01", "去年五月"),
    ("去年5月份", "2023-05-01", "2023-06-01", "去年5月份"),
    ("2024年3月", "2024-03-01", "2024-04-01", "2024年3月"),
    ("2023年", "2023-01-01", "2024-01-01", "2023年"),
    ("2024年3月5日那天", "2024-03-05", "2024-03-06", "2024年3月5日"),
    ("3月5日", "2024-03-05", "2024-03-06", "3月5日"),
    ("三月五号", "2024-03-05", "2024-03-06", "三月五号"),
    ("五月份", "2024-05-01", "2024-06-01", "五月份"),
    ("七月", "2023-07-01", "2023-08-01", "七月"),  # July 2024 has not started yet
    ("十二月", "2023-12-01", "2024-01-01", "十二月"),
    ("上周末干了什么", "2024-05-25", "2024-05-27", "上周末"),
    ("这周末", "2024-06-01", "2024-06-03", "这周末"),
    ("上周三", "2024-05-22", "2024-05-23", "上周三"),
    ("星期一", "2024-05-27", "2024-05-28", "星期一"),
    # English
    ("what did I do today", "2024-06-01", "2024-06-02", "today"),
    ("Yesterday", "2024-05-31", "2024-06-01", "Yesterday"),
    ("the day before yesterday", "2024-05-30", "2024-05-31", "the day before yesterday"),
    ("this week", "2024-05-27", "2024-06-03", "this week"),
    ("last week", "2024-05-20", "2024-05-27", "last week"),
    ("the week before last", "2024-05-13", "2024-05-20", "the week before last"),
    ("what did we do last weekend?", "2024-05-25", "2024-05-27", "last weekend"),
    ("this month", "2024-06-01", "2024-07-01", "this month"),
    ("last month", "2024-05-01", "2024-06-01", "last month"),
    ("3 days ago", "2024-05-29", "2024-05-30", "3 days ago"),
    ("two weeks ago", "2024-05-13", "2024-05-20", "two weeks ago"),
    ("a month ago", "2024-05-01", "2024-06-01", "a month ago"),
    ("in the last 5 days", "2024-05-27", "2024-06-02", "in the last 5 days"),
    ("over the past week", "2024-05-25", "2024-06-02", "over the past week"),
    ("last year", "2023-01-01", "2024-01-01", "last year"),
    ("this year", "2024-01-01", "2025-01-01", "this year"),
    ("where was I in May", "2024-05-01", "2024-06-01", "May"),
    ("in July", "2023-07-01", "2023-08-01", "July"),
    ("last May", "2024-05-01", "2024-06-01", "last May"),
    ("May 2023", "2023-05-01", "2023-06-01", "May 2023"),
    ("on March 5th", "2024-03-05", "2024-03-06", "March 5th"),
    ("March 5, 2023", "2023-03-05", "2023-03-06", "March 5, 2023"),
    ("the 5th of March", "2024-03-05", "2024-03-06", "5th of March"),
    ("2024-03-05", "2024-03-05", "2024-03-06", "2024-03-05"),
    ("2024/03/05", "2024-03-05", "2024-03-06", "2024/03/05"),
    ("2024-03", "2024-03-01", "2024-04-01", "2024-03"),
    ("in 2022", "2022-01-01", "2023-01-01", "in 2022"),
    ("last Friday", "2024-05-31", "2024-06-01", "last Friday"),
    ("on Monday", "2024-05-27", "2024-05-28", "on Monday"),
]


@pytest.mark.parametrize("query,start,end,label", CASES, ids=[c[0] for c in CASES])
def test_parse_time_range(query: str, start: str, end: str, label: str) -> None:
    tr = parse_time_range(query, NOW)
    assert tr is not None
    assert (tr.start, tr.end, tr.label) == (_d(start), _d(end), label)
    assert tr.start.tzinfo is not None and tr.start.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    "query",
    ["我对芒果过敏", "I may go to the party", "what do I like", "每周一次游泳", "version 2024", "然后天气变好了",
     "we march on", "call me at 10"],
)
def test_no_time_expression(query: str) -> None:
    assert parse_time_range(query, NOW) is None


def test_longest_overlapping_expression_wins_then_first_in_text() -> None:
    tr = parse_time_range("去年五月和上周", NOW)
    assert tr is not None and tr.label == "去年五月"
    tr = parse_time_range("上周还是去年五月", NOW)
    assert tr is not None and tr.label == "上周"
    found = find_time_expressions("上周末, yesterday 和 去年五月", NOW)
    assert [t.label for t in found] == ["上周末", "yesterday", "去年五月"]


def test_weeks_start_monday_on_a_sunday() -> None:
    sunday = datetime(2024, 6, 2, 23, 0, tzinfo=timezone.utc)
    tr = parse_time_range("this week", sunday)
    assert tr is not None and tr.start == _d("2024-05-27") and tr.end == _d("2024-06-03")


def test_bare_month_in_current_month_is_this_year_and_last_month_is_a_year_ago() -> None:
    assert parse_time_range("六月", NOW).start == _d("2024-06-01")  # type: ignore[union-attr]
    assert parse_time_range("last June", NOW).start == _d("2023-06-01")  # type: ignore[union-attr]


def test_month_arithmetic_crosses_year_boundary() -> None:
    jan = datetime(2024, 1, 15, tzinfo=timezone.utc)
    assert parse_time_range("上个月", jan).start == _d("2023-12-01")  # type: ignore[union-attr]
    assert parse_time_range("上上个月", jan).start == _d("2023-11-01")  # type: ignore[union-attr]


def test_local_timezone_day_is_respected() -> None:
    shanghai = timezone(timedelta(hours=8))
    local_now = datetime(2024, 6, 1, 1, 0, tzinfo=shanghai)  # still 2024-05-31 in UTC
    tr = parse_time_range("今天", local_now)
    assert tr is not None
    assert tr.start == datetime(2024, 5, 31, 16, 0, tzinfo=timezone.utc)
    assert tr.end == datetime(2024, 6, 1, 16, 0, tzinfo=timezone.utc)


def test_naive_now_is_treated_as_utc() -> None:
    tr = parse_time_range("yesterday", datetime(2024, 6, 1, 10, 0))
    assert tr is not None and tr.start == _d("2024-05-31")


def test_invalid_dates_are_ignored() -> None:
    assert parse_time_range("2024-02-30", NOW) is None
    assert parse_time_range("13月", NOW) is None


def test_cn_number() -> None:
    assert [cn_number(x) for x in ["3", "三", "两", "十", "十二", "二十", "二十一"]] == [3, 3, 2, 10, 12, 20, 21]
    assert cn_number("百") is None


@pytest.mark.parametrize(
    "text,expected",
    [
        ("昨天我去了上海", "2024-05-31我去了上海"),
        ("我前天和大前天都在加班", "我2024-05-30和2024-05-29都在加班"),
        ("3天前买的", "2024-05-29买的"),
        ("今天", "2024-06-01"),
        ("Yesterday I went hiking", "2024-05-31 I went hiking"),
        ("I called her 2 days ago", "I called her 2024-05-30"),
        ("the day before yesterday was rainy", "2024-05-30 was rainy"),
        ("上个月去了杭州", "上个月（2024年5月）去了杭州"),
        ("上周开会", "上周（2024-05-20至2024-05-26）开会"),
        ("去年五月", "去年（2023年）五月"),
        ("What did I do last week?", "What did I do last week (2024-05-20 to 2024-05-26)?"),
        ("last month", "last month (May 2024)"),
        ("我对芒果过敏", "我对芒果过敏"),
        ("然后天气变好了", "然后天气变好了"),
    ],
)
def test_normalize_relative_dates(text: str, expected: str) -> None:
    assert normalize_relative_dates(text, NOW) == expected


def test_normalize_is_idempotent() -> None:
    once = normalize_relative_dates("上周我去了上海，last month too, 昨天也是", NOW)
    assert normalize_relative_dates(once, NOW) == once


ANCHORED: list[tuple[str, str, str, str]] = [
    # read from the date the text names, not from today (2024-06-01); start, end (exclusive), label
    ("What did John do the week before August 3, 2023?", "2023-07-27", "2023-08-03", "the week before August 3, 2023"),
    ("the puppy she got two weeks before August 11, 2023", "2023-07-28", "2023-08-04", "two weeks before August 11, 2023"),
    ("on the Sunday before October 25, 2022", "2022-10-23", "2022-10-24", "the Sunday before October 25, 2022"),
    ("the Monday before July 24, 2023", "2023-07-17", "2023-07-18", "the Monday before July 24, 2023"),  # a Monday itself
    ("over the weekend before 4th October, 2023", "2023-09-30", "2023-10-02", "the weekend before 4th October, 2023"),
    ("the Saturday after October 28, 2023", "2023-11-04", "2023-11-05", "the Saturday after October 28, 2023"),
    ("three days before 2023-05-03", "2023-04-30", "2023-05-01", "three days before 2023-05-03"),
    ("the week after 2023-05-03", "2023-05-04", "2023-05-11", "the week after 2023-05-03"),
    ("last week before 23 January, 2023", "2023-01-16", "2023-01-23", "last week before 23 January, 2023"),
    ("during the last week of August 2023", "2023-08-25", "2023-09-01", "the last week of August 2023"),
    ("in the second week of November 2023", "2023-11-08", "2023-11-15", "the second week of November 2023"),
    ("the first weekend of August 2023", "2023-08-05", "2023-08-07", "the first weekend of August 2023"),
    ("the last weekend of March 2024", "2024-03-30", "2024-04-01", "the last weekend of March 2024"),
    ("between August 11 and August 15 2023", "2023-08-11", "2023-08-16", "between August 11 and August 15 2023"),
    ("between August and November 2023", "2023-08-01", "2023-12-01", "between August and November 2023"),
    ("from March 3 to March 9, 2023", "2023-03-03", "2023-03-10", "from March 3 to March 9, 2023"),
    ("2023年8月的最后一周我在哪", "2023-08-25", "2023-09-01", "2023年8月的最后一周"),
    ("3月的第一个周末", "2024-03-02", "2024-03-04", "3月的第一个周末"),
    ("从2023年8月11日到8月15日", "2023-08-11", "2023-08-16", "从2023年8月11日到8月15日"),
    ("2023年10月25日之前的那个周日", "2023-10-22", "2023-10-23", "2023年10月25日之前的那个周日"),
    ("2023年10月25日前的周末", "2023-10-21", "2023-10-23", "2023年10月25日前的周末"),
]


@pytest.mark.parametrize("query,start,end,label", ANCHORED, ids=[q for q, *_ in ANCHORED])
def test_expressions_anchored_to_a_named_date(query: str, start: str, end: str, label: str) -> None:
    tr = parse_time_range(query, NOW)
    assert tr is not None and (tr.start, tr.end, tr.label) == (_d(start), _d(end), label)


SINCE: list[tuple[str, str, str, str]] = [
    # a duration in the perfect tense dates the start of what it tells (now: 2024-06-01)
    ("I've had them for 3 years! Their names are Pepper", "2021-01-01", "2022-01-01", "'ve had them for 3 years"),
    ("we've been together for three years", "2021-01-01", "2022-01-01", "'ve been together for three years"),
    ("I've been playing for a month now", "2024-05-01", "2024-06-01", "'ve been playing for a month"),
    ("She has worked at Google for about five years", "2019-01-01", "2020-01-01",
     "has worked at Google for about five years"),
    ("They’ve lived here for two weeks", "2024-05-13", "2024-05-20", "’ve lived here for two weeks"),
    ("我们在一起三年了", "2021-01-01", "2022-01-01", "三年了"),
    ("我学钢琴已经两个月了", "2024-04-01", "2024-05-01", "已经两个月了"),
]


@pytest.mark.parametrize("text,label", [("I adopted another dog the other day", "the other day"),
                                        ("前几天我去了杭州", "前几天"), ("几天前买的", "几天前"), ("前些日子", "前些日子")])
def test_vague_words_for_a_few_days_back_span_the_week_before_today(text: str, label: str) -> None:
    tr = parse_time_range(text, NOW)
    assert tr is not None and (tr.start, tr.end, tr.label) == (_d("2024-05-25"), _d("2024-06-01"), label)
    assert parse_time_range("On the other hand, another day", NOW) is None


@pytest.mark.parametrize("text,start,end,label", SINCE, ids=[t for t, *_ in SINCE])
def test_a_perfect_tense_duration_dates_its_start(text: str, start: str, end: str, label: str) -> None:
    tr = parse_time_range(text, NOW)
    assert tr is not None and (tr.start, tr.end, tr.label) == (_d(start), _d(end), label)


@pytest.mark.parametrize("text", ["I'm in Paris for 3 days", "it's for two weeks", "I waited for 2 hours",
                                  "I have plans for 2 weeks from now", "I have a gift for a friend"])
def test_a_duration_that_is_not_perfect_tense_dates_nothing(text: str) -> None:
    assert parse_time_range(text, NOW) is None


def test_anchored_expressions_that_make_no_sense_fall_back_to_the_date_they_name() -> None:
    backwards = parse_time_range("between May 20 and May 3, 2023", NOW)
    assert backwards is not None and backwards.label == "May 20"  # no span runs backwards
    assert parse_time_range("the fifth week of May 2023", NOW).label == "May 2023"  # type: ignore[union-attr]
    assert parse_time_range("the first week of 2023年5月3日", NOW).label == "2023年5月3日"  # type: ignore[union-attr]
    assert parse_time_range("100 days before 2023-05-03", NOW).label == "2023-05-03"  # type: ignore[union-attr]


def test_the_same_instant_reads_by_its_own_time_zone_however_often_it_is_asked() -> None:
    """Parses are cached per text and (day, zone): 23:30 UTC is already tomorrow at UTC+8, and an
    equal instant in another zone must not get the first zone's answer from the cache."""
    utc = datetime(2024, 6, 1, 23, 30, tzinfo=timezone.utc)
    shanghai = utc.astimezone(timezone(timedelta(hours=8)))
    assert utc == shanghai  # one instant
    for _ in range(2):
        today_utc, today_sh = parse_time_range("我今天做了什么", utc), parse_time_range("我今天做了什么", shanghai)
        assert today_utc is not None and today_sh is not None
        assert today_utc.start == _d("2024-06-01") and today_sh.start == datetime(2024, 6, 1, 16, tzinfo=timezone.utc)
        assert parse_time_range("what did I do today", utc) != parse_time_range("what did I do today", shanghai)
    assert parse_time_range("讲个笑话", utc) is None and parse_time_range("tell me a joke", shanghai) is None


def test_a_caller_changing_the_list_it_got_does_not_change_the_next_answer() -> None:
    found = find_time_expressions("昨天和上周", NOW)
    assert [tr.label for tr in found] == ["昨天", "上周"]
    found.clear()
    assert [tr.label for tr in find_time_expressions("昨天和上周", NOW)] == ["昨天", "上周"]

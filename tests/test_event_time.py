"""The told time of a memory: its own time words read as of when it was written."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from memory_core.text.event_time import event_span

WRITTEN = datetime(2023, 10, 4, 18, 30, tzinfo=timezone.utc)  # a Wednesday


def _d(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=timezone.utc)


@pytest.mark.parametrize("text,start,end", [
    ("Yesterday I met some incredible artists in Boston", _d(2023, 10, 3), _d(2023, 10, 4)),
    ("昨天我和朋友去了杭州", _d(2023, 10, 3), _d(2023, 10, 4)),
    ("I took a road trip last month - the scenery was stunning", _d(2023, 9, 1), _d(2023, 10, 1)),
    ("I'll come over tomorrow if that's fine", _d(2023, 10, 5), _d(2023, 10, 6)),
    ("We got back from Rio two days ago", _d(2023, 10, 2), _d(2023, 10, 3)),
    # two times within a year: the span covers both
    ("Last week I signed up, and yesterday I went for the first time", _d(2023, 9, 25), _d(2023, 10, 4)),
])
def test_time_words_are_read_as_of_the_write(text: str, start: datetime, end: datetime) -> None:
    span = event_span(text, WRITTEN)
    assert span is not None and (span.start, span.end) == (start, end)


def test_no_time_words_no_span() -> None:
    assert event_span("I love painting landscapes", WRITTEN) is None
    assert event_span("", WRITTEN) is None


def test_times_further_apart_than_a_year_keep_the_first() -> None:
    """A span of years would put the memory into every window between its two times."""
    span = event_span("Back in 2019 I started running, and next week I race again", WRITTEN)
    assert span is not None and (span.start, span.end) == (_d(2019, 1, 1), _d(2020, 1, 1))


def test_odd_unicode_is_parsed_or_ignored_without_error() -> None:
    assert event_span("\ud800 yesterday \u200b🙂", WRITTEN) is not None
    assert event_span("\x00\x01", WRITTEN) is None

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


# The rule modules register their rules with the matcher as they are imported, in this order
# (the order of the one module they were split from; it breaks ties): relative, then dates.
from memory_core.text.timeparse import rules_relative  # noqa: F401  (registers its rules)
from memory_core.text.timeparse import rules_dates  # noqa: F401  (registers its rules, after those)
from memory_core.text.timeparse.matcher import find_time_expressions, parse_time_range
from memory_core.text.timeparse.normalize import normalize_relative_dates
from memory_core.text.timeparse.periods import cn_number

__all__ = ["cn_number", "find_time_expressions", "normalize_relative_dates", "parse_time_range"]

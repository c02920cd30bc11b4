"""Per-user write limit: a token bucket of characters per minute.

Why: one 100,000-character message costs the two write workers about 11 s (embedding, analysis,
dedup); a user sending them back to back would take the writes of everyone else. The bucket
holds a minute's allowance (``Settings.write_limit_chars_per_minute``) and refills continuously,
so normal chatting never meets it and a burst is refused with how long to wait. Per process:
it protects this process's workers (each replica protects its own).
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Sequence

from memory_core.errors import RateLimited


class WriteRateLimiter:
    MAX_USERS = 100_000  # buckets kept; full (idle) ones are dropped first when over

    def __init__(self, chars_per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity = float(max(0, chars_per_minute))
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # user -> (tokens, as of)
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.capacity > 0

    def take(self, user_id: str, chars: int) -> None:
        """Spend ``chars`` of the user's allowance, or raise ``RateLimited`` (spending nothing)."""
        if not self.enabled or chars <= 0:
            return
        now = self._clock()
        rate = self.capacity / 60.0
        with self._lock:
            tokens, at = self._buckets.get(user_id, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - at) * rate)
            if chars > tokens:
                if chars > self.capacity:
                    raise RateLimited(f"this write is {chars:,} characters, more than the "
                                      f"{int(self.capacity):,} per minute one user may write", 60.0)
                wait = (chars - tokens) / rate
                raise RateLimited(f"too much written for this user in the last minute "
                                  f"(limit {int(self.capacity):,} characters per minute); "
                                  f"try again in {int(wait) + 1} s", wait)
            self._buckets[user_id] = (tokens - chars, now)
            if len(self._buckets) > self.MAX_USERS:
                self._forget_full(now, rate)

    def _forget_full(self, now: float, rate: float) -> None:
        """Drop buckets that have refilled (they hold nothing a new bucket would not)."""
        for user in [u for u, (t, at) in self._buckets.items() if t + (now - at) * rate >= self.capacity]:
            del self._buckets[user]

    def charge(self, items: Sequence[Any]) -> None:
        """Spend each user's allowance for these ``AddItem``s (content and context characters);
        raises ``RateLimited`` for the first user over it."""
        chars: dict[str, int] = {}
        for item in items:
            size = sum(len(text) for text in (item.content, item.context) if isinstance(text, str))
            chars[item.user_id] = chars.get(item.user_id, 0) + size
        for user_id, size in chars.items():
            self.take(user_id, size)

"""The compressed memory block handed to the LLM: one dated line per memory, within a token budget."""
from __future__ import annotations

from typing import Callable, Sequence

from memory_core.text.timeparse import normalize_relative_dates
from memory_core.types import SearchResult


def build_context_block(results: Sequence[SearchResult], count_tokens: Callable[[str], int], max_tokens: int,
                        max_line_chars: int = 300) -> str:
    """Lines ``[YYYY-MM-DD] text`` in ranked order; long texts are cut, and lines stop at the budget.

    Relative time words are resolved against the memory's own date, as its told time is: the
    model reads "[2023-10-04] 2023-10-03 I met some artists in Boston", not a "yesterday" it would
    have to date itself (and, asked months later, would date wrong)."""
    lines: list[str] = []
    used = 0
    for result in results:
        text = normalize_relative_dates(" ".join(result.content.split()), result.created_at)
        if len(text) > max_line_chars:
            text = text[: max_line_chars - 1].rstrip() + "…"
        line = f"[{result.created_at.date().isoformat()}] {text}"
        cost = count_tokens(line) + 1
        if lines and used + cost > max_tokens:
            break
        lines.append(line)
        used += cost
    return "\n".join(lines)

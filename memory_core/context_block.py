"""The compressed memory block handed to the LLM: one dated line per memory, within a token budget."""
from __future__ import annotations

from typing import Callable, Sequence

from memory_core.types import SearchResult


def build_context_block(results: Sequence[SearchResult], count_tokens: Callable[[str], int], max_tokens: int,
                        max_line_chars: int = 300) -> str:
    """Lines ``[YYYY-MM-DD] text`` in ranked order; long texts are cut, and lines stop at the budget."""
    lines: list[str] = []
    used = 0
    for result in results:
        text = " ".join(result.content.split())
        if len(text) > max_line_chars:
            text = text[: max_line_chars - 1].rstrip() + "…"
        line = f"[{result.created_at.date().isoformat()}] {text}"
        cost = count_tokens(line) + 1
        if lines and used + cost > max_tokens:
            break
        lines.append(line)
        used += cost
    return "\n".join(lines)

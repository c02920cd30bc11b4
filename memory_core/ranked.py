"""A search's scored results in rank order, with absolute relevance worked out on demand.

Absolute relevance (``memory_core.relevance``) needs each memory's words: ``coverage`` runs a
jieba pass per memory, ~2 ms of a search over ~60 candidates. A response shows only its top
results that pass the threshold and the user's constraints, so ``RankedResults`` works it out
for those alone, as they are asked for; every value is the one a full pass would give.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Generic, TypeVar

from memory_core.records import MemoryRecord
from memory_core.types import SearchResult

C = TypeVar("C")


class RankedResults(Generic[C]):
    """``items`` are (result without ``parts.absolute``, its candidate, its row), in rank order;
    ``absolute(candidate, row)`` gives the value that goes into ``parts.absolute``."""

    def __init__(self, items: list[tuple[SearchResult, C, MemoryRecord]],
                 absolute: Callable[[C, MemoryRecord], float]) -> None:
        self._items = items
        self._absolute = absolute
        self._done: dict[int, SearchResult] = {}
        self._index = {result.memory_id: i for i, (result, _c, _r) in enumerate(items)}

    def __len__(self) -> int:
        return len(self._items)

    def result(self, index: int) -> SearchResult:
        """The ``index``-th result, its absolute relevance filled in (once)."""
        done = self._done.get(index)
        if done is None:
            result, candidate, record = self._items[index]
            done = self._done[index] = replace(result, parts=replace(result.parts,
                                                                     absolute=self._absolute(candidate, record)))
        return done

    def get(self, memory_id: str) -> SearchResult | None:
        """The result of ``memory_id``, or None when it was not scored."""
        index = self._index.get(memory_id)
        return None if index is None else self.result(index)

    def top(self, threshold: float, k: int,
            floor: Callable[[MemoryRecord], float] | None = None) -> list[SearchResult]:
        """The first ``k`` results, in rank order, whose absolute relevance reaches ``threshold``,
        or ``floor(row)`` where given (a faded memory must be relevant)."""
        out: list[SearchResult] = []
        for index in range(len(self._items)):
            if len(out) >= k:
                break
            result = self.result(index)
            needed = threshold if floor is None else floor(self._items[index][2])
            if (result.parts.absolute or 0.0) >= needed:
                out.append(result)
        return out

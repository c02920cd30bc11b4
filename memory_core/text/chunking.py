"""Split long input into overlapping, sentence-aligned chunks that fit a token budget.

Long inputs (pasted notes, transcripts) are stored as several memories; each must fit the
embedding model's window. Cutting on sentence boundaries keeps each chunk readable and
self-contained; carrying the last sentence or two into the next chunk keeps facts that
straddle a boundary retrievable from either side. ``count_tokens`` is injected so the same
code serves any tokenizer (the embedding model's own, or a cheap character estimate).
"""
from __future__ import annotations

import re
from typing import Callable

# A sentence ends after 。！？!?；; (plus closing quotes/brackets), after ". " (a period
# followed by whitespace, so 3.5 and example.com stay whole), or at a newline.
_SENTENCE_END_RE = re.compile(r"(?<=[。！？!?；;…])(?![。！？!?；;…])[\"'”’」』)）\]]*|(?<=\.)(?=\s)|\n+")
_CLAUSE_END_RE = re.compile(r"(?<=[，,、：:—])")


def _split_keep(text: str, pattern: re.Pattern[str]) -> list[str]:
    """Split after each boundary, keeping the punctuation with the piece before it."""
    pieces: list[str] = []
    pos = 0
    for m in pattern.finditer(text):
        end = m.end()
        if end <= pos:
            continue
        piece = text[pos:end].strip()
        if piece:
            pieces.append(piece)
        pos = end
    tail = text[pos:].strip()
    if tail:
        pieces.append(tail)
    return pieces


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``, stripped, punctuation kept, empty pieces dropped."""
    return _split_keep(text, _SENTENCE_END_RE)


def _join(left: str, right: str) -> str:
    """Join two pieces with a space only where both sides are Latin/digits."""
    if not left:
        return right
    if (left[-1].isascii() and left[-1].isalnum()) or left[-1] in ".,;:!?)\"'":
        if right and right[0].isascii():
            return f"{left} {right}"
    return left + right


def _hard_split(piece: str, max_tokens: int, count_tokens: Callable[[str], int]) -> list[str]:
    """Cut ``piece`` by characters into the longest prefixes that fit (binary search)."""
    out: list[str] = []
    rest = piece
    while rest:
        if count_tokens(rest) <= max_tokens:
            out.append(rest)
            break
        lo, hi = 1, len(rest)  # the longest prefix length that fits lies in [1, hi)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if count_tokens(rest[:mid]) <= max_tokens:
                lo = mid
            else:
                hi = mid - 1
        cut = max(lo, 1)
        # Prefer not to cut inside a Latin word when a space is close to the cut.
        space = rest.rfind(" ", 0, cut)
        if space > cut // 2 and rest[cut - 1 : cut + 1].strip() == rest[cut - 1 : cut + 1]:
            cut = space + 1
        head, rest = rest[:cut].strip(), rest[cut:].strip()
        if head:
            out.append(head)
    return out


def _fit_units(sentence: str, max_tokens: int, count_tokens: Callable[[str], int]) -> list[str]:
    """One sentence as units that each fit: whole, or by clauses, or hard-split."""
    if count_tokens(sentence) <= max_tokens:
        return [sentence]
    units: list[str] = []
    current = ""
    for clause in _split_keep(sentence, _CLAUSE_END_RE):
        candidate = _join(current, clause)
        if count_tokens(candidate) <= max_tokens:
            current = candidate
            continue
        if current:
            units.append(current)
        if count_tokens(clause) <= max_tokens:
            current = clause
        else:
            units.extend(_hard_split(clause, max_tokens, count_tokens))
            current = ""
    if current:
        units.append(current)
    return units


def chunk_text(
    text: str,
    max_tokens: int,
    overlap_tokens: int,
    count_tokens: Callable[[str], int],
) -> list[str]:
    """Sentence-aligned chunks of at most ``max_tokens`` tokens each.

    Sentences are packed greedily; the next chunk starts with the trailing sentences of
    the previous one whose total is at most ``overlap_tokens`` (never the whole chunk,
    so packing always moves forward). Text that fits returns as one stripped chunk.
    """
    if max_tokens < 1:
        raise ValueError("max_tokens must be >= 1")
    overlap_tokens = max(0, min(overlap_tokens, max_tokens - 1))
    stripped = text.strip()
    if not stripped:
        return []
    if count_tokens(stripped) <= max_tokens:
        return [stripped]

    units: list[str] = []
    for sentence in split_sentences(stripped):
        units.extend(_fit_units(sentence, max_tokens, count_tokens))

    chunks: list[str] = []
    current: list[str] = []
    fresh = 0  # units in ``current`` not already emitted in the previous chunk
    for unit in units:
        candidate = _join_all(current + [unit])
        if current and count_tokens(candidate) > max_tokens:
            if fresh:
                chunks.append(_join_all(current))
            current = _overlap_tail(current, overlap_tokens, count_tokens)
            # Drop overlap sentences until the new unit fits beside them.
            while current and count_tokens(_join_all(current + [unit])) > max_tokens:
                current.pop(0)
            fresh = 0
        current.append(unit)
        fresh += 1
    if current and fresh:
        chunks.append(_join_all(current))
    return chunks


def _join_all(pieces: list[str]) -> str:
    out = ""
    for piece in pieces:
        out = _join(out, piece)
    return out


def _overlap_tail(units: list[str], overlap_tokens: int, count_tokens: Callable[[str], int]) -> list[str]:
    """The longest suffix of ``units`` (but not all of them) within ``overlap_tokens``."""
    if overlap_tokens <= 0:
        return []
    tail: list[str] = []
    for unit in reversed(units[1:]):
        if count_tokens(_join_all([unit] + tail)) > overlap_tokens:
            break
        tail.insert(0, unit)
    return tail

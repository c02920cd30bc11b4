"""The offline LLM: deterministic rules that do every LLM job without a model.

It is the default when no endpoint is configured and the fallback when one fails, so the
whole product (write pipeline, retrieval, chat, consolidation) works on a laptop with no
network. The rules are deliberately conservative: when unsure it keeps memories apart
(no merge, no supersede) and says less rather than inventing.

Memory-type rules (documented because the UI and the scorer rely on them):
- declarative: stable facts about the user, including health (always), address, contact,
  job, family, birthday, and likes/dislikes about things ("我不吃辣", "I love coffee");
- procedural: standing instructions about *how the assistant should respond or carry out
  tasks* — reply language/format/length/tone, how to address the user, and task settings
  such as seat choice when booking ("请用中文回答", "always answer briefly",
  "I prefer aisle seats");
- episodic: events anchored in time (a date or relative time word, or a past-event verb:
  "昨天去了…", "went hiking last Sunday"), including dated plans;
checked in that order after health: health > procedural > slot facts > episodic > declarative.

The rules live in one module per job: ``importance``, ``rewrite``, ``reply``, ``merge``,
``slots`` (newer wins).
"""
from __future__ import annotations

from datetime import datetime
from typing import Iterator, Sequence

from memory_core.llm.base import ChatMessage, LLMProvider, MemoryBrief, MergeProposal
from memory_core.llm.offline.importance import (
    _EMOTION_RE,
    as_asked_of_me,
    asked_question,
    importance_of,
    memory_type_of,
    summarize,
)
from memory_core.llm.offline.merge import _merged_text, near_duplicate
from memory_core.llm.offline.reply import (
    SNACKS,
    _stream_chunks,
    compose_reply,
    extract_avoidances,
    parse_memory_context,
)
from memory_core.llm.offline.rewrite import rewrite_query_text
from memory_core.llm.offline.slot_facts import states_own_attribute
from memory_core.llm.offline.states import has_none
from memory_core.llm.offline.slots import (
    answers_a_lasting_question,
    answers_a_slot,
    slot_statement,
    states_a_slot_or_preference,
    supersedes_text,
)
from memory_core.text.constraints import constraint_kind
from memory_core.text.entities import extract_entities
from memory_core.text.lang import detect_language
from memory_core.text.similarity import bigram_jaccard
from memory_core.types import Analysis, MemoryType

# ---------------------------------------------------------------- the provider


class OfflineLLM(LLMProvider):
    """Rule-based stand-in for every LLM job; deterministic, instant, no network."""

    name = "offline (rule-based)"
    offline = True

    def analyze(self, text: str, now: datetime, context: str | None = None) -> Analysis:
        clean = text.strip()
        importance, memory_type = importance_of(clean, now), memory_type_of(clean, now)
        question = asked_question(context or "")
        if question and importance > 1:  # "Thanks!" stays small talk whatever it answered
            answered = f"{as_asked_of_me(question)} {clean}"  # the user's question: "Do I have pets?"
            if (with_question := importance_of(answered, now)) > importance:
                importance, memory_type = with_question, memory_type_of(answered, now)
            if importance < 4 and (answers_a_slot(clean, context) or answers_a_lasting_question(clean, context)):
                # "Where do you live?" -> "Lisbon, by the river": the answer states a slot (home,
                # work, phone, e-mail), which is kept like "I live in Lisbon" ("I'd rather not
                # say" states none).
                importance, memory_type = 4, MemoryType.DECLARATIVE
        if importance < 4 and has_none(clean):  # "We don't have any pets", "我不会开车"
            importance, memory_type = 4, MemoryType.DECLARATIVE
        elif importance < 4 and states_own_attribute(clean):
            # "我驾照是C2的", "My shoe size is 43", "我的车牌是...": one of the user's slots, kept like
            # the named ones (home, job, phone); it had lived 180 days as "other content".
            importance, memory_type = 4, MemoryType.DECLARATIVE
        return Analysis(
            importance=importance,
            memory_type=memory_type,
            entities=extract_entities(clean),
            summary=summarize(clean),
            constraint_kind=constraint_kind(clean, as_asked_of_me(question) if question else None),
        )

    def rewrite_query(self, query: str, now: datetime) -> str:
        return rewrite_query_text(query, now)

    def reply(self, messages: Sequence[ChatMessage], memory_context: str, now: datetime,
              constraints: str = "") -> Iterator[str]:
        question = next((m.content for m in reversed(messages) if m.role == "user"), "")
        text = compose_reply(question, memory_context, constraints)
        lang = detect_language(question) if question.strip() else "zh"
        return _stream_chunks(text, lang)

    def propose_merges(self, memories: Sequence[MemoryBrief]) -> list[MergeProposal]:
        items = list(memories)
        parent = list(range(len(items)))
        reasons: dict[int, str] = {}

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                if items[i].memory_id == items[j].memory_id:
                    continue
                same, why = near_duplicate(items[i].content, items[j].content)
                if same:
                    ri, rj = find(i), find(j)
                    if ri != rj:
                        parent[rj] = ri
                        reasons.setdefault(ri, why)
        groups: dict[int, list[int]] = {}
        for i in range(len(items)):
            groups.setdefault(find(i), []).append(i)
        proposals: list[MergeProposal] = []
        for root, idx in sorted(groups.items(), key=lambda kv: kv[1][0]):
            members = [items[i] for i in idx]
            ids = list(dict.fromkeys(m.memory_id for m in members))
            if len(ids) < 2:
                continue
            proposals.append(MergeProposal(memory_ids=ids, merged_text=_merged_text(members),
                                           reason=f"near-duplicates ({reasons.get(root, 'similar text')})"))
        return proposals

    def supersedes(self, newer: MemoryBrief, older: MemoryBrief) -> bool:
        if newer.memory_id == older.memory_id:
            return False
        return supersedes_text(slot_statement(newer.content, newer.context),
                               slot_statement(older.content, older.context))

    def may_contradict(self, text: str, context: str | None = None) -> bool:
        return states_a_slot_or_preference(slot_statement(text, context))


__all__ = [
    "OfflineLLM", "SNACKS", "_EMOTION_RE", "as_asked_of_me", "asked_question", "bigram_jaccard", "compose_reply",
    "extract_avoidances", "importance_of", "memory_type_of", "near_duplicate", "parse_memory_context",
    "rewrite_query_text", "slot_statement", "summarize", "supersedes_text",
]

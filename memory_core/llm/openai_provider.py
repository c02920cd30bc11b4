"""An LLM provider for any OpenAI-compatible endpoint (OpenAI, Qwen, vLLM, Ollama).

Structured jobs ask for a JSON object and validate it strictly; anything malformed raises
``LLMResponseError`` so the fallback wrapper can hand the call to the offline provider.
Merge proposals may only name ids that were shown to the model.
"""
from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any, Iterator, Sequence

from memory_core.llm.base import ChatMessage, LLMProvider, MemoryBrief, MergeProposal
from memory_core.types import Analysis, MemoryType


class LLMResponseError(ValueError):
    """The endpoint answered, but not with what was asked for."""


_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)

ANALYZE_PROMPT = """You label a user's message for a long-term memory store. Today is {today}.
Return only a JSON object: {{"importance": 1-5, "memory_type": "declarative"|"episodic"|"procedural",
"entities": [up to 12 short strings], "summary": "one short sentence in the message's language"}}.
Importance: 5 health/allergies/safety; 4 addresses, contacts, family, work, firm preferences;
3 plans, dated events, hobbies; 2 mild opinions; 1 greetings and small talk.
declarative = stable facts; episodic = events in time; procedural = how the user wants things done.
If the message starts with "(In reply to: ...)", that is the question it answered: label the
answer with it in mind ("Yes, peanuts" to "Any food allergies?" is an allergy), but take the
entities and the summary from the answer itself."""

REWRITE_PROMPT = """Rewrite the user's message into a standalone search query for their long-term memories.
Today is {today}. Turn relative dates into absolute dates (YYYY-MM-DD or YYYY-MM). Keep the language.
Return only the query text."""

MERGE_PROMPT = """These are memories of one user. Find groups that say the same thing (redundant), and for
each group write one merged text that keeps every detail. Return only JSON:
{"groups": [{"ids": ["<id>", ...], "merged_text": "...", "reason": "..."}]}. Use only the ids given.
Groups need at least two ids. Return {"groups": []} if nothing is redundant."""

SUPERSEDE_PROMPT = """Does the NEWER memory contradict and replace the OLDER one (same attribute of the user,
new value: a new address, a changed preference)? A memory may start with "(In reply to: ...)", the
question it answered ("Porto" to "Where do you live now?" is a new address).
Return only JSON: {"supersedes": true|false}."""

REPLY_SYSTEM = """You are a helpful assistant with long-term memory of this user. Today is {today}.
What you remember about the user (dated, most relevant first):
{memories}
Use these memories when they matter (never recommend something the user is allergic to or dislikes).
Do not invent memories. Answer in the user's language."""


def parse_json_object(text: str) -> dict[str, Any]:
    match = _JSON_OBJECT.search(text or "")
    if not match:
        raise LLMResponseError("no JSON object in the model's answer")
    try:
        value = json.loads(match.group(0))
    except json.JSONDecodeError as exc:
        raise LLMResponseError(f"malformed JSON from the model: {exc}") from exc
    if not isinstance(value, dict):
        raise LLMResponseError("the model's JSON is not an object")
    return value


def validate_analysis(data: dict[str, Any]) -> Analysis:
    importance = data.get("importance")
    if isinstance(importance, bool) or not isinstance(importance, (int, float)) or not 1 <= int(importance) <= 5:
        raise LLMResponseError(f"importance must be 1-5, got {importance!r}")
    try:
        memory_type = MemoryType(str(data.get("memory_type", "")).lower())
    except ValueError as exc:
        raise LLMResponseError(f"unknown memory_type {data.get('memory_type')!r}") from exc
    entities = data.get("entities") or []
    if not isinstance(entities, list) or not all(isinstance(e, str) for e in entities):
        raise LLMResponseError("entities must be a list of strings")
    summary = data.get("summary") or ""
    if not isinstance(summary, str):
        raise LLMResponseError("summary must be a string")
    clean = list(dict.fromkeys(e.strip()[:64] for e in entities if e.strip()))[:12]
    return Analysis(importance=int(importance), memory_type=memory_type, entities=clean, summary=summary.strip()[:300])


def validate_merges(data: dict[str, Any], allowed_ids: set[str]) -> list[MergeProposal]:
    groups = data.get("groups")
    if not isinstance(groups, list):
        raise LLMResponseError("groups must be a list")
    proposals: list[MergeProposal] = []
    used: set[str] = set()
    for group in groups:
        if not isinstance(group, dict):
            raise LLMResponseError("each group must be an object")
        ids = group.get("ids")
        text = group.get("merged_text")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise LLMResponseError("group ids must be a list of strings")
        if not isinstance(text, str) or not text.strip():
            raise LLMResponseError("merged_text must be a non-empty string")
        unknown = [i for i in ids if i not in allowed_ids]
        if unknown:
            raise LLMResponseError(f"the model named ids it was not shown: {unknown[:3]}")
        unique = [i for i in dict.fromkeys(ids) if i not in used]
        if len(unique) < 2:
            continue
        used.update(unique)
        proposals.append(MergeProposal(memory_ids=unique, merged_text=text.strip(), reason=str(group.get("reason", ""))[:300]))
    return proposals


def in_reply_to(text: str, context: str | None) -> str:
    """``text`` headed by the question it answered, as the prompts above describe."""
    return f"(In reply to: {context.strip()})\n{text}" if context and context.strip() else text


def _with_question(memory: MemoryBrief) -> str:
    return in_reply_to(memory.content, memory.context).replace("\n", " ")


class OpenAICompatibleLLM(LLMProvider):
    offline = False

    def __init__(self, base_url: str, api_key: str, model: str, timeout_s: float = 20.0, max_retries: int = 2) -> None:
        from openai import OpenAI

        self.name = model
        self._model = model
        self._client = OpenAI(base_url=base_url or None, api_key=api_key or "not-needed",
                              timeout=timeout_s, max_retries=max_retries)

    def _complete(self, system: str, user: str, max_tokens: int = 400) -> str:
        response = self._client.chat.completions.create(
            model=self._model,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            temperature=0,
            max_tokens=max_tokens,
        )
        if not response.choices:
            raise LLMResponseError("the endpoint returned no choices")
        return response.choices[0].message.content or ""

    def analyze(self, text: str, now: datetime, context: str | None = None) -> Analysis:
        answer = self._complete(ANALYZE_PROMPT.format(today=now.date().isoformat()), in_reply_to(text, context))
        return validate_analysis(parse_json_object(answer))

    def rewrite_query(self, query: str, now: datetime) -> str:
        answer = self._complete(REWRITE_PROMPT.format(today=now.date().isoformat()), query, max_tokens=120).strip()
        if not answer:
            raise LLMResponseError("empty rewrite")
        return answer[:1000]

    def reply(self, messages: Sequence[ChatMessage], memory_context: str, now: datetime) -> Iterator[str]:
        system = REPLY_SYSTEM.format(today=now.date().isoformat(), memories=memory_context or "(nothing yet)")
        payload = [{"role": "system", "content": system}] + [{"role": m.role, "content": m.content} for m in messages]
        stream = self._client.chat.completions.create(model=self._model, messages=payload, temperature=0.3, stream=True)
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta and chunk.choices[0].delta.content:
                yield chunk.choices[0].delta.content

    def propose_merges(self, memories: Sequence[MemoryBrief]) -> list[MergeProposal]:
        if len(memories) < 2:
            return []
        listing = "\n".join(
            json.dumps({"id": m.memory_id, "date": m.created_at.date().isoformat(), "text": m.content}, ensure_ascii=False)
            for m in memories
        )
        answer = self._complete(MERGE_PROMPT, listing, max_tokens=1200)
        return validate_merges(parse_json_object(answer), {m.memory_id for m in memories})

    def supersedes(self, newer: MemoryBrief, older: MemoryBrief) -> bool:
        user = (f"OLDER ({older.created_at.date().isoformat()}): {_with_question(older)}\n"
                f"NEWER ({newer.created_at.date().isoformat()}): {_with_question(newer)}")
        value = parse_json_object(self._complete(SUPERSEDE_PROMPT, user, max_tokens=30)).get("supersedes")
        if not isinstance(value, bool):
            raise LLMResponseError("supersedes must be a boolean")
        return value

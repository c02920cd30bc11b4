"""An LLM provider for any OpenAI-compatible endpoint (OpenAI, Qwen, vLLM, Ollama).

Structured jobs ask for a JSON object and validate it strictly against pydantic models of the
expected reply; anything malformed raises ``LLMResponseError`` so the fallback wrapper can hand
the call to the offline provider.
Merge proposals may only name ids that were shown to the model.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from datetime import datetime
from typing import Annotated, Any, Iterator, Sequence, TypeVar

from pydantic import BaseModel, BeforeValidator, StrictBool, StrictFloat, StrictInt, StrictStr, field_validator
from pydantic import ValidationError as PydanticValidationError

from memory_core.llm.base import ChatMessage, LLMProvider, MemoryBrief, MergeProposal
from memory_core.llm.prompt import build_reply_messages
from memory_core.text.constraints import constraint_kind
from memory_core.text.intent import asked_question
from memory_core.types import Analysis, MemoryType


class LLMResponseError(ValueError):
    """The endpoint answered, but not with what was asked for."""


_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)

ANALYZE_PROMPT = """You label a user's message for a long-term memory store. Today is {today}.
Return only a JSON object: {{"importance": 1-5, "memory_type": "declarative"|"episodic"|"procedural",
"entities": [up to 12 short strings], "summary": "one short sentence in the message's language",
"constraint": null|"allergy"|"medical"|"diet"|"dislike"|"instruction"|"trait"}}.
constraint: what the user must never be offered: an allergy or intolerance, a condition or medicine
that rules things out, a diet (vegetarian, halal, no alcohol), a dislike of a food, drink or activity,
or a standing "never ..." request; "trait" for a lasting trait of the user that limits what suits
them (their height, colour blindness, being a night owl, the computer or phone platform they use);
null otherwise (also when the message lifts one: "not allergic").
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

SUPERSEDE_PROMPT = """Does the NEWER memory replace the OLDER one? It does when both are about the same person and the
same attribute and the newer gives a new value (a new address or employer, a corrected code or number,
a changed preference, "not allergic after all"), or when the newer says everything the older says and
more. It does not when they are about different people ("my boss" / "my cousin", two speakers of a
transcript), when the older stays true beside the newer (a second allergy, another hobby, another
trip), or when either is only a question. A memory may start with "(In reply to: ...)", the question it
answered ("Porto" to "Where do you live now?" is a new address).
Return only JSON: {"supersedes": true|false}."""



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


CONSTRAINT_KINDS = ("allergy", "medical", "diet", "dislike", "instruction", "trait")


def _or_empty(empty: Any) -> Any:
    """A missing or falsy value ("", null, 0, []) reads as ``empty``, as models often send."""
    return lambda value: value or empty


class _AnalysisReply(BaseModel):
    """The analysis JSON (``ANALYZE_PROMPT``); extra keys are ignored."""

    importance: StrictInt | StrictFloat  # 4.0 and 4.6 read as 4; "4" and true are refused
    memory_type: MemoryType
    entities: Annotated[list[StrictStr], BeforeValidator(_or_empty([]))] = []
    summary: Annotated[StrictStr, BeforeValidator(_or_empty(""))] = ""
    constraint: Any = None  # one of CONSTRAINT_KINDS, or null

    @field_validator("importance")
    @classmethod
    def _one_to_five(cls, value: float) -> int:
        if not math.isfinite(value) or not 1 <= int(value) <= 5:  # NaN/inf, or out of range once truncated
            raise ValueError(f"importance must be 1-5, got {value!r}")
        return int(value)

    @field_validator("constraint")
    @classmethod
    def _known_constraint(cls, value: Any) -> str | None:
        if value is not None and value not in CONSTRAINT_KINDS:
            raise ValueError(f"unknown constraint {value!r}")
        return value

    @field_validator("memory_type", mode="before")
    @classmethod
    def _type_name(cls, value: Any) -> str:
        return str(value).lower()


class _MergeGroup(BaseModel):
    ids: list[StrictStr]
    merged_text: StrictStr
    reason: Annotated[str, BeforeValidator(str)] = ""

    @field_validator("merged_text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("merged_text must be a non-empty string")
        return value


class _MergeReply(BaseModel):
    groups: list[_MergeGroup]


class _SupersedeReply(BaseModel):
    supersedes: StrictBool


_Reply = TypeVar("_Reply", bound=BaseModel)


def _parse(model: type[_Reply], data: dict[str, Any]) -> _Reply:
    """``data`` as ``model`` (pydantic), or ``LLMResponseError`` naming what was wrong."""
    try:
        return model.model_validate(data)
    except PydanticValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "reply"
        raise LLMResponseError(f"{where}: {first['msg']} (got {first.get('input')!r})"[:300]) from None


def validate_analysis(data: dict[str, Any]) -> Analysis:
    reply = _parse(_AnalysisReply, data)
    clean = list(dict.fromkeys(e.strip()[:64] for e in reply.entities if e.strip()))[:12]
    return Analysis(importance=int(reply.importance), memory_type=reply.memory_type, entities=clean,
                    summary=reply.summary.strip()[:300], constraint_kind=reply.constraint)


def validate_merges(data: dict[str, Any], allowed_ids: set[str]) -> list[MergeProposal]:
    reply = _parse(_MergeReply, data)
    proposals: list[MergeProposal] = []
    used: set[str] = set()
    for group in reply.groups:
        unknown = [i for i in group.ids if i not in allowed_ids]
        if unknown:
            raise LLMResponseError(f"the model named ids it was not shown: {unknown[:3]}")
        unique = [i for i in dict.fromkeys(group.ids) if i not in used]
        if len(unique) < 2:
            continue
        used.update(unique)
        proposals.append(MergeProposal(memory_ids=unique, merged_text=group.merged_text.strip(),
                                       reason=group.reason[:300]))
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
        data = parse_json_object(answer)
        analysis = validate_analysis(data)
        if "constraint" not in data:  # an older prompt or a terse model: the rules mark it
            analysis = replace(analysis, constraint_kind=constraint_kind(text, asked_question(context or "") or None))
        return analysis

    def rewrite_query(self, query: str, now: datetime) -> str:
        answer = self._complete(REWRITE_PROMPT.format(today=now.date().isoformat()), query, max_tokens=120).strip()
        if not answer:
            raise LLMResponseError("empty rewrite")
        return answer[:1000]

    def reply(self, messages: Sequence[ChatMessage], memory_context: str, now: datetime,
              constraints: str = "") -> Iterator[str]:
        payload = build_reply_messages(messages, memory_context, constraints, now)
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
        return _parse(_SupersedeReply, parse_json_object(self._complete(SUPERSEDE_PROMPT, user, max_tokens=30))).supersedes

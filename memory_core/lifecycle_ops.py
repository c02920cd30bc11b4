"""A memory's life after it is written: edit, expire, restore, supersede-undo, delete, erase.

One module for every status change, used by the engine's facade (a person's edit, expiry,
restore or deletion) and by the maintenance jobs (the expiry job extends and expires, merges
re-index), so each rule lives once: every change is conditional on what
was read, writes a history entry with before and after, and keeps the vector store and the
cache in step (a failed vector write leaves the row pending for reconcile, never wrong).

Functions take the engine's ``EngineParts``, not the engine (see ``memory_core.parts``).
"""
from __future__ import annotations

import logging
from datetime import datetime
from typing import Any, Mapping, Sequence

from memory_core.archive_files import (
    archive_path,
    archived_entry,
    drop_from_archive,
    erase_user_archive,
)
from memory_core.errors import NotFoundError, ValidationError
from memory_core.lifecycle import content_hash, expires_at_for
from memory_core.parts import EngineParts
from memory_core.records import MemoryRecord
from memory_core.records import snapshot
from memory_core.text.event_time import event_span
from memory_core.types import MemoryStatus, MemoryType
from memory_core.validation import (
    check_datetime,
    check_importance,
    check_memory_id,
    check_user_id,
    clean_text,
)

log = logging.getLogger(__name__)
UNSET: Any = object()  # "not given" for ``expires_at``, where None means "never expires"

_ACTIONS = {"active": "restore", "expired": "expire", "archived": "archive", "superseded": "supersede",
            "deleted": "delete"}


def get(parts: EngineParts, memory_id: str, user_id: str | None = None) -> MemoryRecord:
    """A memory by id; with ``user_id``, only if it belongs to that user (no existence leak)."""
    record = parts.repo.get(check_memory_id(memory_id))
    if user_id is not None:
        user_id = check_user_id(user_id)
    if record is None or (user_id is not None and record.user_id != user_id):
        raise NotFoundError(f"memory {memory_id!r} not found")
    return record


def reindex(parts: EngineParts, records: Sequence[MemoryRecord], known: Mapping[str, Any] | None = None) -> None:
    """Write these memories' vectors (``known``: vectors of unchanged texts, reused); a failure
    leaves them pending for reconcile."""
    try:
        if known:
            parts.indexer.index_records(list(records), known)
        else:
            parts.indexer.index_records(list(records))
    except Exception as exc:
        log.warning("re-index failed; left pending for reconcile: %s", exc)


def unindex(parts: EngineParts, memory_ids: Sequence[str], user_id: str) -> None:
    """Remove these vectors; a failure leaves orphans that reconcile removes."""
    try:
        parts.vectors.delete(list(memory_ids), user_id=user_id)
    except Exception as exc:
        log.warning("vector delete failed; reconcile will remove the orphan: %s", exc)


def update(parts: EngineParts, memory_id: str, *, actor: str, content: str | None = None,
           importance: int | None = None, memory_type: MemoryType | str | None = None,
           expires_at: datetime | None = UNSET, user_id: str | None = None, note: str = "") -> MemoryRecord:
    """Edit a memory; content edits are redacted, re-analysed for entities, re-embedded and
    re-indexed. Changing importance recomputes expiry unless ``expires_at`` is given."""
    settings = parts.settings
    before = get(parts, memory_id, user_id)
    now = parts.clock.now()
    fields: dict[str, Any] = {"updated_at": now}
    if content is not None:
        text, values, _kinds = parts.vault.redact(clean_text(content, settings.max_input_chars))
        if text != before.content:
            # The tags the edit kept keep their values; a number typed in is sealed like a user's.
            kept = parts.vault.unseal(before.sealed)
            if before.sealed and not kept:
                raise ValidationError("this memory's phone numbers or e-mail addresses are sealed with another "
                                      "key: set the PII_KEY that sealed them before editing its text")
            fields["sealed"] = parts.vault.seal({**kept, **values}, text)
            analysis = parts.llm.analyze(text, now)
            # Its time words still speak from when it was written, not from the edit.
            event = event_span(text, before.created_at)
            fields.update(content=text, entities=analysis.entities, summary=analysis.summary,
                          constraint_kind=analysis.constraint_kind,
                          content_hash=content_hash(parts.embedder.name, text),
                          event_start=event.start if event else None, event_end=event.end if event else None)
    if importance is not None:
        fields["importance"] = check_importance(importance)
        if expires_at is UNSET:
            fields["expires_at"] = expires_at_for(importance, before.created_at, settings.ttl_days_by_importance)
    if memory_type is not None:
        try:
            fields["memory_type"] = MemoryType(memory_type).value
        except ValueError as exc:
            raise ValidationError(f"unknown memory type {memory_type!r}") from exc
    if expires_at is not UNSET:
        fields["expires_at"] = check_datetime(expires_at, "expires_at")
    if set(fields) == {"updated_at"}:
        return before
    active = before.status is MemoryStatus.ACTIVE
    if active:
        fields["vector_written"] = False
    with parts.repo.session() as session:
        parts.repo.update_fields(session, before.memory_id, **fields)
        after = parts.repo.get(before.memory_id, session)
        assert after is not None
        parts.repo.add_history(session, memory_id=before.memory_id, user_id=before.user_id, action="update",
                               actor=actor, at=now, before=snapshot(before), after=snapshot(after), note=note)
    if active:
        reindex(parts, [after])
    parts.cache.invalidate_user(before.user_id)
    return get(parts, before.memory_id)


def expire(parts: EngineParts, memory_id: str, *, actor: str, user_id: str | None = None,
           note: str = "") -> MemoryRecord:
    """Take a memory out of retrieval (kept, restorable); its vector is removed."""
    return set_status(parts, memory_id, MemoryStatus.EXPIRED, actor=actor, user_id=user_id, note=note)


def restore(parts: EngineParts, memory_id: str, *, actor: str, user_id: str | None = None,
            note: str = "") -> MemoryRecord:
    """Bring an expired, superseded or archived memory back into retrieval (re-indexed)."""
    if get(parts, memory_id, user_id).status is MemoryStatus.ARCHIVED:
        return restore_from_archive(parts, memory_id, actor, note=note)
    return set_status(parts, memory_id, MemoryStatus.ACTIVE, actor=actor, user_id=user_id, note=note)


def set_status(parts: EngineParts, memory_id: str, status: MemoryStatus, *, actor: str, user_id: str | None,
               note: str) -> MemoryRecord:
    before = get(parts, memory_id, user_id)
    if before.status is status:
        return before
    now = parts.clock.now()
    fields: dict[str, Any] = {"status": status.value, "updated_at": now}
    if status is MemoryStatus.ACTIVE:
        fields.update(expired_at=None, superseded_by=None, vector_written=False)
        if before.expires_at is not None and before.expires_at <= now:
            # Restored by a person: give it a fresh lifetime from today, not an instant re-expiry.
            fields["expires_at"] = expires_at_for(before.importance, now, parts.settings.ttl_days_by_importance)
    else:
        fields.update(expired_at=now if status is MemoryStatus.EXPIRED else before.expired_at,
                      vector_written=False)
    with parts.repo.session() as session:
        # Conditional on the status read above: an expiry racing a merge must not turn the
        # merged (superseded) original into an expired one, half-breaking the merge's undo.
        if not parts.repo.update_if_status(session, before.memory_id, before.status, **fields):
            raise ValidationError(f"memory {before.memory_id} changed while it was being set to {status.value} "
                                  "(another job or person got there first): reload and try again")
        after = parts.repo.get(before.memory_id, session)
        assert after is not None
        parts.repo.add_history(session, memory_id=before.memory_id, user_id=before.user_id,
                               action=_ACTIONS[status.value], actor=actor, at=now, before=snapshot(before),
                               after=snapshot(after), note=note)
    if status is MemoryStatus.ACTIVE:
        reindex(parts, [after])
    else:
        unindex(parts, [before.memory_id], before.user_id)
    parts.cache.invalidate_user(before.user_id)
    return get(parts, before.memory_id)


def restore_from_archive(parts: EngineParts, memory_id: str, actor: str, note: str = "") -> MemoryRecord:
    """Bring an archived memory back: active again, content from the archive file when SQL has
    none, a fresh lifetime if its expiry passed, re-indexed. Its archive line is then removed."""
    record = parts.repo.get(check_memory_id(memory_id))
    if record is None:
        raise NotFoundError(f"memory {memory_id!r} not found")
    if record.status is not MemoryStatus.ARCHIVED:
        raise ValidationError(f"memory {memory_id!r} is {record.status.value}, not archived")
    path = archive_path(parts.settings, record.user_id)
    entry = archived_entry(parts.settings, record.user_id, record.memory_id)
    content, sealed = record.content, record.sealed
    if entry is not None and entry["record"].get("content_hash") == record.content_hash:
        content, sealed = entry["record"]["content"], sealed or entry["record"].get("sealed")
    elif not content:
        raise NotFoundError(f"the archive file has no copy of memory {memory_id!r}")
    now = parts.clock.now()
    fields: dict[str, Any] = dict(status=MemoryStatus.ACTIVE.value, content=content, sealed=sealed, expired_at=None,
                                  superseded_by=None, updated_at=now, vector_written=False)
    if record.expires_at is not None and record.expires_at <= now:
        fields["expires_at"] = expires_at_for(record.importance, now, parts.settings.ttl_days_by_importance)
    with parts.repo.session() as session:
        if not parts.repo.update_if_status(session, record.memory_id, MemoryStatus.ARCHIVED, **fields):
            raise ValidationError(f"memory {memory_id!r} changed while it was being restored")
        after = parts.repo.get(record.memory_id, session)
        assert after is not None
        parts.repo.add_history(session, memory_id=record.memory_id, user_id=record.user_id, action="restore",
                               actor=actor, at=now, before=snapshot(record), after=snapshot(after),
                               note=note or f"restored from archive file {path.name}")
    drop_from_archive(parts.settings, record.user_id, [record.memory_id])
    reindex(parts, [after])
    parts.cache.invalidate_user(record.user_id)
    restored = parts.repo.get(record.memory_id)
    assert restored is not None
    return restored


def delete(parts: EngineParts, memory_id: str, *, actor: str, user_id: str | None = None, note: str = "") -> None:
    """Hard-delete one memory (row and vector). The history keeps who deleted what.

    The memories it replaced (newer wins, or a merge) do not stay pointing at nothing: if it
    was current, they are current again ("forget that" after "I live in Porto now" leaves
    "I live in Lisbon" as the user's address, not no address at all); if it had itself been
    replaced, they now point at what replaced it."""
    before = get(parts, memory_id, user_id)
    now = parts.clock.now()
    successor = before.superseded_by if before.status is MemoryStatus.SUPERSEDED else None
    with parts.repo.session() as session:
        parts.repo.delete_row(session, before.memory_id)
        parts.repo.add_history(session, memory_id=before.memory_id, user_id=before.user_id, action="delete",
                               actor=actor, at=now, before=snapshot(before), after=None, note=note)
        replaced = parts.repo.replaced_by(session, before.user_id, before.memory_id)
        if successor is not None:
            for old in replaced:
                parts.repo.update_fields(session, old.memory_id, superseded_by=successor, updated_at=now)
                after = parts.repo.get(old.memory_id, session)
                parts.repo.add_history(session, memory_id=old.memory_id, user_id=old.user_id, action="update",
                                       actor=actor, at=now, before=snapshot(old),
                                       after=snapshot(after) if after else None,
                                       note=f"the memory that replaced it ({before.memory_id}) was deleted; "
                                            f"now replaced by {successor}")
    unindex(parts, [before.memory_id], before.user_id)
    try:
        drop_from_archive(parts.settings, before.user_id, [before.memory_id])
    except Exception as exc:
        log.warning("could not remove a deleted memory from its archive file: %s", exc)
    if successor is None:
        for old in replaced:
            set_status(parts, old.memory_id, MemoryStatus.ACTIVE, actor=actor, user_id=old.user_id,
                       note=f"current again: the memory that replaced it ({before.memory_id}) was deleted")
    parts.cache.invalidate_user(before.user_id)


def delete_user(parts: EngineParts, user_id: str, *, actor: str, note: str = "erasure request") -> int:
    """Erase everything of a user: memories, vectors, messages, archive file, and the content
    kept in their audit history (the history keeps that an erasure happened, by whom and when)."""
    user_id = check_user_id(user_id)
    now = parts.clock.now()
    with parts.repo.session() as session:
        ids = parts.repo.delete_user_rows(session, user_id)
        parts.repo.erase_history_content(session, user_id)
        parts.repo.add_history(session, memory_id="*", user_id=user_id, action="delete_user", actor=actor,
                               at=now, before={"memories": len(ids)}, after=None, note=note)
    try:
        parts.vectors.delete_user(user_id)
    except Exception as exc:  # reconcile removes orphans of users SQL no longer has
        log.warning("vector delete for an erased user failed; reconcile will remove them: %s", exc)
    erase_user_archive(parts.settings, user_id)  # the archive holds copies of the content too
    parts.cache.invalidate_user(user_id)
    return len(ids)

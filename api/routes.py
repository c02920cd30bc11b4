"""The memory routes: add, add_many, search, list, get, update, expire, restore, delete; and the
admin routes: history, erase a user, reconcile.

Every route maps the caller's user ids into its tenant's namespace before the engine sees them,
passes ``user_id`` to the engine's by-id calls (so a memory of anyone else is "not found", with
no hint that it exists) and maps ids back on the way out. Handlers are plain functions: FastAPI
runs them on its thread pool, and the engine is thread-safe.
"""
from __future__ import annotations

from typing import Any, Callable

from fastapi import APIRouter, Depends, Query, Response

from memory_core import AddItem, MemoryEngine, MemoryQuery, MemoryStatus, NotFoundError, SearchFilters, TimeRange
from memory_core.errors import ValidationError
from api import models
from api.deps import ApiState, GuardedRoute, admin, caller, engine, state, writer
from api.keys import ApiPrincipal
from api.tenancy import caller_user, engine_user, owns, prefix

router = APIRouter(prefix="/v1", route_class=GuardedRoute)
_USER = Query(description="Your user id.")


def _memory(tenant: str, record: Any) -> models.Memory:
    return models.Memory.of(tenant, record)


# ---- write ---------------------------------------------------------------------------------------
@router.post("/memories", status_code=201, response_model=models.AddResponse, tags=["memories"])
def add(body: models.AddRequest, who: ApiPrincipal = Depends(writer),
        memory: MemoryEngine = Depends(engine)) -> models.AddResponse:
    """Remember text for a user (redacted, chunked, scored, embedded; near-duplicates refresh
    the memory they repeat)."""
    result = memory.add(engine_user(who.tenant, body.user_id), body.content, session_id=body.session_id,
                        metadata=body.metadata, source=body.source, at=body.at, actor=who.actor,
                        context=body.context)
    return models.AddResponse.of(result)


@router.post("/memories/batch", status_code=201, response_model=models.AddManyResponse, tags=["memories"])
def add_many(body: models.AddManyRequest, who: ApiPrincipal = Depends(writer),
             shared: ApiState = Depends(state)) -> models.AddManyResponse:
    """Batched add: every item is validated before any is written."""
    if len(body.items) > shared.max_batch:
        raise ValidationError(f"too many items: {len(body.items)} (the limit is {shared.max_batch} per request)")
    items = [AddItem(user_id=engine_user(who.tenant, i.user_id), content=i.content, session_id=i.session_id,
                     metadata=i.metadata, source=i.source, at=i.at, context=i.context) for i in body.items]
    results = shared.engine.add_many(items, actor=who.actor)
    return models.AddManyResponse(results=[models.AddResponse.of(r) for r in results])


# ---- read ----------------------------------------------------------------------------------------
def _filters(body: models.Filters | None) -> SearchFilters | None:
    if body is None:
        return None
    window = TimeRange(start=body.time_from, end=body.time_to) if body.time_from or body.time_to else None
    return SearchFilters(time_range=window, memory_types=tuple(body.memory_types), min_importance=body.min_importance,
                         entities=tuple(body.entities))


@router.post("/search", response_model=models.SearchOut, tags=["memories"])
def search(body: models.SearchRequest, who: ApiPrincipal = Depends(caller),
           memory: MemoryEngine = Depends(engine)) -> models.SearchOut:
    """The user's most useful memories for a query, with score parts and a dated context block,
    and the user's constraints (allergies, diets, ...) that bear on it whatever their rank.
    ``degraded`` is true when the vector store was down and SQL keyword search answered."""
    response = memory.search(engine_user(who.tenant, body.user_id), body.query, top_k=body.top_k,
                             context=body.context, filters=_filters(body.filters), at=body.at,
                             min_relevance=body.min_relevance)
    # The user's read: their own phone numbers and e-mail addresses come back (engine.reveal);
    # listing and getting memories (administration) shows the placeholders.
    return models.SearchOut.of(who.tenant, memory.reveal(response))


@router.get("/memories", response_model=models.MemoryPage, tags=["memories"])
def list_memories(user_id: str = _USER, status: list[MemoryStatus] = Query(default=[]),
                  limit: int = Query(default=50, ge=1, le=200), offset: int = Query(default=0, ge=0),
                  who: ApiPrincipal = Depends(caller), memory: MemoryEngine = Depends(engine)) -> models.MemoryPage:
    """A user's memories, newest first (every status unless ``status`` is given)."""
    page = memory.list_memories(MemoryQuery(user_id=engine_user(who.tenant, user_id), statuses=tuple(status),
                                            limit=limit, offset=offset))
    return models.MemoryPage(items=[_memory(who.tenant, r) for r in page.items], total=page.total)


@router.get("/memories/{memory_id}", response_model=models.Memory, tags=["memories"])
def get(memory_id: str, user_id: str = _USER, who: ApiPrincipal = Depends(caller),
        memory: MemoryEngine = Depends(engine)) -> models.Memory:
    return _memory(who.tenant, memory.get(memory_id, engine_user(who.tenant, user_id)))


@router.get("/users", response_model=models.UsersOut, tags=["memories"])
def users(who: ApiPrincipal = Depends(caller), memory: MemoryEngine = Depends(engine)) -> models.UsersOut:
    """Your tenant's users that have active memories, with their counts."""
    return models.UsersOut(users=[models.UserCount(user_id=caller_user(who.tenant, uid), active_memories=n)
                                  for uid, n in memory.users() if owns(who.tenant, uid)])


# ---- edit ----------------------------------------------------------------------------------------
@router.patch("/memories/{memory_id}", response_model=models.Memory, tags=["memories"])
def update(memory_id: str, body: models.UpdateRequest, user_id: str = _USER, who: ApiPrincipal = Depends(writer),
           memory: MemoryEngine = Depends(engine)) -> models.Memory:
    """Edit a memory. Content edits are redacted and re-indexed; ``expires_at: null`` means never."""
    changes: dict[str, Any] = {"content": body.content, "importance": body.importance,
                               "memory_type": body.memory_type, "note": body.note}
    if "expires_at" in body.model_fields_set:
        changes["expires_at"] = body.expires_at
    record = memory.update(memory_id, actor=who.actor, user_id=engine_user(who.tenant, user_id), **changes)
    return _memory(who.tenant, record)


def _change_status(change: Callable[..., Any], memory_id: str, body: models.NoteRequest | None, user_id: str,
                   who: ApiPrincipal) -> models.Memory:
    record = change(memory_id, actor=who.actor, user_id=engine_user(who.tenant, user_id), note=body.note if body else "")
    return _memory(who.tenant, record)


@router.post("/memories/{memory_id}/expire", response_model=models.Memory, tags=["memories"])
def expire(memory_id: str, body: models.NoteRequest | None = None, user_id: str = _USER,
           who: ApiPrincipal = Depends(writer), memory: MemoryEngine = Depends(engine)) -> models.Memory:
    """Take a memory out of retrieval (kept, restorable)."""
    return _change_status(memory.expire, memory_id, body, user_id, who)


@router.post("/memories/{memory_id}/restore", response_model=models.Memory, tags=["memories"])
def restore(memory_id: str, body: models.NoteRequest | None = None, user_id: str = _USER,
            who: ApiPrincipal = Depends(writer), memory: MemoryEngine = Depends(engine)) -> models.Memory:
    """Bring an expired, superseded or archived memory back into retrieval."""
    return _change_status(memory.restore, memory_id, body, user_id, who)


@router.delete("/memories/{memory_id}", status_code=204, tags=["memories"])
def delete(memory_id: str, user_id: str = _USER, who: ApiPrincipal = Depends(writer),
           memory: MemoryEngine = Depends(engine)) -> Response:
    """Hard-delete one memory (row and vector; what it had replaced becomes current again)."""
    memory.delete(memory_id, actor=who.actor, user_id=engine_user(who.tenant, user_id), note="deleted through the API")
    return Response(status_code=204)


# ---- admin ---------------------------------------------------------------------------------------
@router.get("/admin/history", response_model=models.HistoryOut, tags=["admin"])
def history(user_id: str = _USER, memory_id: str | None = None,
            limit: int = Query(default=200, ge=1, le=5000), who: ApiPrincipal = Depends(admin),
            shared: ApiState = Depends(state)) -> models.HistoryOut:
    """The audit history of one memory, or of a user's memories (newest first): who did what,
    when, with the memory before and after."""
    user = engine_user(who.tenant, user_id)
    if memory_id is None:
        entries = shared.engine.user_history(user, limit=min(limit, shared.history_limit))
    else:
        entries = [e for e in shared.engine.history(memory_id) if e.user_id == user]
        if not entries:
            raise NotFoundError(f"memory {memory_id!r} not found")
    return models.HistoryOut(entries=[models.History.of(who.tenant, e) for e in entries[:limit]])


@router.post("/admin/erase", response_model=models.Erased, tags=["admin"])
def erase(body: models.EraseRequest, who: ApiPrincipal = Depends(admin),
          memory: MemoryEngine = Depends(engine)) -> models.Erased:
    """Erase everything of a user (memories, vectors, messages, archived copies, the content in
    their history). The history keeps that it happened, by which key and when."""
    count = memory.delete_user(engine_user(who.tenant, body.user_id), actor=who.actor, note=body.note)
    return models.Erased(user_id=body.user_id, memories_erased=count)


@router.post("/admin/reconcile", response_model=models.ReconcileOut, tags=["admin"])
def reconcile(body: models.ReconcileRequest | None = None, who: ApiPrincipal = Depends(admin),
              memory: MemoryEngine = Depends(engine)) -> models.ReconcileOut:
    """Make the vector store match SQL for one user or every user of your tenant (missing,
    orphan and stale vectors). Other tenants' users are not touched."""
    if body is not None and body.user_id is not None:
        targets = [engine_user(who.tenant, body.user_id)]
    else:
        targets = [uid for uid, _ in memory.users() if owns(who.tenant, uid)]
    totals = {"users": 0, "written": 0, "removed": 0, "reembedded": 0}
    errors: list[str] = []
    own = prefix(who.tenant)
    for uid in targets:
        report = memory.reconcile(uid)
        for name in totals:
            totals[name] += getattr(report, name)
        # The engine names users in its messages: never show the namespaced form.
        errors += [e.replace(repr(uid), repr(caller_user(who.tenant, uid))).replace(own, "") for e in report.errors]
    return models.ReconcileOut(**totals, errors=errors)

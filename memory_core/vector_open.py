"""Opening the vector index for the engine, and rebuilding it from SQL when its Milvus Lite
file is damaged (``memory_core.vectors.lite_damage``): the app starts, says what happened, and
answers from SQL until the index is whole again."""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from memory_core.errors import BackendUnavailable
from memory_core.vectors import open_vector_store
from memory_core.vectors.base import VectorStore
from memory_core.vectors.lite_damage import RebuildingStore, looks_damaged, move_aside

if TYPE_CHECKING:
    from memory_core.config import Settings
    from memory_core.parts import EngineParts

log = logging.getLogger(__name__)


def open_vectors(settings: "Settings", dim: int, settled: Callable[[str], bool] | None = None) -> VectorStore:
    """The configured store; a damaged Lite file is moved aside and a fresh store opened,
    wrapped so that searches wait for the rebuild (``start_rebuild``). ``settled``: the result
    cache's, for the server's choice of read consistency (``MilvusVectorStore``)."""
    try:
        return open_vector_store(settings, dim, settled)
    except BackendUnavailable:
        if settings.milvus_is_server:
            raise
        path = Path(settings.resolved_milvus_uri).expanduser()
        if not looks_damaged(path):
            raise
        moved = move_aside(path)
        log.error("The Milvus Lite file %s could not be opened and no process holds it: moved it to %s and "
                  "rebuilding the vector index from SQL (searches answer from SQL until then)", path, moved)
        return RebuildingStore(open_vector_store(settings, dim, settled), moved)


def start_rebuild(parts: "EngineParts", reconcile: Callable[[], Any]) -> threading.Thread | None:
    """When the store is being rebuilt, rebuild it from SQL in the background (``reconcile``,
    the engine's), record the run as the job ``rebuild``, and open searches after."""
    store = parts.vectors
    if not isinstance(store, RebuildingStore):
        return None
    repo, clock = parts.repo, parts.clock

    def run() -> None:
        run_id = repo.start_job("rebuild", clock.now())
        try:
            report = reconcile()
        except Exception as exc:  # noqa: BLE001 - said in the job log and health; search stays on SQL
            log.exception("rebuilding the vector index failed")
            repo.finish_job(run_id, clock.now(), "error", {}, str(exc)[:500])
            store.outcome = f"rebuild failed: {exc}"
            return
        counts = {"written": report.written, "removed": report.removed, "errors": len(report.errors)}
        outcome = f"rebuilt {report.written} vectors from SQL; the damaged file is kept as {store.moved_to.name}"
        repo.finish_job(run_id, clock.now(), "ok" if not report.errors else "partial", counts, outcome)
        log.warning(outcome)
        store.finish(outcome)

    thread = threading.Thread(target=run, name="vector-rebuild", daemon=True)
    thread.start()
    return thread

"""The SQL ports: what the pipelines, the maintenance jobs and the facade need from the system of
record, as ``Protocol`` classes, one per concern.

Why protocols and not ``SqlRepository``: the engine and its pipelines should depend on what they
use, not on the SQLAlchemy adapter (``memory_core/storage``), so another repository (a
differently tuned one, a recording wrapper in a test) can be injected through
``open_memory(repo=...)`` and nothing above storage imports SQLAlchemy, even for a type. This
module imports no SQLAlchemy; ``storage.repository.SqlRepository`` satisfies every protocol here.

A unit of work: ``session()`` opens a transaction that several write calls share (``insert``,
``update_*``, ``add_history`` ...); callers only pass it back to repository methods, never query
through it, so its type is opaque here (``Transaction``).
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, ContextManager, Protocol, Sequence, TypeAlias

from memory_core.records import HistoryEntry, JobRun, MemoryQuery, MemoryRecord, Page
from memory_core.types import MemoryStatus

Transaction: TypeAlias = Any
"""An open unit of work from ``SqlConnection.session()``: opaque above storage, only handed back."""


class SqlConnection(Protocol):
    """The database itself: units of work, a liveness probe, and the handle storage adapters that
    keep their own tables there (API keys, sign-in throttle, sign-out list) are built on."""

    def session(self) -> ContextManager[Transaction]:
        """A transaction, committed when the block ends without an exception, else rolled back."""
        ...

    def ping(self) -> bool:
        """Whether the database answers now (never raises)."""
        ...

    @property
    def database(self) -> Any:
        """The handle other storage adapters take (a SQLAlchemy ``Engine`` for ``SqlRepository``);
        opaque above storage, where it is only passed on."""
        ...

    @property
    def location(self) -> str:
        """Where the data lives (a URL without its password): keys process-local locks per database."""
        ...


class MemoryRepository(Protocol):
    """Memory rows: insert, read, conditional updates, the vector-written flag, deletion, listing.
    Updates that race another writer are conditional on what was read and say whether they applied."""

    def insert(self, session: Transaction, values: dict[str, Any]) -> MemoryRecord: ...
    def get(self, memory_id: str, session: Transaction | None = None) -> MemoryRecord | None: ...
    def get_many(self, memory_ids: Sequence[str]) -> dict[str, MemoryRecord]: ...
    def update_fields(self, session: Transaction, memory_id: str, **fields: Any) -> None: ...
    def update_if_status(self, session: Transaction, memory_id: str, expected: MemoryStatus, **fields: Any) -> bool: ...
    def update_if_unchanged(self, session: Transaction, memory_id: str, expected: MemoryStatus,
                            expected_updated_at: datetime, **fields: Any) -> bool: ...
    def update_active_with_hashes(self, session: Transaction, pairs: Sequence[tuple[str, str]],
                                  **fields: Any) -> int: ...
    def set_vector_written(self, memory_ids: Sequence[str], written: bool,
                           content_hashes: dict[str, str] | None = None) -> None: ...
    def delete_row(self, session: Transaction, memory_id: str) -> None: ...
    def delete_user_rows(self, session: Transaction, user_id: str) -> list[str]: ...
    def status_and_content(self, memory_ids: Sequence[str]) -> dict[str, tuple[MemoryStatus, str]]: ...
    def hashes_to_ids(self, user_id: str, hashes: Sequence[str]) -> dict[str, str]: ...
    def find_by_hash(self, user_id: str, content_hash: str) -> MemoryRecord | None: ...
    def replaced_by(self, session: Transaction, user_id: str, memory_id: str) -> list[MemoryRecord]: ...
    def pending_vectors(self, limit: int = 500, user_id: str | None = None) -> list[MemoryRecord]: ...
    def active_hashes(self, user_id: str) -> dict[str, str]: ...
    def list(self, query: MemoryQuery) -> Page: ...


class EnglishVectorRepository(Protocol):
    """The English encoder's stored vectors (``memory_core/english_leg.py``), valid per model and text."""

    def english_vectors(self, model: str, wanted: Sequence[tuple[str, str]]) -> dict[str, bytes]: ...
    def save_english_vectors(self, model: str, rows: Sequence[tuple[str, str, str, bytes]]) -> None: ...


class KeywordCandidates(Protocol):
    """The SQL keyword leg's one query (``RetrievalPipeline.sql_keyword_hits``; ``sql_keyword`` ranks the rows)."""

    def keyword_candidates(self, user_id: str, terms: Sequence[str], now: datetime,
                           limit: int = 200, fade_from: int = 0) -> list[MemoryRecord]: ...


class MemoryReadRepository(KeywordCandidates, Protocol):
    """Read-only memory queries: what retrieval admits, what maintenance scans (keyset pages),
    and the aggregates analytics draws."""

    def core_memory_ids(self, user_id: str, now: datetime, min_importance: int = 5, limit: int = 20,
                        fade_from: int = 0) -> list[str]: ...
    def constraints(self, user_id: str, now: datetime, limit: int = 50, fade_from: int = 0) -> list[MemoryRecord]: ...
    def ids_with_event_in(self, user_id: str, start: datetime | None, end: datetime | None, now: datetime,
                          limit: int = 512, fade_from: int = 0) -> list[str]: ...
    def speakers_present(self, user_id: str, names: Sequence[str]) -> set[str]: ...
    def adjacent_active(self, user_id: str, times: Sequence[datetime],
                        window: timedelta) -> list[tuple[MemoryRecord | None, MemoryRecord | None]]: ...
    def user_ids(self) -> list[tuple[str, int]]: ...
    def active_memories(self, user_id: str, limit: int) -> list[MemoryRecord]: ...
    def recent_active_entities(self, user_id: str, limit: int) -> list[tuple[str, Sequence[str]]]: ...
    def used_due_by(self, horizon: datetime, after: str, limit: int,
                    accessed_since: datetime | None = None) -> list[MemoryRecord]: ...
    def archive_candidates(self, max_importance: int, cutoff: datetime, after: tuple[str, str],
                           limit: int) -> list[MemoryRecord]: ...
    def due_for_expiry(self, now: datetime, limit: int = 1000, fade_from: int = 0) -> list[MemoryRecord]: ...
    def count_by_user(self, status: MemoryStatus) -> list[tuple[str, int]]: ...
    def count_active_by_type_and_importance(self, user_prefix: str = "") -> list[tuple[str, str, int, int]]: ...
    def count_by_user_and_status(self, user_prefix: str = "") -> list[tuple[str, str, int]]: ...
    def count_faded(self, now: datetime, fade_from: int, user_prefix: str = "") -> int: ...
    def created_and_expired_times(self) -> tuple[list[datetime], list[datetime]]: ...


class HistoryRepository(Protocol):
    """The audit history: append-only, erased only on a user's erasure request."""

    def add_history(self, session: Transaction, *, memory_id: str, user_id: str, action: str, actor: str,
                    at: datetime, before: dict[str, Any] | None, after: dict[str, Any] | None,
                    note: str = "") -> None: ...
    def erase_history_content(self, session: Transaction, user_id: str) -> None: ...
    def history(self, memory_id: str) -> list[HistoryEntry]: ...
    def history_for_user(self, user_id: str, limit: int = 500) -> list[HistoryEntry]: ...
    def recent_history(self, limit: int = 200, actions: Sequence[str] = ()) -> list[HistoryEntry]: ...


class MessageRepository(Protocol):
    """Chat messages kept for provenance, and the sessions they make up."""

    def add_message(self, *, message_id: str, user_id: str, session_id: str, role: str, content: str,
                    at: datetime, meta: dict[str, Any] | None = None) -> None: ...
    def messages(self, message_ids: Sequence[str]) -> list[dict[str, Any]]: ...
    def session_messages(self, user_id: str, session_id: str, limit: int = 200) -> list[dict[str, Any]]: ...
    def user_sessions(self, user_id: str, limit: int = 50) -> list[dict[str, Any]]: ...


class TelemetryRepository(Protocol):
    """Retrieval latency rows and access-count bumps (written in bursts by ``telemetry.Recorder``)."""

    def record_telemetry(self, metrics: Sequence[dict[str, Any]],
                         accesses: Sequence[tuple[Sequence[str], datetime]]) -> None: ...
    def metrics(self, since: datetime | None = None, limit: int = 100_000) -> list[dict[str, Any]]: ...


class JobRepository(Protocol):
    """The job-run log and job leases (one holder per job across processes)."""

    def start_job(self, job: str, at: datetime) -> int: ...
    def finish_job(self, run_id: int, at: datetime, outcome: str, counts: dict[str, Any], detail: str = "") -> None: ...
    def job_runs(self, job: str | None = None, limit: int = 100) -> list[JobRun]: ...
    def try_lock(self, name: str, holder: str, now: datetime, until: datetime) -> bool: ...
    def release_lock(self, name: str, holder: str) -> None: ...


class SqlRepositoryPort(SqlConnection, MemoryRepository, EnglishVectorRepository, MemoryReadRepository,
                        HistoryRepository, MessageRepository, TelemetryRepository, JobRepository, Protocol):
    """Everything the engine asks of SQL, in one object (``storage.repository.SqlRepository``)."""


def _members(protocol: type) -> list[str]:
    """The public names a protocol and the protocols it extends declare."""
    names: set[str] = set()
    for klass in protocol.__mro__:
        if klass is object or klass is Protocol or not getattr(klass, "_is_protocol", False):
            continue
        names.update(n for n in vars(klass) if not n.startswith("_"))
    return sorted(names)


REPOSITORY_MEMBERS: tuple[str, ...] = tuple(_members(SqlRepositoryPort))


def check_repository(repo: object) -> SqlRepositoryPort:
    """``repo`` when it offers every member of ``SqlRepositoryPort``; a ``TypeError`` naming what
    is missing otherwise (an engine built on half a repository would fail later, mid-request)."""
    missing = [name for name in REPOSITORY_MEMBERS if not hasattr(repo, name)]
    if missing:
        shown = ", ".join(missing[:8]) + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
        raise TypeError(f"repo must implement memory_core.sql_ports.SqlRepositoryPort; "
                        f"{type(repo).__name__} lacks {shown}")
    not_callable = [name for name in REPOSITORY_MEMBERS
                    if name not in ("database", "location") and not callable(getattr(repo, name))]
    if not_callable:
        raise TypeError(f"repo must implement memory_core.sql_ports.SqlRepositoryPort; "
                        f"{type(repo).__name__}.{not_callable[0]} is not a method")
    return repo  # type: ignore[return-value]

"""Long-term memory engine for AI assistants (no UI code here).

Use ``open_memory()`` to get a ``MemoryEngine`` built from the environment's settings, or
``open_memory(settings)`` from explicit ones.
"""
from memory_core.clock import Clock, FixedClock, SystemClock
from memory_core.config import Settings
from memory_core.engine import MemoryEngine, open_memory
from memory_core.errors import (
    BackendUnavailable,
    MemoryEngineError,
    ModelLoadError,
    NotFoundError,
    RateLimited,
    ValidationError,
)
from memory_core.records import (
    AddItem,
    AddResult,
    HistoryEntry,
    JobRun,
    MemoryQuery,
    MemoryRecord,
    Page,
    ReconcileReport,
    SearchFilters,
    SearchResponse,
)
from memory_core.maintenance import SCHEDULER_ACTOR, LeaseBusy
from memory_core.recipes import RECIPES, Recipe, RetrievalOptions, Tuning, recipe_named
from memory_core.types import MemoryStatus, MemoryType, ScoreParts, SearchResult, TimeRange

__all__ = [
    "AddItem", "AddResult", "BackendUnavailable", "Clock", "FixedClock", "HistoryEntry", "JobRun", "LeaseBusy",
    "SCHEDULER_ACTOR",
    "MemoryEngine", "MemoryEngineError", "MemoryQuery", "MemoryRecord", "MemoryStatus", "MemoryType",
    "ModelLoadError", "NotFoundError", "Page", "RateLimited", "RECIPES", "Recipe", "ReconcileReport", "RetrievalOptions", "ScoreParts",
    "SearchFilters", "SearchResponse", "SearchResult", "Settings", "SystemClock", "TimeRange",
    "Tuning", "ValidationError", "open_memory", "recipe_named",
]

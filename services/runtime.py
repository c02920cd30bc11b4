"""One engine per server process, shared by every browser session, page and the scheduler.

A plain module-level lock (not ``st.cache_resource``) guards it so services and tests can use it
without Streamlit. Milvus Lite allows one writer process per store, and the embedding model
costs seconds and hundreds of MB: both must be opened once, not per session or rerun.

The engine is keyed by where its data lives (data dir, database URL, Milvus URI): when the
environment points elsewhere (tests with a fresh temp dir), the old engine is closed and a new
one opened.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from typing import TYPE_CHECKING

from services.settings import AppSettings

if TYPE_CHECKING:
    from memory_core import MemoryEngine, Settings

log = logging.getLogger(__name__)

_lock = threading.RLock()
_engine: "MemoryEngine | None" = None
_engine_key: tuple[str, str, str] | None = None
_engine_error: str | None = None


def _key(settings: "Settings") -> tuple[str, str, str]:
    return (str(settings.data_dir.resolve()), settings.resolved_database_url, settings.resolved_milvus_uri)


def get_engine() -> "MemoryEngine":
    """The process-wide engine for the current settings (opened on first use, then reused).

    Raises whatever ``open_memory`` raises (e.g. ``ModelLoadError``); the pages show it plainly.
    """
    global _engine, _engine_key, _engine_error
    from memory_core import Settings, open_memory
    from memory_core.logs import configure_logging, settings_secrets

    settings = Settings()
    key = _key(settings)
    with _lock:
        if _engine is not None and _engine_key == key:
            return _engine
        if _engine is not None:
            _close_locked()
        started = time.monotonic()
        try:
            configure_logging(os.environ.get("LOG_LEVEL", "INFO"), secrets=settings_secrets(settings))
            _engine = open_memory(settings)
            _engine.warm_up()
        except Exception as exc:
            _engine_error = f"{type(exc).__name__}: {exc}"
            raise
        log.info("memory engine open in %.1f s (%s)", time.monotonic() - started, threading.current_thread().name)
        _engine_key = key
        _engine_error = None
        return _engine


_warm_lock = threading.Lock()
_warm_thread: threading.Thread | None = None


def start_warm_up() -> None:
    """Open the engine on a background thread, once per process, so no page request waits for
    it: the embedding model, jieba's dictionary and Milvus Lite take seconds to load, and the
    first visitor should see the sign-in meanwhile (pages check ``engine_ready``).

    Called at server start by ``ui/serve.py`` (``scripts/start-app.sh`` and the image start the
    app through it) and by the home page in case the server was started another way. A no-op
    while a warm-up runs or once the engine is open; a failure is kept in ``last_error`` and the
    next page that needs the engine tries again and shows it."""
    global _warm_thread
    with _warm_lock:
        if (_warm_thread is not None and _warm_thread.is_alive()) or engine_ready():
            return
        _warm_thread = threading.Thread(target=_warm, name="engine-warm-up", daemon=True)
        _warm_thread.start()


def _warm() -> None:
    try:
        get_engine()
    except Exception as exc:  # kept in last_error(); a page shows it when it opens the engine
        log.warning("warming up the memory engine failed: %s", exc)


def warming_up() -> bool:
    """True while a background warm-up is opening the engine."""
    thread = _warm_thread
    return thread is not None and thread.is_alive()


def engine_ready() -> bool:
    """True when ``get_engine`` would return at once: open, for the current settings."""
    from memory_core import Settings

    engine, key = _engine, _engine_key
    return engine is not None and key == _key(Settings())


def database_ok(engine: "MemoryEngine") -> bool:
    """Whether the SQL database answers now (the engine's ``SELECT 1`` probe, which never raises)."""
    return engine.database_ok()


def last_error() -> str | None:
    """Why the engine last failed to open, for the status panel."""
    return _engine_error


def app_settings() -> AppSettings:
    """Read fresh each call: cheap, and tests change the environment between runs."""
    return AppSettings()


def _close_locked() -> None:
    global _engine, _engine_key
    from services import scheduler

    scheduler.stop_scheduler()
    if _engine is not None:
        try:
            _engine.close()
        except Exception as exc:  # closing must not stop a new engine from opening
            log.warning("closing the engine failed: %s", exc)
    _engine = None
    _engine_key = None


def shutdown() -> None:
    """Stop the scheduler and close the engine (tests, process exit)."""
    with _lock:
        _close_locked()


def start_background(engine: "MemoryEngine", settings: AppSettings | None = None) -> None:
    """Start the maintenance scheduler once per process when the settings allow it."""
    from services import scheduler

    settings = settings or app_settings()
    if settings.scheduler_enabled:
        scheduler.start_scheduler(engine, timezone=settings.scheduler_timezone,
                                  lease_s=engine.settings.job_lease_s)

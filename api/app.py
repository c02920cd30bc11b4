"""The HTTP application: ``create_app(engine)`` wires routes, errors, the audit log and health.

Errors come back as JSON ``{"error", "message", "degraded"}`` with the engine's own message:
ValidationError and malformed requests 400, a missing/wrong/expired key 401, a key not allowed
403, NotFoundError 404, the rate limit 429 (with ``Retry-After``), a backend that cannot answer
503. Anything else is 500 with no detail (it is logged with the request id).
"""
from __future__ import annotations

import logging
import time

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory_core import BackendUnavailable, MemoryEngine, NotFoundError, ValidationError
from memory_core.logs import request_context
from memory_core.storage.api_keys import ApiKeyRepository
from api.deps import ApiState, GuardedRoute, RateLimited
from api.keys import AuthError, KeyAuthenticator
from api.ratelimit import RateLimiter, build_limiter
from api.settings import ApiSettings
from services.outage import DATABASE_UNAVAILABLE, DatabaseUnavailable, is_database_down

log = logging.getLogger(__name__)
audit_log = logging.getLogger("api.audit")


class AuditLog:
    """One log line per write or admin call (marked by ``deps.writer``/``deps.admin``) with the
    key's name, tenant, route and status, and a request id shared with the engine's log lines."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = {"code": 500}

        async def send_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        started = time.perf_counter()
        with request_context():
            try:
                await self.app(scope, receive, send_status)
            finally:
                state = scope.get("state") or {}
                principal = state.get("principal")
                if state.get("audit") and principal is not None:
                    audit_log.info("%s %s by key %s (tenant %s%s) -> %d in %.0f ms", scope["method"], scope["path"],
                                   principal.name, principal.tenant, ", admin" if principal.admin else "",
                                   status["code"], (time.perf_counter() - started) * 1000)


def _error(status: int, kind: str, message: str, headers: dict[str, str] | None = None,
           degraded: bool = False) -> JSONResponse:
    return JSONResponse({"error": kind, "message": message, "degraded": degraded}, status_code=status,
                        headers=headers)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "request"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ValidationError)
    async def _invalid(_: Request, exc: ValidationError) -> JSONResponse:
        return _error(400, "validation_error", str(exc))

    @app.exception_handler(RequestValidationError)
    async def _malformed(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(400, "validation_error", _validation_message(exc))

    @app.exception_handler(AuthError)
    async def _auth(_: Request, exc: AuthError) -> JSONResponse:
        if exc.status == 401:
            return _error(401, "unauthorized", exc.message, {"WWW-Authenticate": "Bearer"})
        return _error(exc.status, "forbidden", exc.message)

    @app.exception_handler(NotFoundError)
    async def _missing(_: Request, exc: NotFoundError) -> JSONResponse:
        return _error(404, "not_found", str(exc))

    @app.exception_handler(RateLimited)
    async def _limited(_: Request, exc: RateLimited) -> JSONResponse:
        return _error(429, "rate_limited", str(exc), {"Retry-After": str(int(exc.retry_after_s) + 1)})

    @app.exception_handler(BackendUnavailable)
    async def _down(_: Request, exc: BackendUnavailable) -> JSONResponse:
        message = DATABASE_UNAVAILABLE if isinstance(exc, DatabaseUnavailable) else str(exc)
        return _error(503, "unavailable", message, {"Retry-After": "5"})

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        if is_database_down(exc):  # raised outside a guarded route (e.g. health)
            return _error(503, "unavailable", DATABASE_UNAVAILABLE, {"Retry-After": "5"})
        log.error("unhandled error in %s %s", request.method, request.url.path, exc_info=exc)
        return _error(500, "internal_error", "internal error (logged with the request id)")


def create_app(memory: MemoryEngine, *, keys: ApiKeyRepository | None = None, limiter: RateLimiter | None = None,
               settings: ApiSettings | None = None) -> FastAPI:
    """The API around ``memory``. Keys live in the engine's own database unless ``keys`` is given;
    the rate limit counts in Redis when the engine's settings name one, else in SQL."""
    from api.routes import router

    settings = settings or ApiSettings()
    keys = keys or ApiKeyRepository(memory.sql_database)
    limiter = limiter or build_limiter(keys, memory.settings.redis_url, settings.api_rate_window_s)
    # The docs page's scripts are served by the API itself (fastapi-offline), not from a CDN: it
    # works where the API has no internet, and the page asks nothing of another host.
    app = FastAPIOffline(title="Long-term memory API", version="1",
                  description="Memories for AI assistants: add, search, edit, erase. Authenticate with "
                              "`Authorization: Bearer <key>`; your key's tenant is the namespace of every user id "
                              "you send. See docs/api.md.")
    app.state.api = ApiState(engine=memory, auth=KeyAuthenticator(keys, cache_s=settings.api_key_cache_s),
                             limiter=limiter, default_rate_limit=settings.api_rate_limit_per_min,
                             max_batch=settings.api_max_batch, history_limit=settings.api_history_limit)
    app.router.route_class = GuardedRoute
    app.include_router(router)
    _install_error_handlers(app)
    app.add_middleware(AuditLog)

    @app.get("/v1/health", tags=["operations"])
    def health() -> JSONResponse:
        """What is up (no key needed). 200 while SQL answers (``degraded`` when the vector store
        does not: searches then fall back to keyword search); 503 when SQL is down."""
        parts = memory.health()
        vectors_ok = bool(parts["vectors"]) and not parts.get("vectors_rebuilding")
        body = {"status": "ok" if parts["sql"] and vectors_ok else ("degraded" if parts["sql"] else "unavailable"),
                "degraded": bool(parts["sql"] and not vectors_ok), **parts,
                "rate_limit_backend": limiter.backend}
        return JSONResponse(body, status_code=200 if parts["sql"] else 503)

    return app

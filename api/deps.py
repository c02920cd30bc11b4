"""Request dependencies: the engine, who is calling (key, tenant), the rate limit, audit marks.

The key decides the tenant; nothing in a request body or query can change it. Write and admin
routes mark the request for the audit log (``app.AuditLog`` writes one line per marked call,
with the key's name and the response status).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable

from fastapi import Depends, Request
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from memory_core import MemoryEngine
from api.keys import ApiPrincipal, AuthError, KeyAuthenticator
from api.ratelimit import RateLimiter
from services.outage import DatabaseUnavailable, is_database_down

log = logging.getLogger(__name__)

_bearer = HTTPBearer(auto_error=False, description="An API key from `python -m api.keys add`.")


class RateLimited(Exception):
    def __init__(self, name: str, limit: int, retry_after_s: float) -> None:
        super().__init__(f"rate limit of {limit} requests per minute reached for API key {name!r}; "
                         f"retry in {int(retry_after_s) + 1} s")
        self.retry_after_s = retry_after_s


@dataclass
class ApiState:
    """What the routes share: set once by ``create_app``."""

    engine: MemoryEngine
    auth: KeyAuthenticator
    limiter: RateLimiter
    default_rate_limit: int
    max_batch: int
    history_limit: int


def state(request: Request) -> ApiState:
    return request.app.state.api


def engine(request: Request) -> MemoryEngine:
    return state(request).engine


def caller(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> ApiPrincipal:
    """The key's principal, after its rate limit has counted this request."""
    shared = state(request)
    header = f"{credentials.scheme} {credentials.credentials}" if credentials else request.headers.get("authorization")
    principal = shared.auth.authenticate(header)
    request.state.principal = principal
    limit = principal.rate_limit_per_min if principal.rate_limit_per_min is not None else shared.default_rate_limit
    decision = shared.limiter.check(principal.key_id, limit)
    if not decision.allowed:
        raise RateLimited(principal.name, limit, decision.retry_after_s)
    return principal


def writer(request: Request, principal: ApiPrincipal = Depends(caller)) -> ApiPrincipal:
    request.state.audit = True
    return principal


def admin(request: Request, principal: ApiPrincipal = Depends(caller)) -> ApiPrincipal:
    request.state.audit = True
    if not principal.admin:
        raise AuthError(403, f"API key {principal.name!r} is not an admin key: history, erasure and "
                             "maintenance need one (python -m api.keys add NAME --tenant T --admin)")
    return principal


class GuardedRoute(APIRoute):
    """A route whose SQL-driver "server unreachable" errors (from the key lookup, the rate
    counter or the engine) become ``DatabaseUnavailable``: a 503 with a plain message."""

    def get_route_handler(self) -> Callable[[Request], Any]:
        handler = super().get_route_handler()

        async def guarded(request: Request) -> Any:
            try:
                return await handler(request)
            except Exception as exc:
                if is_database_down(exc):
                    log.warning("%s %s: the database is unavailable: %s", request.method, request.url.path,
                                (str(exc).splitlines() or [type(exc).__name__])[0])
                    raise DatabaseUnavailable(type(exc).__name__) from exc
                raise

        return guarded

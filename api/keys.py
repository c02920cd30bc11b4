"""API keys: created by an operator, stored hashed, each bound to one tenant.

A key reads ``ltm_<key id>_<secret>``. The key id (16 hex characters) is public and finds the
key's row; only a SHA-256 hash of the secret is stored, compared in constant time. A slow
password hash (scrypt, as for sign-in passwords) would buy nothing here: the secret is 256 random
bits, which no one can guess, while scrypt would add ~100 ms to every request.

Operator commands (same database as the engine: ``DATABASE_URL``)::

    python -m api.keys add NAME --tenant T [--admin] [--expires 2026-01-01] [--rate-limit 600]
    python -m api.keys list
    python -m api.keys revoke NAME

``add`` prints the key once; it cannot be shown again.
"""
from __future__ import annotations

import argparse
import hashlib
import hmac
import re
import secrets
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

from memory_core.errors import ValidationError
from memory_core.storage.api_keys import ApiKeyRecord, ApiKeyRepository
from api.tenancy import check_tenant

KEY_PREFIX = "ltm_"
_KEY = re.compile(r"ltm_([0-9a-f]{16})_([A-Za-z0-9_-]{43})")
_NAME = re.compile(r"[A-Za-z0-9._@-]{1,128}")


def hash_secret(secret: str) -> str:
    return "sha256$" + hashlib.sha256(secret.encode("utf-8")).hexdigest()


def parse_key(key: str) -> tuple[str, str] | None:
    """(key id, secret) of a well-formed key, else None."""
    match = _KEY.fullmatch(key.strip())
    return (match.group(1), match.group(2)) if match else None


def check_name(value: str) -> str:
    if not _NAME.fullmatch(value or ""):
        raise ValidationError("a key name is 1-128 letters, digits, '.', '_', '@' or '-'")
    return value


def create_key(repo: ApiKeyRepository, name: str, tenant: str, *, admin: bool = False,
               expires_at: datetime | None = None, rate_limit_per_min: int | None = None) -> str:
    """Store a new key and return it (the only time its secret exists outside the caller)."""
    if rate_limit_per_min is not None and rate_limit_per_min < 0:
        raise ValidationError("rate limit must be 0 (unlimited) or more requests per minute")
    key_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
    repo.add(ApiKeyRecord(key_id=key_id, name=check_name(name), tenant=check_tenant(tenant), admin=admin,
                          secret_hash=hash_secret(secret), rate_limit_per_min=rate_limit_per_min,
                          created_at=datetime.now(timezone.utc), expires_at=expires_at))
    return f"{KEY_PREFIX}{key_id}_{secret}"


@dataclass(frozen=True)
class ApiPrincipal:
    """Who is calling: the key's name (what the logs and the memory history show) and tenant."""

    key_id: str
    name: str
    tenant: str
    admin: bool
    rate_limit_per_min: int | None

    @property
    def actor(self) -> str:
        return f"api:{self.name}"


class AuthError(Exception):
    """401 (no, unknown, wrong, expired or revoked key) or 403 (key not allowed to do this)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class KeyAuthenticator:
    """Checks ``Authorization: Bearer <key>`` against the stored keys.

    A key's row is reused for ``cache_s`` seconds (one SQL read per key and period, not per
    request); the secret is checked against its hash on every request."""

    def __init__(self, repo: ApiKeyRepository, cache_s: float = 10.0,
                 monotonic: Callable[[], float] = time.monotonic,
                 now: Callable[[], datetime] = lambda: datetime.now(timezone.utc)) -> None:
        self.repo = repo
        self.cache_s = cache_s
        self._monotonic = monotonic
        self._now = now
        self._cache: dict[str, tuple[ApiKeyRecord, float]] = {}
        self._lock = threading.Lock()

    def _record(self, key_id: str) -> ApiKeyRecord | None:
        with self._lock:
            cached = self._cache.get(key_id)
        if cached is not None and self._monotonic() - cached[1] < self.cache_s:
            return cached[0]
        record = self.repo.get(key_id)
        with self._lock:
            if record is None:
                self._cache.pop(key_id, None)
            else:
                self._cache[key_id] = (record, self._monotonic())
        return record

    def authenticate(self, authorization: str | None) -> ApiPrincipal:
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError(401, "missing API key: send the header 'Authorization: Bearer <key>'")
        parsed = parse_key(token)
        if parsed is None:
            raise AuthError(401, "invalid API key")
        key_id, secret = parsed
        record = self._record(key_id)
        # Hash whatever came, found or not, so a wrong key id costs the same as a wrong secret.
        offered = hash_secret(secret)
        if record is None or not hmac.compare_digest(offered, record.secret_hash):
            raise AuthError(401, "invalid API key")
        if record.revoked_at is not None:
            raise AuthError(401, f"API key {record.name!r} was revoked")
        if record.expires_at is not None and record.expires_at <= self._now():
            raise AuthError(401, f"API key {record.name!r} expired on {record.expires_at.isoformat()}")
        return ApiPrincipal(record.key_id, record.name, record.tenant, record.admin, record.rate_limit_per_min)


# ---- operator command ---------------------------------------------------------------------------
def _parse_expiry(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an ISO date or time: {text!r}") from exc
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def main(argv: list[str] | None = None) -> int:
    from memory_core import Settings
    from memory_core.storage.api_keys import open_api_keys

    parser = argparse.ArgumentParser(prog="python -m api.keys", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    add = sub.add_parser("add", help="create a key and print it (once)")
    add.add_argument("name", help="shown in logs and in the memory history as api:NAME")
    add.add_argument("--tenant", required=True, help="the namespace of user ids the key works on")
    add.add_argument("--admin", action="store_true", help="may also read history, erase users, run maintenance")
    add.add_argument("--expires", type=_parse_expiry, default=None, help="ISO date or time (UTC if no zone)")
    add.add_argument("--rate-limit", type=int, default=None, help="requests per minute (0 = unlimited; "
                                                                  "default API_RATE_LIMIT_PER_MIN)")
    sub.add_parser("list", help="list keys (never their secrets)")
    revoke = sub.add_parser("revoke", help="revoke a key by name")
    revoke.add_argument("name")
    args = parser.parse_args(argv)
    repo = open_api_keys(Settings().resolved_database_url)
    try:
        if args.command == "add":
            key = create_key(repo, args.name, args.tenant, admin=args.admin, expires_at=args.expires,
                             rate_limit_per_min=args.rate_limit)
            print(key)
            print(f"created {args.name} for tenant {args.tenant}{' (admin)' if args.admin else ''}; "
                  "store the key now, it cannot be shown again", file=sys.stderr)
        elif args.command == "list":
            for r in repo.all():
                state = "revoked" if r.revoked_at else ("expires " + r.expires_at.isoformat() if r.expires_at else "active")
                limit = "default" if r.rate_limit_per_min is None else r.rate_limit_per_min
                print(f"{r.name}\ttenant={r.tenant}\tadmin={r.admin}\trate/min={limit}\t{state}")
        else:
            if not repo.revoke(args.name, datetime.now(timezone.utc)):
                print(f"no active key named {args.name!r}", file=sys.stderr)
                return 1
            print(f"revoked {args.name}", file=sys.stderr)
    except ValidationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

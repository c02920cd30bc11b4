"""Tenant namespaces: every user id a tenant sends is stored as ``t:<tenant>:<user id>``.

Why this cannot leak: a tenant name holds no ``:`` (``check_tenant``), so the prefix
``t:<tenant>:`` of one tenant is never a prefix of another's, and whatever a caller sends as its
user id (quotes, colons, ``t:other:x``, Unicode) only ever lands *after* its own prefix. The
caller's key decides the tenant, never the request. Ids going back out are stripped of the
prefix, and an id outside the caller's namespace is never returned (``caller_user`` raises).

The Streamlit app's users (``zhangsan``) have no prefix, so the API cannot reach them; an app user
id that itself starts with ``t:`` would share a tenant's namespace, so the app should not issue such
ids.
"""
from __future__ import annotations

import re

from memory_core.errors import ValidationError
from memory_core.validation import MAX_USER_ID, check_user_id

_TENANT = re.compile(r"[A-Za-z0-9_-]{1,64}")


def check_tenant(value: object) -> str:
    if not isinstance(value, str) or not _TENANT.fullmatch(value):
        raise ValidationError("a tenant is 1-64 letters, digits, '_' or '-'")
    return value


def prefix(tenant: str) -> str:
    return f"t:{check_tenant(tenant)}:"


def engine_user(tenant: str, user_id: object) -> str:
    """The engine's id for ``user_id`` of ``tenant`` (validated like any engine user id)."""
    own = prefix(tenant)
    user_id = check_user_id(user_id)
    if len(own) + len(user_id) > MAX_USER_ID:
        raise ValidationError(f"user_id is too long ({len(user_id)} characters, the limit is "
                              f"{MAX_USER_ID - len(own)} for this tenant)")
    return own + user_id


def caller_user(tenant: str, engine_user_id: str) -> str:
    """The caller's id for an engine user id of its own namespace. Anything else is a bug in
    the caller of this function, and must fail loudly rather than show another tenant's id."""
    own = prefix(tenant)
    if not engine_user_id.startswith(own):
        raise RuntimeError("refusing to return a user id outside the caller's tenant")
    return engine_user_id[len(own):]


def owns(tenant: str, engine_user_id: str) -> bool:
    return engine_user_id.startswith(prefix(tenant))

"""Who may call a staff or analytics service, checked in the service whatever the page did.

Every public function of ``services.admin``, ``services.admin_io`` and ``services.analytics``
takes the signed-in principal first. Instead of each body starting with its own check (18 of
them in admin alone, one forgotten would be a hole), each function is decorated with the rule
it needs: ``@staff_only`` or ``@principal_check(require_analytics)``. The decorator runs the
check before the body (for a function returning a generator, at the call, not at the first
item), and marks the function so a test can see that every public one carries it.

Demo staff (a demo identity anyone may pick in demo mode) is held to the demo namespace: it
sees and acts on demo users (``demo:...``) only, a memory of anyone else reads as not found,
and the jobs that touch every user are refused.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from memory_core.errors import NotFoundError
from services.auth import DEMO_PREFIX, Principal, is_demo_id

if TYPE_CHECKING:
    from memory_core import MemoryEngine

F = TypeVar("F", bound=Callable[..., Any])


def principal_check(check: Callable[[Any], Principal]) -> Callable[[F], F]:
    """Decorator: ``check(principal)`` (raising ``PermissionError``) before the function runs;
    the principal is the first positional argument or the ``principal`` keyword."""
    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            check(args[0] if args else kwargs.get("principal"))
            return fn(*args, **kwargs)

        wrapper.principal_check = check  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate


def require_staff(principal: Principal | None) -> Principal:
    """The principal when it is staff; PermissionError otherwise (including nobody signed in)."""
    if principal is None or not isinstance(principal, Principal) or not principal.is_staff:
        raise PermissionError("support staff only")
    return principal


staff_only = principal_check(require_staff)


def demo_only(principal: Principal) -> bool:
    """Demo staff: held to demo users."""
    return principal.via == "demo"


def require_user_in_scope(principal: Principal, user_id: str) -> str:
    """Staff may act on any user; demo staff on demo users only (PermissionError otherwise)."""
    require_staff(principal)
    if demo_only(principal) and not (isinstance(user_id, str) and is_demo_id(user_id)):
        raise PermissionError(f"demo staff can only see and act on demo users ({DEMO_PREFIX}...)")
    return user_id


def owner_in_scope(principal: Principal, engine: "MemoryEngine", memory_id: str) -> str | None:
    """For demo staff, the owner of ``memory_id`` when it is a demo user; a memory of anyone
    else reads as not found (its existence is not confirmed). None (no restriction) for staff."""
    require_staff(principal)
    if not demo_only(principal):
        return None
    record = engine.get(memory_id)
    if not is_demo_id(record.user_id):
        raise NotFoundError(f"memory {memory_id!r} not found")
    return record.user_id


def refuse_demo(principal: Principal, what: str) -> None:
    """Demo staff may not run what touches every user (the maintenance jobs, the job log)."""
    require_staff(principal)
    if demo_only(principal):
        raise PermissionError(f"demo staff cannot {what}: it touches every user, not only demo users")

"""Sign-in: operator-configured accounts with salted scrypt hashes, failed-login throttling
(``services.throttle``), demo principals, and the principal type every staff check takes.

Accounts come from a JSON file (``data/accounts.json`` by default) and/or the ``ACCOUNTS_JSON``
environment variable, in the form::

    {"accounts": [{"username": "lin", "display_name": "Lin (support)", "role": "staff",
                   "user_id": "lin", "password_hash": "scrypt$32768$8$1$<salt>$<hash>"}]}

Create a hash with ``python -m services.auth hash`` (asks for the password) or add an account
with ``python -m services.auth add USERNAME --role staff``. Plain passwords are never stored.
"""
from __future__ import annotations

import argparse
import base64
import getpass
import hashlib
import hmac
import json
import os
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Literal

from services.throttle import LoginThrottle  # re-exported: callers import it from here

# staff: support staff (admin and analytics); analyst: stakeholders (analytics only); user: chat.
Role = Literal["staff", "analyst", "user"]
ROLES: tuple[Role, ...] = ("staff", "analyst", "user")

# scrypt cost: N=2^15, r=8, p=1 uses 32 MiB and ~60-120 ms here: slow for guessing, fine for a sign-in.
SCRYPT_N = 2**15
SCRYPT_R = 8
SCRYPT_P = 1
PBKDF2_MIN_ITERATIONS = 200_000
_MAXMEM = 128 * 1024 * 1024


@dataclass(frozen=True)
class Principal:
    """Who is signed in. ``user_id`` is whose memories the chat reads and writes."""

    username: str
    display_name: str
    role: Role
    user_id: str
    via: str = "password"  # password, demo, oidc

    @property
    def is_staff(self) -> bool:
        return self.role == "staff"

    @property
    def can_view_analytics(self) -> bool:
        return self.role in ("staff", "analyst")

    @property
    def actor(self) -> str:
        """The name written into the memory history for what this person does."""
        return f"{self.role}:{self.username}"


# ---- password hashing -------------------------------------------------------------------------
def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def hash_password(password: str, *, n: int = SCRYPT_N, r: int = SCRYPT_R, p: int = SCRYPT_P) -> str:
    """A salted scrypt hash in the self-describing form ``scrypt$N$r$p$salt$hash``."""
    if not password:
        raise ValueError("password is empty")
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=_MAXMEM, dklen=32)
    return f"scrypt${n}${r}${p}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, encoded: str) -> bool:
    """Constant-time check against a ``scrypt$...`` or ``pbkdf2_sha256$iterations$salt$hash`` string.

    A malformed or too-weak stored hash never matches (and does not raise), so one bad entry in
    the accounts file cannot open or break the sign-in.
    """
    try:
        scheme, *parts = encoded.split("$")
        if scheme == "scrypt" and len(parts) == 5:
            n, r, p = (int(x) for x in parts[:3])
            salt, expected = _unb64(parts[3]), _unb64(parts[4])
            if n < 2**14:
                return False
            actual = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=_MAXMEM,
                                    dklen=len(expected))
        elif scheme == "pbkdf2_sha256" and len(parts) == 3:
            iterations = int(parts[0])
            salt, expected = _unb64(parts[1]), _unb64(parts[2])
            if iterations < PBKDF2_MIN_ITERATIONS:
                return False
            actual = hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), salt, iterations, dklen=len(expected))
        else:
            return False
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


# A real hash of a random password: unknown usernames cost the same time as known ones.
_DUMMY_HASH = hash_password(secrets.token_urlsafe(16))


# ---- accounts ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Account:
    username: str
    display_name: str
    role: Role
    user_id: str
    password_hash: str

    def principal(self) -> Principal:
        return Principal(self.username, self.display_name, self.role, self.user_id, via="password")


def parse_accounts(data: Any) -> dict[str, Account]:
    """Accounts from the decoded JSON; raises ValueError naming the first bad entry."""
    entries = data.get("accounts", []) if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise ValueError("accounts must be a list or {'accounts': [...]}")
    accounts: dict[str, Account] = {}
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"account #{index} is not an object")
        username = str(entry.get("username", "")).strip()
        role = entry.get("role", "user")
        password_hash = str(entry.get("password_hash", ""))
        if not username or role not in ROLES or not password_hash.startswith(("scrypt$", "pbkdf2_sha256$")):
            raise ValueError(f"account #{index} ({username or 'no username'}) needs a username, "
                             f"a role of {ROLES} and a scrypt/pbkdf2 password_hash")
        user_id = str(entry.get("user_id") or username)
        if is_demo_id(username) or is_demo_id(user_id):
            raise ValueError(f"account #{index} ({username}): names and user ids starting with "
                             f"{DEMO_PREFIX!r} are reserved for demo identities")
        accounts[username.lower()] = Account(
            username=username, display_name=str(entry.get("display_name") or username), role=role,
            user_id=user_id, password_hash=password_hash,
        )
    return accounts


def load_accounts(path: Path | None, inline_json: str = "") -> dict[str, Account]:
    """Accounts from the file (if it exists) and the inline JSON (which wins on a clash)."""
    accounts: dict[str, Account] = {}
    if path is not None and path.is_file():
        accounts.update(parse_accounts(json.loads(path.read_text(encoding="utf-8"))))
    if inline_json.strip():
        accounts.update(parse_accounts(json.loads(inline_json)))
    return accounts


def save_account(path: Path, username: str, password: str, role: Role, display_name: str = "",
                 user_id: str = "") -> None:
    """Add or replace one account in the JSON file (written atomically, mode 0600). Staff and
    analyst passwords shorter than ``MIN_PRIVILEGED_PASSWORD`` are refused (ValueError)."""
    check_password_strength(password, role)
    data: dict[str, Any] = {"accounts": []}
    if path.is_file():
        data = json.loads(path.read_text(encoding="utf-8"))
    entries = [e for e in data.get("accounts", []) if str(e.get("username", "")).lower() != username.lower()]
    entries.append({"username": username, "display_name": display_name or username, "role": role,
                    "user_id": user_id or username, "password_hash": hash_password(password)})
    parse_accounts({"accounts": entries})  # the same checks as at sign-in (e.g. no demo ids)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"accounts": entries}, ensure_ascii=False, indent=2), encoding="utf-8")
    os.chmod(tmp, 0o600)
    tmp.replace(path)


# ---- password strength (throttling: services/throttle.py) ------------------------------------

# Staff and analysts see every user's memories or numbers: their passwords must not be guessable
# in the few tries a minute the throttle allows.
MIN_PRIVILEGED_PASSWORD = 12


def check_password_strength(password: str, role: str) -> None:
    """ValueError when ``password`` is too short for ``role`` (staff and analysts: 12 characters)."""
    if not password:
        raise ValueError("password is empty")
    if role in ("staff", "analyst") and len(password) < MIN_PRIVILEGED_PASSWORD:
        raise ValueError(f"a {role} password needs at least {MIN_PRIVILEGED_PASSWORD} characters "
                         f"(this one has {len(password)})")


@dataclass(frozen=True)
class LoginOutcome:
    principal: Principal | None
    message: str  # shown to the person; never says whether the username exists


class Authenticator:
    """Checks a username and password against the configured accounts, with throttling."""

    def __init__(self, accounts: dict[str, Account], throttle: LoginThrottle) -> None:
        self.accounts = accounts
        self.throttle = throttle

    def login(self, username: str, password: str, client: str = "") -> LoginOutcome:
        """``client`` tells visitors apart for the throttle (an IP address; "" when unknown)."""
        key = (username or "").strip().lower()
        if not key or not password:
            return LoginOutcome(None, "Enter a username and a password.")
        wait = self.throttle.retry_after(key, client)
        if wait > 0:  # refused unchecked: a guess made while slowed down tells nothing
            return LoginOutcome(None, f"Too many failed sign-ins. Try again in {int(wait) + 1} s.")
        account = self.accounts.get(key)
        ok = verify_password(password, account.password_hash if account else _DUMMY_HASH) and account is not None
        if not ok:
            self.throttle.failed(key, client)
            return LoginOutcome(None, "Wrong username or password.")
        self.throttle.succeeded(key, client)
        return LoginOutcome(account.principal(), f"Signed in as {account.display_name}.")


# ---- demo and OIDC principals -----------------------------------------------------------------
# Demo identities live under their own user-id prefix, which no account or OIDC sign-in may
# have (parse_accounts and oidc_principal refuse it): a real account named "alice" and the demo
# user "demo:alice" are different users, and demo staff can be held to demo users only.
DEMO_PREFIX = "demo:"
DEMO_STAFF_ID = "demo:staff"


def is_demo_id(value: str) -> bool:
    """Whether a user id (or username) is in the demo namespace (case- and width-insensitive,
    so "DEMO:x" or full-width letters cannot slip a real account into it)."""
    import unicodedata

    return unicodedata.normalize("NFKC", value).strip().casefold().startswith(DEMO_PREFIX)


def demo_principals(users: Iterable[tuple[str, str]], include_staff: bool) -> list[Principal]:
    """The demo sign-ins: one per demo user (``(user_id, display name)``, ids in the demo
    namespace), plus demo staff (which ``services.admin`` holds to demo users)."""
    out = []
    for uid, name in users:
        if not is_demo_id(uid):
            raise ValueError(f"demo user ids must start with {DEMO_PREFIX!r}, got {uid!r}")
        out.append(Principal(uid, f"{name} (demo)", "user", uid, via="demo"))
    if include_staff:
        out.append(Principal(DEMO_STAFF_ID, "Demo support staff", "staff", DEMO_STAFF_ID, via="demo"))
    return out


def demo_available(demo_mode: bool, accounts_configured: bool, oidc_configured: bool) -> bool:
    """Demo sign-ins are offered only when the operator asked for them and configured no real
    sign-in: with accounts or OIDC, anyone picking "demo staff" would be staff over real users."""
    return demo_mode and not accounts_configured and not oidc_configured


def accounts_configured(path: Path | None, inline_json: str = "") -> bool:
    """Whether any password account is configured. An unreadable or invalid accounts
    configuration counts as configured: the operator meant to have accounts, so the demo must
    not open because of a typo (fail closed)."""
    if inline_json.strip():
        return True
    try:
        return bool(load_accounts(path))
    except (OSError, ValueError):
        return True


def oidc_principal(email: str, name: str, staff_emails: Iterable[str]) -> Principal:
    """A principal for someone signed in through the operator's identity provider."""
    email = email.strip().lower()
    if is_demo_id(email):
        raise ValueError("this identity is in the demo namespace, which no real sign-in may use")
    role: Role = "staff" if email in {e.lower() for e in staff_emails} else "user"
    return Principal(username=email, display_name=name or email, role=role, user_id=email, via="oidc")


# ---- command line -----------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """``hash`` prints a hash; ``add`` writes an account into the accounts file."""
    from services.settings import AppSettings

    parser = argparse.ArgumentParser(prog="python -m services.auth", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("hash", help="print a password hash for the accounts file")
    add = sub.add_parser("add", help="add or replace an account in the accounts file")
    add.add_argument("username")
    add.add_argument("--role", choices=ROLES, default="user")
    add.add_argument("--display-name", default="")
    add.add_argument("--user-id", default="")
    add.add_argument("--file", type=Path, default=None)
    args = parser.parse_args(argv)
    password = os.environ.get("NEW_PASSWORD") or getpass.getpass("Password: ")
    if args.command == "hash":
        if len(password) < MIN_PRIVILEGED_PASSWORD:
            print(f"warning: staff and analyst passwords need at least {MIN_PRIVILEGED_PASSWORD} characters",
                  file=sys.stderr)
        print(hash_password(password))
        return 0
    path = args.file or AppSettings().resolved_accounts_file
    try:
        save_account(path, args.username, password, args.role, args.display_name, args.user_id)
    except ValueError as exc:
        print(f"not saved: {exc}", file=sys.stderr)
        return 2
    print(f"saved {args.username} ({args.role}) to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

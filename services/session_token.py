"""Sign-in that survives a reload: a signed, expiring token in a cookie, ended by sign-out.

Streamlit keeps the signed-in principal in the browser session's state, which a reload (F5) or
a typed URL starts afresh. The page now also sets a cookie holding a token, and a new session
reads it (``st.context.cookies``) to sign the same person in again:

- the token names who signed in and how (``{"v": "password"|"demo", "u": name, "exp", "n",
  "p"}``), signed with HMAC-SHA256; the principal is rebuilt from the current accounts (or
  demo identities), so a removed account, a changed role or demo mode turned off take effect;
  ``p`` fingerprints the account's password hash, so changing a password ends its tokens;
- it expires after ``AppSettings.session_hours`` (0 turns the feature off);
- sign-out revokes its nonce in the app's SQL database (``session_revocations``): the browser
  may keep a copy of the cookie (and the running session still sees the old one), but it no
  longer signs anyone in. Single sign-on keeps its own session (Streamlit's ``st.login``).

The key is ``SESSION_SECRET`` or, when unset, a random key kept in ``DATA_DIR/session.key``
(created with mode 0600), shared by every app process on that data directory. The cookie is
set by a script on the page (Streamlit has no API to set one), so it is not HttpOnly; user
text is never rendered as HTML, so no other script runs on the page to read it.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from memory_core.storage.session_revocations import SqlRevocations  # noqa: F401 - re-exported for the UI
from services.auth import Principal


COOKIE = "ltm_session"
_VIAS = ("password", "demo")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def fingerprint(password_hash: str) -> str:
    """A short digest of an account's password hash: a new password ends the old tokens."""
    return hashlib.sha256(password_hash.encode("utf-8")).hexdigest()[:16]


def issue(principal: Principal, key: bytes, lifetime_s: float, now: float | None = None,
          password_hash: str = "") -> str | None:
    """A token for ``principal`` (None for a sign-in this cannot carry, e.g. single sign-on)."""
    if principal.via not in _VIAS or lifetime_s <= 0:
        return None
    claims = {"v": principal.via, "u": principal.username if principal.via == "password" else principal.user_id,
              "exp": int((time.time() if now is None else now) + lifetime_s), "n": secrets.token_hex(12),
              "p": fingerprint(password_hash) if password_hash else ""}
    body = _b64(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode("utf-8"))
    return f"{body}.{_b64(hmac.new(key, body.encode('ascii'), hashlib.sha256).digest())}"


def read(token: str, key: bytes, now: float | None = None) -> dict[str, Any] | None:
    """The claims of a token signed with ``key`` and not expired; None for anything else."""
    try:
        body, signature = token.split(".", 1)
        expected = hmac.new(key, body.encode("ascii"), hashlib.sha256).digest()
        if not hmac.compare_digest(expected, _unb64(signature)):
            return None
        claims = json.loads(_unb64(body))
    except (ValueError, UnicodeError, TypeError):
        return None
    if not isinstance(claims, dict) or claims.get("v") not in _VIAS or not isinstance(claims.get("u"), str):
        return None
    if not isinstance(claims.get("exp"), int) or claims["exp"] <= (time.time() if now is None else now):
        return None
    return claims


def restore(claims: Mapping[str, Any], accounts: Mapping[str, Any], demo: list[Principal] | None,
            revoked: Callable[[str], bool]) -> Principal | None:
    """The principal a valid token stands for now, or None: revoked, the account gone or its
    password changed, or a demo identity while demo mode is off (``demo`` None)."""
    if revoked(str(claims.get("n", ""))):
        return None
    if claims["v"] == "password":
        account = accounts.get(claims["u"])
        if account is None or claims.get("p") != fingerprint(account.password_hash):
            return None
        return Principal(account.username, account.display_name, account.role, account.user_id, via="password")
    return next((p for p in demo or [] if p.user_id == claims["u"]), None)


def load_key(secret: str, data_dir: Path) -> bytes:
    """``SESSION_SECRET`` when set, else the key in ``data_dir/session.key`` (made on first use)."""
    if secret:
        return hashlib.sha256(secret.encode("utf-8")).digest()
    path = data_dir / "session.key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first
            pass
        else:
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_hex(32))
    return bytes.fromhex(path.read_text().strip())


def cookie_script(token: str | None, max_age_s: int) -> str:
    """The script that sets (or, with ``token`` None, deletes) the cookie. ``token`` is
    base64url and hex only: nothing in it can close the string or the script."""
    if token is not None and not all(c.isalnum() or c in "-_." for c in token):
        raise ValueError("not a token")
    value, age = (token, max_age_s) if token is not None else ("", 0)
    return ("<script>document.cookie = '" + COOKIE + "=" + value + "; path=/; max-age=" + str(int(age)) +
            "; SameSite=Strict' + (location.protocol === 'https:' ? '; Secure' : '');</script>")

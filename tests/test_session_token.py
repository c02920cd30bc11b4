"""Sign-in kept across a reload: the signed, expiring token, its revocation, the cookie script.

The browser side (a reload keeps the sign-in, sign-out ends it) is played in
tests/e2e/test_browser.py; here the rules, with a real SQLite database for revocations."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from services.auth import Account, Principal, hash_password
from services.session_token import (
    SqlRevocations,
    cookie_script,
    fingerprint,
    issue,
    load_key,
    read,
    restore,
)

KEY = b"k" * 32
HASH = hash_password("a-long-password", n=2**4)
ACCOUNTS = {"lin": Account("lin", "Lin", "staff", "lin", HASH)}
LIN = Principal("lin", "Lin", "staff", "lin", via="password")
DEMO = [Principal("demo:alice", "Alice (demo)", "user", "demo:alice", via="demo")]


def never_revoked(_nonce: str) -> bool:
    return False


def test_a_token_signs_the_same_account_in_again() -> None:
    token = issue(LIN, KEY, 3600, password_hash=HASH)
    assert token is not None
    claims = read(token, KEY)
    assert claims is not None and claims["u"] == "lin" and claims["p"] == fingerprint(HASH)
    assert restore(claims, ACCOUNTS, None, never_revoked) == LIN
    demo = issue(DEMO[0], KEY, 3600)
    assert demo is not None and restore(read(demo, KEY) or {}, {}, DEMO, never_revoked) == DEMO[0]


def test_a_token_is_refused_when_forged_expired_or_for_another_key() -> None:
    token = issue(LIN, KEY, 3600, password_hash=HASH, now=1000.0)
    assert token is not None
    assert read(token, KEY, now=1000.0 + 3599) is not None
    assert read(token, KEY, now=1000.0 + 3600) is None  # expired
    assert read(token, b"x" * 32, now=1000.0) is None  # another key
    body, signature = token.split(".")
    import base64
    import json

    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    claims["u"] = "root"  # a forged name keeps the old signature
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=") + "." + signature
    assert read(forged, KEY, now=1000.0) is None
    for junk in ("", "abc", "a.b.c", "." * 3, token + "x"):
        assert read(junk, KEY, now=1000.0) is None


def test_restore_follows_the_accounts_as_they_are_now() -> None:
    claims = read(issue(LIN, KEY, 3600, password_hash=HASH) or "", KEY)
    assert claims is not None
    assert restore(claims, {}, None, never_revoked) is None  # the account was removed
    changed = {"lin": Account("lin", "Lin", "staff", "lin", hash_password("another-long-pw", n=2**4))}
    assert restore(claims, changed, None, never_revoked) is None  # the password was changed
    demoted = {"lin": Account("lin", "Lin", "analyst", "lin", HASH)}
    assert restore(claims, demoted, None, never_revoked).role == "analyst"  # type: ignore[union-attr]
    demo_claims = read(issue(DEMO[0], KEY, 3600) or "", KEY)
    assert demo_claims is not None and restore(demo_claims, ACCOUNTS, None, never_revoked) is None  # demo off
    sso = Principal("a@b.c", "A", "user", "a@b.c", via="oidc")
    assert issue(sso, KEY, 3600) is None  # single sign-on keeps its own session
    assert issue(LIN, KEY, 0) is None  # the feature turned off


def test_sign_out_revokes_the_token_for_every_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'app.db'}"
    first, second = SqlRevocations(create_engine(url)), SqlRevocations(create_engine(url))
    claims = read(issue(LIN, KEY, 3600, password_hash=HASH) or "", KEY)
    assert claims is not None
    assert restore(claims, ACCOUNTS, None, second.is_revoked) == LIN
    first.revoke(claims["n"], claims["exp"])
    first.revoke(claims["n"], claims["exp"])  # twice is fine
    assert second.is_revoked(claims["n"])
    assert restore(claims, ACCOUNTS, None, second.is_revoked) is None
    first.revoke("old", time.time() - 1)
    first.revoke("new", time.time() + 60)  # each revoke drops the rows past their expiry
    assert not second.is_revoked("old") and second.is_revoked("new")


def test_the_key_is_the_secret_or_one_kept_in_the_data_dir(tmp_path: Path) -> None:
    made = load_key("", tmp_path)
    assert len(made) == 32 and load_key("", tmp_path) == made  # kept: a restart keeps sign-ins
    assert (tmp_path / "session.key").stat().st_mode & 0o777 == 0o600
    assert load_key("s3cret", tmp_path) != made and load_key("s3cret", tmp_path) == load_key("s3cret", Path("/x"))


def test_the_cookie_script_carries_only_a_token() -> None:
    token = issue(LIN, KEY, 3600, password_hash=HASH)
    assert token is not None
    script = cookie_script(token, 3600)
    assert f"ltm_session={token}; path=/; max-age=3600; SameSite=Strict" in script
    assert "max-age=0" in cookie_script(None, 0)
    with pytest.raises(ValueError):
        cookie_script("x'; alert(1); '", 60)

"""Password hashing, accounts, throttling and principals (no engine needed)."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from services.auth import (
    Authenticator,
    LoginThrottle,
    accounts_configured,
    demo_available,
    demo_principals,
    hash_password,
    is_demo_id,
    load_accounts,
    main,
    oidc_principal,
    parse_accounts,
    save_account,
    verify_password,
)
from services.settings import AppSettings


def _pbkdf2(password: str, iterations: int) -> str:
    salt = os.urandom(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    enc = lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")  # noqa: E731
    return f"pbkdf2_sha256${iterations}${enc(salt)}${enc(digest)}"


def test_scrypt_hash_is_salted_and_verifies() -> None:
    first, second = hash_password("correct horse"), hash_password("correct horse")
    assert first != second  # a fresh salt each time
    assert first.startswith("scrypt$32768$8$1$")
    assert verify_password("correct horse", first) and verify_password("correct horse", second)
    assert not verify_password("correct hors", first)
    assert not verify_password("", first)


def test_pbkdf2_needs_enough_iterations_and_bad_hashes_never_match() -> None:
    assert verify_password("pw", _pbkdf2("pw", 200_000))
    assert not verify_password("pw", _pbkdf2("pw", 1_000))  # too weak: refused, not accepted
    for broken in ("", "plain-text-password", "scrypt$x$y", "scrypt$1024$8$1$AAAA$AAAA", "md5$abc"):
        assert not verify_password("pw", broken)


def test_accounts_file_and_inline_json(tmp_path: Path) -> None:
    path = tmp_path / "accounts.json"
    save_account(path, "Lin", "pw-1", "staff", display_name="Lin (support)")
    save_account(path, "max", "pw-2", "user")
    save_account(path, "max", "pw-3", "user")  # replaced, not duplicated
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    data = json.loads(path.read_text())
    assert len(data["accounts"]) == 2 and "pw-" not in path.read_text()
    inline = json.dumps([{"username": "ana", "role": "analyst", "password_hash": hash_password("pw-4")}])
    accounts = load_accounts(path, inline)
    assert set(accounts) == {"lin", "max", "ana"}
    assert accounts["lin"].role == "staff" and accounts["lin"].display_name == "Lin (support)"
    assert verify_password("pw-3", accounts["max"].password_hash)
    with pytest.raises(ValueError, match="account #0"):
        parse_accounts({"accounts": [{"username": "x", "role": "root", "password_hash": "scrypt$1"}]})
    with pytest.raises(ValueError):
        parse_accounts({"accounts": [{"username": "x", "role": "user", "password": "plain"}]})


def test_login_messages_do_not_reveal_which_part_was_wrong() -> None:
    accounts = parse_accounts([{"username": "lin", "role": "staff", "password_hash": hash_password("pw")}])
    auth = Authenticator(accounts, LoginThrottle())
    ok = auth.login("LIN", "pw")
    assert ok.principal is not None and ok.principal.is_staff and ok.principal.actor == "staff:lin"
    wrong_password = auth.login("lin", "nope")
    unknown_user = auth.login("nobody", "nope")
    assert wrong_password.principal is None and unknown_user.principal is None
    assert wrong_password.message == unknown_user.message


def test_throttle_locks_after_repeated_failures_and_unlocks_later() -> None:
    now = [1000.0]
    throttle = LoginThrottle(max_failures=3, window_s=60, lockout_s=120, clock=lambda: now[0])
    accounts = parse_accounts([{"username": "lin", "role": "staff", "password_hash": hash_password("pw")}])
    auth = Authenticator(accounts, throttle)
    for _ in range(3):
        assert auth.login("lin", "bad").principal is None
    locked = auth.login("lin", "pw")  # the right password is refused while locked
    assert locked.principal is None and "Too many failed sign-ins" in locked.message
    assert auth.login("other", "bad").message == "Wrong username or password."  # per name
    now[0] += 121
    assert auth.login("lin", "pw").principal is not None
    # failures spread beyond the window do not add up
    for _ in range(4):
        auth.login("lin", "bad")
        now[0] += 61
    assert throttle.retry_after("lin") == 0


def test_guessing_made_up_usernames_does_not_grow_the_throttle_for_good() -> None:
    now = [1000.0]
    throttle = LoginThrottle(max_failures=3, window_s=60, lockout_s=120, clock=lambda: now[0], max_names=6000)
    for i in range(3):
        throttle.failed("lin")  # locked: kept until its lock is over
    for i in range(5000):
        throttle.failed(f"nobody-{i}")
    assert throttle.tracked() > 5000  # all inside the window
    now[0] += 61
    for i in range(5000):
        throttle.failed(f"someone-{i}")  # a later wave: the first one's windows are over
    assert throttle.tracked() <= 5000 + 1  # the first wave was swept once its window was over
    assert throttle.retry_after("lin") > 0  # a running lock is never forgotten early
    for i in range(20_000):
        throttle.failed(f"flood-{i}")
    assert throttle.tracked() <= 2 * 6000 + 1  # capped (amortised sweeps); oldest windows dropped first
    assert throttle.retry_after("lin") > 0


def test_demo_and_oidc_principals() -> None:
    with_staff = demo_principals([("demo:zhangsan", "张三"), ("demo:alice", "Alice")], include_staff=True)
    assert [p.user_id for p in with_staff] == ["demo:zhangsan", "demo:alice", "demo:staff"]
    assert all(p.via == "demo" for p in with_staff) and with_staff[-1].is_staff
    assert not any(p.is_staff for p in demo_principals([("demo:alice", "Alice")], include_staff=False))
    assert oidc_principal("Boss@Example.org", "Boss", ["boss@example.org"]).is_staff
    visitor = oidc_principal("v@example.org", "", ["boss@example.org"])
    assert not visitor.is_staff and visitor.user_id == "v@example.org" and not visitor.can_view_analytics


def test_demo_identities_have_their_own_namespace(tmp_path: Path) -> None:
    """Attack (issue 19, 1): demo ids were plain "alice" / "zhangsan", the same user ids a real
    account of those names has; now no account or OIDC sign-in can take a demo id."""
    from services.demo_data import DEMO_USERS

    assert DEMO_USERS and all(is_demo_id(uid) for uid in DEMO_USERS)
    for entry in ({"username": "demo:alice"}, {"username": "alice", "user_id": "demo:alice"},
                  {"username": "alice", "user_id": "DEMO:alice"}, {"username": "alice", "user_id": "ｄｅｍｏ:alice"}):
        with pytest.raises(ValueError, match="reserved for demo"):
            parse_accounts([{**entry, "role": "user", "password_hash": hash_password("pw")}])
    with pytest.raises(ValueError, match="reserved for demo"):
        save_account(tmp_path / "a.json", "alice", "long-enough-password", "user", user_id="demo:alice")
    assert not (tmp_path / "a.json").exists()
    with pytest.raises(ValueError):
        oidc_principal("demo:alice", "", [])
    with pytest.raises(ValueError):
        demo_principals([("alice", "Alice")], include_staff=False)  # a demo user outside the namespace


def test_demo_is_offered_only_when_asked_for_and_no_real_sign_in_exists(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEMO_MODE", raising=False)
    assert AppSettings(_env_file=None).demo_mode is False  # type: ignore[call-arg]
    assert demo_available(True, accounts_configured=False, oidc_configured=False)
    assert not demo_available(False, accounts_configured=False, oidc_configured=False)
    assert not demo_available(True, accounts_configured=True, oidc_configured=False)
    assert not demo_available(True, accounts_configured=False, oidc_configured=True)
    path = tmp_path / "accounts.json"
    assert not accounts_configured(path)
    path.write_text("{not json")  # broken: the operator meant accounts, so no demo (fail closed)
    assert accounts_configured(path)
    path.write_text(json.dumps({"accounts": []}))
    assert not accounts_configured(path)
    assert accounts_configured(path, inline_json='[{"username": "x"}]')
    save_account(path, "zoe", "long-enough-password", "user")
    assert accounts_configured(path)


def test_settings_and_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STAFF_EMAILS", "A@x.org, b@y.org")
    monkeypatch.setenv("DEMO_MODE", "false")
    monkeypatch.setenv("DATA_DIR", str(tmp_path))
    monkeypatch.delenv("ACCOUNTS_FILE", raising=False)
    settings = AppSettings(_env_file=None)  # type: ignore[call-arg]
    assert settings.staff_emails == ("a@x.org", "b@y.org") and settings.demo_mode is False
    assert settings.resolved_accounts_file == tmp_path / "accounts.json"
    monkeypatch.setenv("NEW_PASSWORD", "from-env")
    assert main(["add", "ops", "--role", "staff"]) == 0
    assert verify_password("from-env", load_accounts(tmp_path / "accounts.json")["ops"].password_hash)

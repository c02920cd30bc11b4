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
    Account,
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
from services.throttle import MemoryThrottleStore


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
    save_account(path, "Lin", "pw-1-long-enough", "staff", display_name="Lin (support)")
    save_account(path, "max", "pw-2", "user")
    save_account(path, "max", "pw-3", "user")  # replaced, not duplicated
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    data = json.loads(path.read_text())
    assert len(data["accounts"]) == 2
    # no password is stored: not as a field, not as any value (a bare "pw-" search failed once
    # when a random salt in a hash spelled it)
    assert all("password" not in account for account in data["accounts"])
    assert not {f'"{pw}"' for pw in ("pw-1-long-enough", "pw-2", "pw-3")} & {
        f'"{value}"' for account in data["accounts"] for value in account.values()}
    assert "pw-1-long-enough" not in path.read_text()
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


def _lin() -> dict[str, Account]:
    return parse_accounts([{"username": "lin", "role": "staff", "password_hash": hash_password("lin-long-password")}])


ATTACKER, STAFF_PC = "198.51.100.7", "203.0.113.5"


def test_a_guesser_cannot_lock_the_real_person_out() -> None:
    """Attack (issue 19, 5): five wrong guesses locked a name for 300 s whatever the client,
    even against the right password."""
    now = [1000.0]
    throttle = LoginThrottle(clock=lambda: now[0])
    auth = Authenticator(_lin(), throttle)
    for _ in range(5):
        assert auth.login("lin", "guess", ATTACKER).principal is None
        now[0] += throttle.retry_after("lin", ATTACKER)  # a patient guesser waits out each delay
    assert auth.login("lin", "lin-long-password", STAFF_PC).principal is not None  # at once, elsewhere
    # The guesser is slowed down, doubling with every try from its own connection ...
    waits = []
    for _ in range(12):
        auth.login("lin", "guess", ATTACKER)
        waits.append(throttle.retry_after("lin", ATTACKER))
        now[0] += waits[-1]
    assert waits[-1] >= 64 and all(b >= a for a, b in zip(waits, waits[1:]))
    auth.login("lin", "guess", ATTACKER)
    refused = auth.login("lin", "lin-long-password", ATTACKER)  # unchecked while it waits
    assert refused.principal is None and "Too many failed sign-ins" in refused.message
    # ... while the real person, even with the name under attack, waits 30 s at most.
    assert 0 < throttle.retry_after("lin", STAFF_PC) <= 30
    now[0] += 30
    assert auth.login("lin", "lin-long-password", STAFF_PC).principal is not None


def test_guessing_from_many_clients_is_held_to_the_per_name_backoff() -> None:
    now = [1000.0]
    throttle = LoginThrottle(clock=lambda: now[0])
    auth = Authenticator(_lin(), throttle)
    for i in range(10):  # ten machines, one guess each
        auth.login("lin", "guess", f"192.0.2.{i}")
    assert throttle.retry_after("lin", "192.0.2.99") == 1  # the next fresh machine waits too
    for i in range(10, 30):
        now[0] += throttle.retry_after("lin", f"192.0.2.{i}")
        auth.login("lin", "guess", f"192.0.2.{i}")
    assert throttle.retry_after("lin", "192.0.2.99") == 30  # capped: a few tries a minute, for everyone


def test_one_password_sprayed_across_names_is_slowed() -> None:
    """Attack (issue 19, 5): one password tried against many names was unlimited."""
    now = [1000.0]
    throttle = LoginThrottle(clock=lambda: now[0])
    auth = Authenticator(_lin(), throttle)
    for i in range(20):
        assert auth.login(f"user{i}", "Summer2024!", ATTACKER).message == "Wrong username or password."
    assert throttle.retry_after("someone-new", ATTACKER) > 0
    assert "Too many failed sign-ins" in auth.login("user99", "Summer2024!", ATTACKER).message
    assert throttle.retry_after("someone-new", STAFF_PC) == 0  # other clients are not affected
    assert auth.login("lin", "lin-long-password", STAFF_PC).principal is not None


def test_an_unknown_client_never_slows_everyone_down_for_long() -> None:
    """Streamlit gives no address for loopback (and every visitor behind an untrusted proxy has
    the proxy's): such sign-ins count per name only, with the short cap."""
    now = [1000.0]
    throttle = LoginThrottle(clock=lambda: now[0])
    for i in range(100):
        throttle.failed(f"name{i}", "")
    assert throttle.retry_after("lin", "") == 0  # no shared "unknown client" budget
    for _ in range(40):
        throttle.failed("lin", "")
    assert throttle.retry_after("lin", "") <= 30


def test_made_up_names_do_not_pile_up() -> None:
    now = [1000.0]
    store = MemoryThrottleStore()
    throttle = LoginThrottle(store, clock=lambda: now[0])
    for i in range(3000):
        throttle.failed(f"nobody-{i}", ATTACKER)
    assert len(store) > 3000
    now[0] += throttle.policy.window_s + throttle.policy.max_delay_s + 61
    throttle.failed("lin", STAFF_PC)
    assert len(store) == 3  # the old counters were pruned; lin's three are new


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
    monkeypatch.setenv("NEW_PASSWORD", "from-env-long-enough")
    assert main(["add", "ops", "--role", "staff"]) == 0
    assert verify_password("from-env-long-enough", load_accounts(tmp_path / "accounts.json")["ops"].password_hash)


@pytest.mark.parametrize("role", ["staff", "analyst"])
def test_staff_and_analyst_passwords_need_twelve_characters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            role: str) -> None:
    """Attack (issue 19, 5): a staff password of "a" was accepted."""
    path = tmp_path / "accounts.json"
    for short in ("a", "elevenchars"):
        monkeypatch.setenv("NEW_PASSWORD", short)
        assert main(["add", "boss", "--role", role, "--file", str(path)]) == 2
        with pytest.raises(ValueError, match="at least 12"):
            save_account(path, "boss", short, role)
    assert not path.exists()
    monkeypatch.setenv("NEW_PASSWORD", "twelve-chars")
    assert main(["add", "boss", "--role", role, "--file", str(path)]) == 0
    save_account(path, "someone", "short", "user")  # end users are not held to it

"""The user's own contact details, kept for the user and for nobody else.

Why: PII redaction kept phone numbers and e-mail addresses out of every store, and so out of the
memory itself. "My work email is dan@brightlane.com, use it for drafts" came back as "[EMAIL]",
a new number replaced nothing (two "[PHONE]" memories look equal, so the second was folded into
the first as a repeat), and "what's my number?" could never be answered. Users tell an assistant
these things so that it remembers them.

So a redacted value is now replaced by a *tagged* placeholder, ``[PHONE#3f2a9c]``: the tag is a
keyed hash of the value (HMAC-SHA256 under the vault's key, 24 bits), so two memories holding the
same number carry the same tag and two numbers differ, which is what newer-wins, corrections and
near-duplicate folding need, while the tag tells nothing without the key. The values of the kinds
kept (``Settings.pii_keep_kinds``: phone and e-mail by default) are sealed with Fernet (AES-128-CBC
+ HMAC, from ``cryptography``) into the memory's SQL row, and only there: the embedding, the
keyword index (``masked``: plain ``[PHONE]``), the result cache, the history, the message log and
the admin pages see the placeholder. The owner's own reads (the chat's prompt and reply, the HTTP
API and MCP recall) ``reveal`` them. Identity and bank-card numbers are tagged but never kept.

Keys: ``PII_KEY`` (one or more Fernet keys, comma-separated, the first one current: rotation reads
with all and writes with the first; tags come from the last, the oldest); unset, a key file
``data_dir/pii.key`` is made once (0600), as the embedded SQLite file is. Every process that
shares a database must share the key: with a database of its own (PostgreSQL) and no
``PII_KEY``, the engine warns at start. A value sealed under a key that is gone stays a
placeholder, and an edit of its text is refused rather than losing it.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from memory_core.config import Settings
from memory_core.records import SearchResponse
from memory_core.text.pii import PLACEHOLDER_RE, PLACEHOLDERS, PiiFinding, masked, redact
from memory_core.types import SearchResult

log = logging.getLogger(__name__)

KEY_FILE = "pii.key"


def _normal(kind: str, value: str) -> str:
    """One spelling per value, so "+86 139-1234-5678" and "13912345678" get one tag."""
    if kind == "email":
        return value.strip().lower()
    digits = re.sub(r"\D", "", value)
    if kind == "phone":
        for prefix in ("0086", "86"):
            if digits.startswith(prefix) and len(digits) - len(prefix) == 11 and digits[len(prefix)] == "1":
                return digits[len(prefix):]
    return digits or value.strip()


class PiiVault:
    """Tags, seals and reveals the identifiers PII redaction finds."""

    def __init__(self, keys: Sequence[bytes], keep_kinds: Iterable[str] = ("phone", "email")) -> None:
        if not keys:
            raise ValueError("the PII vault needs at least one key")
        self._fernet = MultiFernet([Fernet(k) for k in keys])
        # Tags come from the oldest key listed (rotation appends the old key after the new one),
        # so the same number said after a rotation still has its tag and folds as a repeat.
        self._tag_key = hashlib.sha256(b"memory-pii-tag\x00" + keys[-1]).digest()
        self._warned = False
        unknown = set(keep_kinds) - set(PLACEHOLDERS)
        if unknown:
            raise ValueError(f"unknown PII kinds to keep: {sorted(unknown)} (known: {sorted(PLACEHOLDERS)})")
        self.keep_kinds = frozenset(keep_kinds)

    @classmethod
    def from_settings(cls, key_setting: str, data_dir: Path, keep_kinds: Iterable[str]) -> "PiiVault":
        """The keys of ``PII_KEY``, or the embedded key file under ``data_dir`` (made once)."""
        keys = [k.strip().encode() for k in key_setting.split(",") if k.strip()]
        return cls(keys or [key_file(data_dir)], keep_kinds)

    def tag(self, kind: str, value: str) -> str:
        """The placeholder a value is stored as: ``[PHONE#3f2a9c]``."""
        digest = hmac.new(self._tag_key, f"{kind}\x00{_normal(kind, value)}".encode(), hashlib.sha256).hexdigest()
        tag = digest[:6]
        if not any(ch.isdigit() for ch in tag):  # one digit at least: the rules read a tag as a value, a code
            tag = str(int(digest[6], 16) % 10) + tag[1:]
        return f"{PLACEHOLDERS[kind][:-1]}#{tag}]"

    def redact(self, text: str) -> tuple[str, dict[str, str], list[str]]:
        """``text`` with each identifier replaced by its tagged placeholder; the values to keep
        (tag -> value as written, kinds of ``keep_kinds`` only); the kinds found, in order."""
        values: dict[str, str] = {}

        def tagged(finding: PiiFinding, value: str) -> str:
            tag = self.tag(finding.kind, value)
            if finding.kind in self.keep_kinds:
                values.setdefault(tag, value)
            return tag

        redaction = redact(text, tagged)
        return redaction.text, values, redaction.kinds

    def seal(self, values: Mapping[str, str], text: str | None = None) -> str | None:
        """The values (only those whose tag ``text`` still holds, when given), encrypted; None
        when there are none."""
        kept = {t: v for t, v in values.items() if text is None or t in text}
        if not kept:
            return None
        return self._fernet.encrypt(json.dumps(kept, ensure_ascii=False, sort_keys=True).encode()).decode()

    def unseal(self, sealed: str | None) -> dict[str, str]:
        """The values a memory keeps; {} when it keeps none or its key is gone (logged)."""
        if not sealed:
            return {}
        try:
            data = json.loads(self._fernet.decrypt(sealed.encode()))
        except (InvalidToken, ValueError):
            if not self._warned:  # once per process: every read of such a memory would log it
                self._warned = True
                log.warning("a memory's sealed PII could not be opened with the configured PII_KEY "
                            "(its placeholders stay); set the key that sealed it, or keep it listed after "
                            "the new one")
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def unseal_many(self, sealed: Iterable[str | None]) -> dict[str, str]:
        out: dict[str, str] = {}
        for one in sealed:
            out.update(self.unseal(one))
        return out

    @staticmethod
    def reveal(text: str, values: Mapping[str, str]) -> str:
        """``text`` with the tags of ``values`` put back as the values; other tags are shown
        plain (``[PHONE]``)."""
        if not values:
            return masked(text)
        return PLACEHOLDER_RE.sub(lambda m: values.get(m.group(0), f"[{m.group(1)}]"), text)


def key_file(data_dir: Path) -> bytes:
    """The embedded key: read ``data_dir/pii.key``, or write a new one there (0600). Written
    beside and then hard-linked into place, so two processes starting at once agree on one."""
    path = Path(data_dir) / KEY_FILE
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{KEY_FILE}.{uuid.uuid4().hex}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(Fernet.generate_key())
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass  # another process made it first: use theirs
        finally:
            tmp.unlink(missing_ok=True)
    key = path.read_bytes().strip()
    if not key:
        raise ValueError(f"{path} is empty: delete it to make a new PII key (values sealed under the old one are lost)")
    return key


_warned_shared_key: set[str] = set()


def vault_for(settings: Settings) -> PiiVault:
    """The vault of a deployment's settings. A database that other processes may share (any but
    the embedded SQLite file) with no ``PII_KEY`` gets a warning: each process would seal with the
    key file of its own ``DATA_DIR``, and the others could not read what it sealed."""
    key = settings.pii_key.get_secret_value()
    url = settings.database_url
    if not key.strip() and url and not url.startswith("sqlite") and url not in _warned_shared_key:
        _warned_shared_key.add(url)
        log.warning("PII_KEY is not set: phone numbers and e-mail addresses are sealed with the key file in %s; "
                    "every process using this database (the app, the API, the workers) must have the same "
                    "key: set PII_KEY", settings.data_dir)
    return PiiVault.from_settings(key, settings.data_dir, settings.pii_keep_kinds)


def reveal_response(vault: PiiVault, response: SearchResponse) -> SearchResponse:
    """A search response as its owner may read it: every result's text and both prompt blocks
    with the values their memories keep. The response cache holds the sealed form only; this runs
    on the way out, per call."""
    rows = list(response.results) + list(response.constraints)
    if len({r.user_id for r in rows}) > 1:  # one user's values must never fill another's placeholders
        raise ValueError("reveal_response: a search response holds one user's memories")
    values = vault.unseal_many(r.sealed for r in rows)

    def shown(result: SearchResult) -> SearchResult:
        return replace(result, content=vault.reveal(result.content, values))

    return replace(response, results=[shown(r) for r in response.results],
                   constraints=[shown(r) for r in response.constraints],
                   context_block=vault.reveal(response.context_block, values),
                   constraint_block=vault.reveal(response.constraint_block, values))

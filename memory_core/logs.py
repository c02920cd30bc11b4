"""Structured logging: one JSON object per line, with the request id of the call that logged it,
and secrets (API keys, passwords in URLs) masked before anything is written."""
from __future__ import annotations

import contextvars
import json
import logging
import re
import uuid
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Iterator, Sequence

_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
_URL_PASSWORD = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<user>[^:/@\s]+):(?P<pw>[^@\s]+)@", re.IGNORECASE)
_BEARER = re.compile(r"\b(sk-[A-Za-z0-9_-]{8,}|Bearer\s+[A-Za-z0-9._-]{8,})")


def current_request_id() -> str:
    return _request_id.get()


@contextmanager
def request_context(request_id: str | None = None) -> Iterator[str]:
    """Tag every log line inside the block with one id (reuses an outer id when nested)."""
    outer = _request_id.get()
    rid = request_id or (outer if outer != "-" else uuid.uuid4().hex[:12])
    token = _request_id.set(rid)
    try:
        yield rid
    finally:
        _request_id.reset(token)


def mask_secrets(text: str, secrets: Sequence[str] = ()) -> str:
    text = _URL_PASSWORD.sub(lambda m: f"{m.group('scheme')}{m.group('user')}:***@", text)
    text = _BEARER.sub("***", text)
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


class JsonFormatter(logging.Formatter):
    def __init__(self, secrets: Sequence[str] = ()) -> None:
        super().__init__()
        self._secrets = tuple(secrets)

    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "ts": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "request_id": getattr(record, "request_id", current_request_id()),
            "msg": mask_secrets(record.getMessage(), self._secrets),
        }
        if record.exc_info:
            payload["exc"] = mask_secrets(self.formatException(record.exc_info), self._secrets)
        return json.dumps(payload, ensure_ascii=False)


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current_request_id()
        return True


_configured = False


def configure_logging(level: str = "INFO", secrets: Sequence[str] = ()) -> None:
    """Install the JSON handler on the root logger once per process."""
    global _configured
    if _configured:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter(secrets))
    handler.addFilter(RequestIdFilter())
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)
    _configured = True


def settings_secrets(settings: object) -> list[str]:
    """Every secret value in a Settings object, for masking."""
    values: list[str] = []
    for name in ("openai_api_key", "milvus_token"):
        secret = getattr(settings, name, None)
        if secret is not None:
            values.append(secret.get_secret_value())
    for name in ("database_url", "redis_url"):
        match = _URL_PASSWORD.search(getattr(settings, name, "") or "")
        if match:
            values.append(match.group("pw"))
    return [v for v in values if v]

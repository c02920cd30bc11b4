"""Structured logs carry request ids and never show secrets."""
from __future__ import annotations

import json
import logging

from memory_core.config import Settings
from memory_core.logs import JsonFormatter, RequestIdFilter, mask_secrets, request_context, settings_secrets


def test_json_lines_with_request_id_and_masked_secrets() -> None:
    settings = Settings(_env_file=None, openai_api_key="sk-live-abcdef123456",
                        database_url="postgresql+psycopg2://ltm:hunter2pass@db:5432/ltm")
    secrets = settings_secrets(settings)
    assert "sk-live-abcdef123456" in secrets and "hunter2pass" in secrets
    assert "hunter2pass" not in repr(settings.openai_api_key)
    formatter, rid_filter = JsonFormatter(secrets), RequestIdFilter()
    record = logging.LogRecord("memory_core.x", logging.WARNING, __file__, 1,
                               "connect %s with key %s failed", (settings.database_url, "sk-live-abcdef123456"), None)
    with request_context("req-42"):
        rid_filter.filter(record)
    line = json.loads(formatter.format(record))
    assert line["request_id"] == "req-42" and line["level"] == "WARNING"
    assert "hunter2pass" not in line["msg"] and "sk-live-abcdef123456" not in line["msg"]
    assert "postgresql+psycopg2://ltm:***@db:5432/ltm" in line["msg"]


def test_request_context_nests_and_resets() -> None:
    with request_context() as outer:
        with request_context() as inner:
            assert inner == outer
    assert mask_secrets("Authorization: Bearer abcdefghijkl") == "Authorization: ***"

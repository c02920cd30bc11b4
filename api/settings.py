"""Settings of the HTTP API and the MCP server (environment variables or ``.env``).

The engine's own settings (SQL, Milvus, Redis, models) are ``memory_core.config.Settings``:
the API reads the very same variables, so it serves the same store as the app.
"""
from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ApiSettings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    api_host: str = Field(default="127.0.0.1", description="Where `python -m api` listens (0.0.0.0 in a container).")
    api_port: int = 8800
    api_rate_limit_per_min: int = Field(default=600, description="Requests per minute per key unless the key says.")
    api_rate_window_s: int = Field(default=60, description="Length of one rate-limit window.")
    api_key_cache_s: float = Field(default=10.0, description="How long a verified key row is reused; a revoked "
                                                             "key stops working within this time.")
    api_max_batch: int = Field(default=500, description="Most items one add_many request may carry.")
    api_history_limit: int = 500

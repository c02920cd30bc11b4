"""LLM providers: an OpenAI-compatible endpoint when configured, else the offline rule-based one."""
from __future__ import annotations

from memory_core.config import Settings
from memory_core.llm.base import ChatMessage, LLMProvider, MemoryBrief, MergeProposal


def build_llm(settings: Settings) -> LLMProvider:
    from memory_core.llm.offline import OfflineLLM

    offline = OfflineLLM()
    if not settings.llm_configured:
        return offline
    from memory_core.llm.fallback import FallbackLLM
    from memory_core.llm.openai_provider import OpenAICompatibleLLM

    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else ""
    primary = OpenAICompatibleLLM(settings.openai_base_url, key, settings.llm_model,
                                  timeout_s=settings.llm_timeout_s, max_retries=settings.llm_max_retries)
    return FallbackLLM(primary, offline)


__all__ = ["ChatMessage", "LLMProvider", "MemoryBrief", "MergeProposal", "build_llm"]

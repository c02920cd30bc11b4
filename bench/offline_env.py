"""Imported first by a benchmark's entry point: the environment every offline run wants (no
model hub, torch and tokenizers quiet on a shared 2-core machine, Milvus Lite's index quiet),
set before any of those libraries is imported. Values already in the environment win."""
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RUST_LOG", "error")

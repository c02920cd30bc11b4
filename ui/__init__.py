"""Streamlit-only helpers (pages import these; services never do)."""

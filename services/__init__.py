"""App-facing services: everything the Streamlit pages call.

Pages only render; services hold the logic and import ``memory_core`` (never the other way
round) and, so they stay testable without a browser, they do not import Streamlit.
"""

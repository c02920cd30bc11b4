"""User text made safe for the two places it can turn into something else: a spreadsheet cell
(a formula) and a Markdown page (an image, a link, a styled line).

Why here and not in each page: every staff surface that shows or exports user text (Admin's
tables and their built-in CSV download, the JSON-lines export, history, provenance, merge
preview) must apply the same rule, and the rule must be testable without Streamlit.
"""
from __future__ import annotations

import re
from typing import Any

import pandas as pd

# A spreadsheet reads a cell starting with one of these as a formula (=HYPERLINK(...), +cmd|...,
# -2+3, @SUM(...)); tab and carriage return start one in some importers (OWASP "CSV injection").
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# Values that get the protective quote: a formula start, possibly behind quotes already (so a
# value that itself begins with "'=" is quoted too and the round trip through import is exact).
_NEEDS_QUOTE = re.compile(r"'*[=+\-@\t\r]")
_QUOTED = re.compile(r"'+[=+\-@\t\r]")
# Every ASCII punctuation character CommonMark lets a backslash escape that Streamlit's Markdown
# gives a meaning to: links and images ([]()!), emphasis, code, headings, lists, tables, HTML,
# colour/emoji directives (:red[...], :smile:), LaTeX ($), and the ":" of bare URLs (autolinks).
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:&\"'=])")


def neutralise_cell(value: Any) -> Any:
    """A string that a spreadsheet would run as a formula gets a leading apostrophe (shown as
    text, not evaluated); anything else is returned unchanged."""
    if isinstance(value, str) and _NEEDS_QUOTE.match(value):
        return "'" + value
    return value


def restore_cell(value: Any) -> Any:
    """The inverse of :func:`neutralise_cell` (for a file this app exported and staff imports
    again): one apostrophe in front of a formula start is removed."""
    if isinstance(value, str) and _QUOTED.match(value):
        return value[1:]
    return value


def neutralise_json(value: Any) -> Any:
    """:func:`neutralise_cell` on every string inside dicts and lists (keys stay as they are)."""
    if isinstance(value, dict):
        return {key: neutralise_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [neutralise_json(item) for item in value]
    return neutralise_cell(value)


def neutralise_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy whose text cells are neutralised: what a page shows in ``st.dataframe`` is also
    what its built-in "Download as CSV" writes, so the table itself must be safe."""
    out = frame.copy()
    for column in out.columns:
        dtype = out[column].dtype
        if pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
            out[column] = out[column].map(neutralise_cell)
    return out


def md_escape(text: Any) -> str:
    """``text`` to embed in a Markdown string so that it shows as written: no image is
    fetched, no link made, nothing styled. Newlines become spaces (for one-line use)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def md_code(text: Any) -> str:
    """``text`` as inline code (nothing inside a code span is Markdown), or escaped text when
    it holds a backtick or a line break, which could end the span early."""
    value = str(text)
    if "`" in value or "\n" in value or "\r" in value:
        return md_escape(value)
    return f"`{value}`"


def md_text(text: Any) -> str:
    """``text`` as Markdown that shows exactly as written, line breaks kept (chat messages, and
    replies composed from them). Unlike :func:`md_escape` it keeps every space, so it can be
    applied to a streamed reply chunk by chunk."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", str(text)).replace("\r\n", "\n").replace("\n", "  \n")

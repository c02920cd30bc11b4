"""Admin's browse filters kept in the URL (``st.query_params``), so a reload, a bookmark or a
link sent to a colleague opens the same view.

The URL is read once per browser session, before the filter widgets exist, and every value is
checked against what the widgets allow (an unknown user, status or sort is dropped, not
trusted); after the widgets ran, their values are written back, defaults left out. The parsing
is plain functions, tested without Streamlit.
"""
from __future__ import annotations

from datetime import date
from typing import Any, Callable, Mapping, Sequence

import streamlit as st

# widget key -> URL parameter
PARAMS = {"admin_f_user": "user", "admin_f_types": "type", "admin_f_status": "status", "admin_f_imp": "imp",
          "admin_f_text": "q", "admin_f_dates": "created", "admin_f_sort": "sort", "admin_f_desc": "desc",
          "admin_page": "page"}
DEFAULTS: dict[str, Any] = {"admin_f_user": "", "admin_f_types": [], "admin_f_status": ["active"],
                            "admin_f_imp": (1, 5), "admin_f_text": "", "admin_f_dates": (),
                            "admin_f_sort": "created_at", "admin_f_desc": True, "admin_page": 0}
_LOADED = "admin_url_loaded"


def _day(text: str) -> date | None:
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def from_params(params: Mapping[str, Sequence[str]], users: Sequence[str], types: Sequence[str],
                statuses: Sequence[str], sorts: Sequence[str]) -> dict[str, Any]:
    """Widget values from URL parameters (each a list of strings), only those that are valid."""
    one = {name: values[0] for name, values in params.items() if values}
    out: dict[str, Any] = {}
    if one.get("user") in users:
        out["admin_f_user"] = one["user"]
    for key, name, allowed in (("admin_f_types", "type", types), ("admin_f_status", "status", statuses)):
        if name in params:
            out[key] = [v for v in dict.fromkeys(params[name]) if v in allowed]
    low_high = one.get("imp", "").split("-")
    if len(low_high) == 2 and all(p.isdigit() and 1 <= int(p) <= 5 for p in low_high) and low_high[0] <= low_high[1]:
        out["admin_f_imp"] = (int(low_high[0]), int(low_high[1]))
    if "q" in one:
        out["admin_f_text"] = one["q"][:200]
    days = [d for d in (_day(p) for p in one.get("created", "").split("..") if p) if d is not None]
    if days and (len(days) == 1 or days[0] <= days[1]):
        out["admin_f_dates"] = tuple(days[:2])
    if one.get("sort") in sorts:
        out["admin_f_sort"] = one["sort"]
    if one.get("desc") in ("0", "1"):
        out["admin_f_desc"] = one["desc"] == "1"
    if one.get("page", "").isdigit():
        out["admin_page"] = min(int(one["page"]), 10_000)
    return out


def to_params(values: Mapping[str, Any]) -> dict[str, str | list[str]]:
    """URL parameters for the widget values that differ from the defaults."""
    out: dict[str, str | list[str]] = {}
    for key, name in PARAMS.items():
        value = values.get(key, DEFAULTS[key])
        if key == "admin_f_dates":
            value = tuple(value or ())
        if value == DEFAULTS[key] or (isinstance(value, (list, tuple)) and list(value) == list(DEFAULTS[key])):
            continue
        if key == "admin_f_imp":
            out[name] = f"{value[0]}-{value[1]}"
        elif key == "admin_f_dates":
            out[name] = "..".join(d.isoformat() for d in value)
        elif key == "admin_f_desc":
            out[name] = "1" if value else "0"
        elif isinstance(value, (list, tuple)):
            out[name] = list(value)
        else:
            out[name] = str(value)
    return out


def load(users: Sequence[str], types: Sequence[str], statuses: Sequence[str], sorts: Sequence[str]) -> None:
    """Before the widgets: their values from the URL (once per session), else the defaults."""
    state = st.session_state
    if not state.get(_LOADED):
        state[_LOADED] = True
        params = {name: st.query_params.get_all(name) for name in PARAMS.values()}
        state.update(from_params(params, users, types, statuses, sorts))
    for key, default in DEFAULTS.items():
        if key not in state or (key == "admin_f_user" and state[key] not in users):
            state[key] = list(default) if isinstance(default, list) else default


def save(current: Callable[[str], Any] = lambda key: st.session_state.get(key)) -> None:
    """After the widgets: the URL says what they show now."""
    wanted = to_params({key: current(key) for key in PARAMS})
    have = {name: st.query_params.get_all(name) for name in PARAMS.values()}
    flat = {name: (value if isinstance(value, list) else [value]) for name, value in wanted.items()}
    if {k: v for k, v in have.items() if v} != flat:
        st.query_params.from_dict(wanted)

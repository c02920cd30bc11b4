"""Admin (support staff only): browse, edit, expire, restore, delete and erase memories, see
their history and provenance, run maintenance, import and export. Every service call passes
the signed-in principal and is refused for anyone who is not staff."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pandas as pd
import streamlit as st

from services import admin
from services.safe_text import md_code, md_escape as md
from services.safe_text import neutralise_frame
from ui import admin_filters
from ui.common import database_or_stop, engine_or_stop, friendly_errors, require_principal
from ui.maintenance import maintenance_tab

st.set_page_config(page_title="Admin · Long-term memory", page_icon="🛠️", layout="wide")
friendly_errors()  # no traceback is ever shown: a reference id, and the traceback in the log
principal = require_principal()
if not principal.is_staff:
    role = {"analyst": "an analyst (Analytics is yours)", "user": "an end user"}.get(principal.role, principal.role)
    st.error(f"🚫 This page is for support staff only. You are signed in as {role}.")
    st.stop()
engine = engine_or_stop()
database_or_stop(engine)
state = st.session_state

st.title("🛠️ Admin")
st.caption(f"Signed in as **{md(principal.display_name)}** — every change is recorded in the history as "
           f"{md_code(principal.actor)}.")
if principal.via == "demo":
    st.info("🧪 Demo staff: you see and act on demo users only.")

TYPES = ["declarative", "episodic", "procedural"]
STATUSES = ["active", "expired", "superseded", "archived", "deleted"]
SORTS = {"created_at": "created", "updated_at": "updated", "importance": "importance",
         "access_count": "times used", "user_id": "user", "expires_at": "expires"}


def table(rows: Any, **kwargs: Any) -> None:
    """A dataframe of user text: cells that a spreadsheet would run as formulas are quoted, since
    the table's own "Download as CSV" writes what it shows."""
    st.dataframe(neutralise_frame(pd.DataFrame(rows, columns=kwargs.pop("columns", None))), **kwargs)


def fmt(value: Any) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return "" if value is None else str(value)


tab_browse, tab_users, tab_ops, tab_io = st.tabs(["Memories", "Users & merges", "Maintenance", "Import / export"])

# ---- browse and edit --------------------------------------------------------------------------------
with tab_browse:
    user_list = admin.users(principal, engine)
    user_options = [""] + [u for u, _ in user_list]
    admin_filters.load(user_options, TYPES, STATUSES, list(SORTS))  # from the URL, once; defaults otherwise
    c1, c2, c3, c4 = st.columns([2, 2, 2, 2])
    user_filter = c1.selectbox("User", user_options, format_func=lambda u: u or "all users", key="admin_f_user")
    type_filter = c2.multiselect("Type", TYPES, key="admin_f_types")
    status_filter = c3.multiselect("Status", STATUSES, key="admin_f_status")
    imp_low, imp_high = c4.slider("Importance", 1, 5, key="admin_f_imp")
    c5, c6, c7, c8 = st.columns([3, 2, 2, 1])
    text_filter = c5.text_input("Text contains", key="admin_f_text")
    dates = c6.date_input("Created between", value=(), key="admin_f_dates")
    sort_by = c7.selectbox("Sort by", list(SORTS), format_func=SORTS.get, key="admin_f_sort")
    descending = c8.toggle("Newest/highest first", key="admin_f_desc")
    page_size = 25
    page_no = int(state.get("admin_page", 0))
    created_from = admin.day_start(dates[0]) if len(dates) >= 1 else None
    created_to = admin.day_start(dates[1]) + timedelta(days=1) if len(dates) == 2 else None
    filters = admin.BrowseFilters(
        user_id=user_filter or None, memory_types=tuple(type_filter), statuses=tuple(status_filter),
        min_importance=imp_low if imp_low > 1 else None, max_importance=imp_high if imp_high < 5 else None,
        created_from=created_from, created_to=created_to, text=text_filter, sort_by=sort_by,
        descending=descending, page=page_no, page_size=page_size)
    page = admin.browse(principal, engine, filters)
    pages = max(1, -(-page.total // page_size))
    if page_no >= pages:
        state["admin_page"] = page_no = 0
        page = admin.browse(principal, engine, admin.BrowseFilters(**{**filters.__dict__, "page": 0}))
    admin_filters.save()  # the URL now says what is shown: a reload or a shared link opens the same view
    if not page.items:
        st.info("No memories match these filters." if user_list else
                "No memories stored yet. Chat, load the demo data on the home page, or import a file.")
    else:
        table([{
            "created": fmt(r.created_at), "user": r.user_id, "memory": r.content, "type": r.memory_type.value,
            "importance": r.importance, "status": r.status.value, "expires": admin.expiry_label(engine, r),
            "used": r.access_count, "id": r.memory_id} for r in page.items],
            hide_index=True, width="stretch")
        p1, p2, p3 = st.columns([1, 2, 1])
        if p1.button("◀ Previous", disabled=page_no == 0, key="admin_prev"):
            state["admin_page"] = page_no - 1
            st.rerun()
        p2.caption(f"Page {page_no + 1} of {pages} · {page.total} memor{'y' if page.total == 1 else 'ies'}")
        if p3.button("Next ▶", disabled=page_no + 1 >= pages, key="admin_next"):
            state["admin_page"] = page_no + 1
            st.rerun()

        ids = [r.memory_id for r in page.items]
        labels = {r.memory_id: f"{r.user_id} · {r.content[:70]}" for r in page.items}
        selected = st.selectbox("Open a memory", ids, format_func=labels.get, key="admin_selected")
        record = admin.get_memory(principal, engine, selected)
        st.subheader("Memory")
        told = admin.told_time_label(record)
        st.caption(f"`{record.memory_id}` · user **{md(record.user_id)}** · status **{record.status.value}** · "
                   f"created {fmt(record.created_at)} · updated {fmt(record.updated_at)}"
                   + (f" · tells of {told}" if told else ""))
        # Outside the form, so ticking it disables the date at once (a form reruns only on submit);
        # it is saved with the form.
        never = st.checkbox("Never expires", value=record.expires_at is None, key=f"admin_never_{record.memory_id}",
                            help="Saved with the changes below.")
        with st.form(f"admin_edit_{record.memory_id}"):
            content = st.text_area("Content", record.content, key=f"admin_content_{record.memory_id}")
            e1, e2, e3 = st.columns(3)
            importance = e1.slider("Importance", 1, 5, record.importance, key=f"admin_imp_{record.memory_id}")
            memory_type = e2.selectbox("Type", TYPES, index=TYPES.index(record.memory_type.value),
                                       key=f"admin_type_{record.memory_id}")
            default_day = (record.expires_at or datetime.now(timezone.utc) + timedelta(days=180)).date()
            fades = engine.fades(record)
            expiry_day = e3.date_input(
                "Fades on" if fades else "Expires on", value=default_day, key=f"admin_exp_{record.memory_id}",
                disabled=never, help=("At this importance a memory fades on its date: it stays searchable and "
                                      "comes back when relevant only. To take it out of retrieval now, "
                                      "use Expire." if fades else "On this day it leaves retrieval."))
            saved = st.form_submit_button("Save changes", type="primary")
        if saved:
            # The expiry is sent only when the checkbox or the day was changed: re-sending the
            # shown day (as midnight) would move the expiry earlier on every save and stop an
            # importance change from recomputing it.
            current_day = record.expires_at.date() if record.expires_at is not None else None
            expiry: dict[str, Any] = {}
            if never and current_day is not None:
                expiry["expires_at"] = None
            elif not never and expiry_day != current_day:
                expiry["expires_at"] = admin.day_start(expiry_day)
            try:
                admin.edit_memory(principal, engine, record.memory_id, content=content, importance=int(importance),
                                  memory_type=memory_type, **expiry)
                st.toast("Saved; the memory was re-indexed.")
                st.rerun()
            except Exception as exc:
                st.error(f"Could not save: {md(exc)}")

        a1, a2, a3 = st.columns(3)
        if record.status.value == "active":
            if a1.button("Expire", key="admin_expire"):
                state["admin_confirm_expire"] = record.memory_id
            if state.get("admin_confirm_expire") == record.memory_id:
                st.warning("Expire this memory? It stops being used in replies at once (Restore brings it back).")
                y, n, _ = st.columns([1, 1, 4])
                if y.button("Yes, expire it", key="admin_expire_yes", type="primary"):
                    state.pop("admin_confirm_expire", None)
                    admin.expire_memory(principal, engine, record.memory_id)
                    st.toast("Expired.")
                    st.rerun()
                if n.button("Cancel", key="admin_expire_no"):
                    state.pop("admin_confirm_expire", None)
                    st.rerun()
        elif a1.button("Restore", key="admin_restore"):
            admin.restore_memory(principal, engine, record.memory_id)
            st.rerun()
        confirm_delete = a2.checkbox("Confirm permanent delete", key=f"admin_confirm_del_{record.memory_id}")
        if a3.button("Delete permanently", key="admin_delete", disabled=not confirm_delete, type="secondary"):
            admin.delete_memory(principal, engine, record.memory_id)
            st.toast("Deleted.")
            st.rerun()

        h_col, p_col = st.columns([3, 2])
        with h_col:
            st.markdown("**History**")
            entries = admin.history(principal, engine, record.memory_id)
            linked = admin.linked_memories(principal, engine, record.memory_id, entries)  # ids -> their texts
            for entry in entries:
                changes = admin.diff(entry.before, entry.after)
                st.markdown(f"`{fmt(entry.at)}` **{md(entry.action)}** by {md_code(entry.actor)}"
                            + (f" — {md(entry.note)}" if entry.note else ""))
                if changes and entry.action not in ("create",):
                    table([{"field": c.field, "before": admin.change_text(c.field, c.before, linked),
                            "after": admin.change_text(c.field, c.after, linked)} for c in changes],
                          hide_index=True, width="stretch")
        with p_col:
            st.markdown("**Provenance** (the messages it came from)")
            sources = admin.provenance(principal, engine, record.memory_id)
            if not sources:
                st.caption("No source message recorded (imported, seeded without messages, or erased).")
            for message in sources:  # the user's words: shown as plain text, never as Markdown
                st.caption(f"{fmt(message['created_at'])} · {md(message['role'])} in session "
                           f"{md_code(message['session_id'])}")
                st.text(message["content"])
            if record.context:
                st.markdown("**Answered** (indexed with the memory, not part of it)")
                st.text(record.context)

# ---- users: merges, erasure, export --------------------------------------------------------------------
with tab_users:
    user_list = admin.users(principal, engine)
    if not user_list:
        st.info("No users with memories yet.")
    else:
        table(user_list, columns=["user", "active memories"], hide_index=True)
        target = st.selectbox("User", [u for u, _ in user_list], key="admin_user_target")
        st.markdown("#### Merge redundant memories")
        if st.button("Preview merges", key="admin_merge_preview"):
            state["admin_merge_plan"] = (target, admin.merge_preview(principal, engine, target))
        plan_entry = state.get("admin_merge_plan")
        if plan_entry and plan_entry[0] == target:
            plan = plan_entry[1]
            (st.info if plan.available else st.warning)(plan.message)
            for proposal in plan.proposals:  # memory text as plain text, never as Markdown
                st.text("→ " + str(getattr(proposal, "merged_text", ""))
                        + "".join(f"\n  - {plan.contents.get(mid, mid)}" for mid in getattr(proposal, "memory_ids", [])))
                if getattr(proposal, "reason", ""):
                    st.caption(md(proposal.reason))
            if plan.available and plan.proposals and st.button("Apply these merges", key="admin_merge_apply"):
                outcome = admin.merge_apply(principal, engine, plan.proposals)
                state.pop("admin_merge_plan", None)  # applied or stale: either way preview again
                if outcome.applied:
                    st.success(f"Applied {len(outcome.applied)} merge(s).")
                for failure in outcome.failed:
                    st.warning(f"Not merged — {md(getattr(failure.proposal, 'merged_text', '') or 'a proposal')}: "
                               f"{md(failure.reason)}")
                if outcome.failed:
                    st.info("Preview again to see what can still be merged.")

        st.markdown("#### Recent history of this user")
        entries = admin.user_history(principal, engine, target, limit=50)
        table([{"at": fmt(e.at), "action": e.action, "actor": e.actor,
                "memory": str(((e.after or e.before) or {}).get("content") or "(content erased)"),
                "note": e.note, "id": e.memory_id} for e in entries], hide_index=True, width="stretch")

        st.markdown("#### Erasure request")
        st.warning(f"Hard-deletes every memory and message of **{md(target)}** and erases their content from the "
                   "history. This cannot be undone.")
        typed = st.text_input("Type the user id to confirm", key="admin_erase_confirm")
        if st.button("Erase all of this user's data", key="admin_erase", disabled=typed != target):
            removed = admin.erase_user(principal, engine, target, typed)
            st.success(f"Erased {removed} memories of {md(target)}.")

# ---- maintenance and scheduler -------------------------------------------------------------------------
with tab_ops:
    maintenance_tab(principal, engine)

# ---- import / export ---------------------------------------------------------------------------------------
with tab_io:
    st.markdown("#### Bulk import")
    st.caption("JSON lines (one object per line) or CSV with a header. Fields: `user_id`, `content`, optional "
               "`at` (ISO date), `session_id`, `importance` (1-5).")
    upload = st.file_uploader("File", type=["jsonl", "json", "csv"], key="admin_upload")
    if upload is not None and st.button("Import", key="admin_import"):
        try:
            rows, errors = admin.parse_import(upload.getvalue(), upload.name, engine.settings.max_input_chars)
        except admin.ValidationError as exc:  # not UTF-8: nothing was read
            st.error(f"Could not import {md(upload.name)}: {md(exc)}")
        else:
            bar = st.progress(0.0, text=f"Importing {len(rows)} rows…")
            report = admin.import_rows(principal, engine, rows,
                                       progress=lambda done, total: bar.progress(done / max(total, 1)))
            all_errors = errors + report.errors
            st.success(f"Imported {report.rows} rows: {report.created} memories created, "
                       f"{report.deduplicated} merged into existing ones."
                       + (" Some rows were not imported, see below." if all_errors else ""))
            for error in all_errors[:20]:
                st.warning(md(error))
            if len(all_errors) > 20:
                st.caption(f"…and {len(all_errors) - 20} more.")
    st.markdown("#### Export a user's memories")
    export_users = [u for u, _ in admin.users(principal, engine)]
    if export_users:
        who = st.selectbox("User", export_users, key="admin_export_user")
        st.download_button("Download JSON lines", data="".join(admin.export_user_jsonl(principal, engine, who)),
                           file_name=f"memories-{who}.jsonl", mime="application/jsonl", key="admin_export")
    else:
        st.caption("Nothing to export yet.")

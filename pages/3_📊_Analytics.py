"""Analytics (staff and analysts): what is stored, how it grows and expires, retrieval speed,
cache use and the scheduler's runs."""
from __future__ import annotations

import streamlit as st

from services import analytics
from ui.common import database_or_stop, engine_or_stop, friendly_errors, require_principal

st.set_page_config(page_title="Analytics · Long-term memory", page_icon="📊", layout="wide")
friendly_errors()  # no traceback is ever shown: a reference id, and the traceback in the log
principal = require_principal()
if not principal.can_view_analytics:
    st.error("🚫 Analytics is for support staff and analysts.")
    st.stop()
engine = engine_or_stop()
database_or_stop(engine)
engine.flush()  # latency rows are written in the background: include the latest searches

st.title("📊 Analytics")
numbers = analytics.summary(principal, engine)
k1, k2, k3, k4, k5 = st.columns(5)
k1.metric("Active memories", f"{numbers['memories_active']:,}",
          help=f"{numbers['memories_total']:,} in all statuses; {numbers['memories_faded']:,} of the active ones have "
               "faded (past their date: kept, and recalled only when clearly relevant)")
k2.metric("Users", f"{numbers['users']:,}")
k3.metric("Searches", f"{numbers['searches']:,}")
k4.metric("Cache hit rate", "—" if numbers["cache_hit_rate"] is None else f"{numbers['cache_hit_rate']:.0%}",
          help=f"{numbers['cache_hits']:,} of {numbers['searches']:,} searches answered from the cache")
k5.metric("Retrieval p95", "—" if numbers["p95_ms"] is None else f"{numbers['p95_ms']:.0f} ms")

charts = analytics.charts(principal, engine)
for left, right in zip(charts[0::2], charts[1::2] + [None]):
    columns = st.columns(2)
    for column, chart in zip(columns, (left, right)):
        if chart is None:
            continue
        with column:
            st.subheader(chart.title)
            if chart.figure is None:
                st.info(chart.empty_reason)
            else:
                st.plotly_chart(chart.figure, width="stretch", key=f"chart_{chart.key}",
                                config={"displaylogo": False})

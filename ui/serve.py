"""Start the Streamlit app with the memory engine warming up from the first second.

``streamlit run app.py`` runs no code of ours until the first browser asks for a page, so the
first visitor used to wait while the embedding model, jieba's dictionary and Milvus Lite loaded.
This starts that warm-up (``services.runtime.start_warm_up``, a background thread) and then
hands over to Streamlit's own command line in the same process: the pages find the engine
opening, or open, in ``services.runtime`` (one module, one engine per process).

    python -m ui.serve app.py --server.address 127.0.0.1 ...   # the arguments of `streamlit run`

``scripts/start-app.sh`` and the Dockerfile start the app this way.
"""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # Streamlit and what the home page imports, imported here before the warm-up thread starts:
    # two threads importing one package tree at once can meet a half-initialised module (plotly
    # reading pandas while another thread is still importing it), and the first page then needs
    # no import of its own.
    from streamlit.web import cli

    import services.demo_data  # noqa: F401
    import ui.common  # noqa: F401
    from services import runtime

    runtime.start_warm_up()
    sys.argv = ["streamlit", "run", *args]
    return int(cli.main() or 0)


if __name__ == "__main__":
    sys.exit(main())

"""``python -m api``: serve the HTTP API on the engine configured by the environment (the same
``DATABASE_URL``, ``MILVUS_URI``, ``REDIS_URL`` and models as the app).

One process serves one engine (uvicorn, one worker): embedded Milvus Lite admits a single
process per store, so with the embedded defaults stop the Streamlit app or give the API its own
``DATA_DIR``. With a Milvus server, run as many API processes as you like behind a proxy: keys
and the rate limit live in SQL/Redis and are shared.
"""
from __future__ import annotations

import argparse


def main(argv: list[str] | None = None) -> int:
    import uvicorn

    from api.app import create_app
    from api.settings import ApiSettings
    from services import runtime

    settings = ApiSettings()
    parser = argparse.ArgumentParser(prog="python -m api", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default=settings.api_host)
    parser.add_argument("--port", type=int, default=settings.api_port)
    args = parser.parse_args(argv)
    engine = runtime.get_engine()  # configures JSON logging, opens and warms the engine
    try:
        uvicorn.run(create_app(engine, settings=settings), host=args.host, port=args.port, log_config=None,
                    access_log=False, timeout_graceful_shutdown=10)
    finally:
        runtime.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

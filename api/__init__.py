"""The memory as a service: an HTTP API (FastAPI on uvicorn) and an MCP server.

Both sit at the services layer: they call the engine facade (``memory_core.MemoryEngine``) and
``services`` helpers, never the storage below it. Tenants and their keys live in ``keys`` and
``tenancy``; ``app.create_app`` builds the HTTP application around an engine; ``python -m api``
serves it; ``python -m api.mcp_server`` serves the MCP tools. See docs/api.md.
"""

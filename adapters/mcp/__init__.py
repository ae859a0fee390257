"""Adapters layer (MCP): memory served to MCP clients (desktop and IDE agents) over stdio or
streamable HTTP, on the official ``mcp`` SDK (the 'server' extra; ARCHITECTURE.md D46)."""

from .schema import IDENTITY_FIELDS, json_keys, request_schema
from .server import (
    CARD_RESOURCE,
    MCP_PATH,
    SUMMARY_RESOURCE,
    TOOL_REQUESTS,
    ApiKeyVerifier,
    KeyAccessToken,
    create_http_app,
    create_server,
    serve_http,
    serve_stdio,
)

__all__ = [
    "CARD_RESOURCE",
    "IDENTITY_FIELDS",
    "MCP_PATH",
    "SUMMARY_RESOURCE",
    "TOOL_REQUESTS",
    "ApiKeyVerifier",
    "KeyAccessToken",
    "create_http_app",
    "create_server",
    "json_keys",
    "request_schema",
    "serve_http",
    "serve_stdio",
]

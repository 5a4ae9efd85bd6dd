"""The REST API (FastAPI, OpenAPI at /docs and /openapi.json) and its server thread."""

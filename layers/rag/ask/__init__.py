"""Answers with citations (``POST /v1/ask``) and the tools behind them (also served over MCP)."""

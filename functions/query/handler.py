"""Query Lambda: the HTTP API: search and context; projects, meetings, tasks, documents, a project's changes and
brief; /v1/ask and its tools (/v1/tools); the same tools over MCP (/mcp); the OpenAPI document.

Thin by design: routes and models live in ``rag.api``; the search in ``rag.search``.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from rag.api.ask_metrics import take_answer_metrics
from rag.api.routes import handle
from rag.search.rerank import take_fallbacks
from rag.store.replica import take_reader_fallbacks
from rag.tracing import lambda_tracer

logger = Logger(service="query")
tracer = lambda_tracer("query")  # libraries patched as they are imported: rag.tracing
metrics = Metrics(namespace="MeetingRag", service="query")


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    response = handle(event, context)
    metrics.add_metric(name="Requests", unit="Count", value=1)
    if response.get("statusCode", 500) >= 500:
        metrics.add_metric(name="ServerErrors", unit="Count", value=1)
    if fallbacks := take_fallbacks():  # searches whose reranker failed and kept the fused order
        metrics.add_metric(name="RerankFallbacks", unit="Count", value=fallbacks)
    for name, unit, value in take_answer_metrics():  # the answers /v1/ask gave
        metrics.add_metric(name=name, unit=unit, value=value)
    if passed_over := take_reader_fallbacks():  # reads a configured reader did not serve (lagging, down)
        metrics.add_metric(name="ReaderFallbacks", unit="Count", value=passed_over)
    return response

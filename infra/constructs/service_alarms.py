"""The alarms of what serves requests: each Lambda's errors and throttles, each API's 5xx and p95 latency."""

from __future__ import annotations

from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_lambda as lambda_

from infra.config import StageConfig
from infra.constructs.alarms import PERIOD, AlarmSet, runbook


def lambda_alarms(alarms: AlarmSet, functions: dict[str, lambda_.IFunction]) -> None:
    for name, function in functions.items():
        logs_of = f"aws logs tail /aws/lambda/{function.function_name} --since 1h --filter-pattern ERROR"
        alarms.add(
            f"{name}Errors",
            function.metric_errors(period=PERIOD),
            1,
            runbook(f"{name} Lambda raised errors.", f"1) Find the error: {logs_of}", "2) Fix the cause."),
        )
        alarms.add(
            f"{name}Throttles",
            function.metric_throttles(period=PERIOD),
            1,
            runbook(
                f"{name} Lambda was throttled: refused for concurrency.",
                "1) Check its reserved concurrency against its load (infra/README.md, 'Capacity').",
            ),
        )


def api_alarms(
    alarms: AlarmSet, config: StageConfig, apis: dict[str, apigwv2.HttpApi], functions: dict[str, lambda_.IFunction]
) -> tuple[list[cw.IMetric], list[cw.IMetric]]:
    """Each API's 5xx and p95 latency alarms; the metrics (latency, errors) for the dashboard."""
    latency_metrics: list[cw.IMetric] = []
    error_metrics: list[cw.IMetric] = []
    for name, api in apis.items():
        errors = api.metric_server_error(period=PERIOD)
        latency = api.metric_latency(period=PERIOD, statistic="p95")
        query = functions.get("Query")
        query_logs = f"aws logs tail /aws/lambda/{query.function_name if query else '<query function>'} --since 1h"
        alarms.add(
            f"{name}ServerErrors",
            errors,
            1,
            runbook(f"{name} answered 5xx.", f"1) Find the error: {query_logs}", "2) Check the database alarms."),
        )
        alarms.add(
            f"{name}LatencyP95",
            latency,
            config.api_p95_latency_ms,
            runbook(
                f"{name} p95 latency over {config.api_p95_latency_ms} ms for 15 minutes.",
                "1) Check DatabaseCpu and ProxyBorrowLatency, then the query function's duration on the dashboard.",
            ),
            periods=3,
        )
        latency_metrics.append(latency)
        error_metrics.append(errors)
    return latency_metrics, error_metrics

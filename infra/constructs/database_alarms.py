"""The RDS instance's alarms: CPU, free storage, connections against max_connections, and the RDS Proxy's borrow latency
(Aurora's: aurora_alarms.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_rds as rds
from aws_cdk import aws_stepfunctions as sfn

from infra.config import StageConfig
from infra.constructs.alarms import PERIOD, AlarmSet, runbook

# Thresholds (infra/README.md, "When an alarm fires", says why each).
DB_CPU_PERCENT = 80  # average over 3 x 5 min
DB_FREE_STORAGE_FRACTION = 0.10  # of the initial allocation: storage autoscaling acts at 10% of the current one
DB_CONNECTIONS_FRACTION = 0.80  # of max_connections (the parameter group's db_max_connections)
PROXY_BORROW_LATENCY_US = 50_000  # 50 ms average over 3 x 5 min; a free pooled connection is borrowed in well under 1 ms


@dataclass(frozen=True)
class DatabaseAlarms:
    alarms: dict[str, cw.Alarm]  # by name (Monitoring/<name>)
    graphs: tuple[tuple[str, list[cw.IMetric]], ...]  # the dashboard's database row: (title, metrics)
    borrow_latency: cw.IMetric  # the proxy's, graphed beside the queues


def database_alarms(
    alarms: AlarmSet,
    config: StageConfig,
    db_instance: rds.IDatabaseInstance,
    db_proxy: rds.IDatabaseProxy,
    state_machine: sfn.IStateMachine,
) -> DatabaseAlarms:
    """The database's and the proxy's alarms (the CPU runbook stops the backfill: ``state_machine``)."""
    instance = db_instance.instance_identifier
    db_cpu = db_instance.metric_cpu_utilization(period=PERIOD, statistic="Average")
    cpu = alarms.add(
        "DatabaseCpu",
        db_cpu,
        DB_CPU_PERCENT,
        runbook(
            f"The database's CPU has been at {DB_CPU_PERCENT}% or more for 15 min: queries slow down, API latency follows.",
            "1) What runs (as rag_admin): SELECT pid, usename, now() - query_start AS age, left(query, 80) FROM"
            " pg_stat_activity WHERE state <> 'idle' ORDER BY age DESC;",
            "2) A backfill or bulk ingest ends by itself; to shed load now stop the backfill: aws stepfunctions"
            f" list-executions --state-machine-arn {state_machine.state_machine_arn} --status-filter RUNNING, then"
            " stop-execution --execution-arn <arn> (its batch rolls back).",
            "3) Steady load: a larger class, cdk deploy -c db_instance_class=<class>.",
        ),
        periods=3,
    )
    free_storage_bytes = math.floor(DB_FREE_STORAGE_FRACTION * config.db_allocated_storage_gb * 2**30)
    db_storage = db_instance.metric_free_storage_space(period=PERIOD, statistic="Minimum")
    storage = alarms.add(
        "DatabaseFreeStorage",
        db_storage,
        free_storage_bytes,
        runbook(
            f"Less than {free_storage_bytes / 2**30:g} GiB of database storage is free: at 0 writes fail (ingest,"
            " backfill, then the DLQ fills).",
            f"Storage grows by itself up to db_max_allocated_storage_gb ({config.db_max_allocated_storage_gb} GiB),"
            " at most once every 6 hours.",
            "1) What is large: SELECT relname, pg_size_pretty(pg_total_relation_size(oid)) FROM pg_class ORDER BY"
            " pg_total_relation_size(oid) DESC LIMIT 10; many dead rows: VACUUM (ANALYZE) that table.",
            "2) More now: aws rds modify-db-instance --db-instance-identifier"
            f" {instance} --allocated-storage <GiB> --apply-immediately; for good: -c db_max_allocated_storage_gb=<GiB>.",
        ),
        comparison=cw.ComparisonOperator.LESS_THAN_THRESHOLD,
    )
    connections_threshold = math.ceil(DB_CONNECTIONS_FRACTION * config.db_max_connections)
    db_connections = db_instance.metric_database_connections(period=PERIOD, statistic="Maximum")
    connections = alarms.add(
        "DatabaseConnections",
        db_connections,
        connections_threshold,
        runbook(
            f"{connections_threshold} or more of the database's max_connections ({config.db_max_connections}) are in"
            " use: near the limit new connections (the proxy's, the migrator, a rotation, an operator) are refused.",
            f"The proxy may open {config.db_proxy_max_connections_percent}% of them; the rest is admin headroom.",
            "1) Who holds them: SELECT usename, application_name, state, count(*) FROM pg_stat_activity GROUP BY 1, 2, 3"
            " ORDER BY 4 DESC;",
            "2) Sessions left open outside the proxy (not rag_app): SELECT pg_terminate_backend(<pid>);",
            "3) Steady demand: a larger class with a higher db_max_connections (infra/README.md, 'Capacity').",
        ),
        periods=2,
    )
    proxy_latency, borrow_latency = proxy_borrow_latency_alarm(alarms, db_proxy)
    return DatabaseAlarms(
        {"DatabaseCpu": cpu, "DatabaseFreeStorage": storage, "DatabaseConnections": connections,
         "ProxyBorrowLatency": proxy_latency},
        (("Database CPU (%)", [db_cpu]), ("Database connections", [db_connections]),
         ("Database free storage (bytes)", [db_storage])),
        borrow_latency,
    )  # fmt: skip


def proxy_borrow_latency_alarm(alarms: AlarmSet, db_proxy: rds.IDatabaseProxy) -> tuple[cw.Alarm, cw.IMetric]:
    """The RDS Proxy's borrow latency: its pool full or pinned."""
    proxy = db_proxy.db_proxy_name
    borrow_latency = cw.Metric(
        namespace="AWS/RDS",
        metric_name="DatabaseConnectionsBorrowLatency",
        dimensions_map={"ProxyName": proxy},
        period=PERIOD,
        statistic="Average",
    )
    created = alarms.add(
        "ProxyBorrowLatency",
        borrow_latency,
        PROXY_BORROW_LATENCY_US,
        runbook(
            f"Borrowing a connection from the RDS Proxy takes {PROXY_BORROW_LATENCY_US // 1000} ms or more on average"
            " (15 min): its pool is full or pinned; callers wait up to the borrow timeout (120 s), then fail.",
            f"1) CloudWatch AWS/RDS, ProxyName={proxy}: DatabaseConnectionsCurrentlyBorrowed against"
            " MaxDatabaseConnectionsAllowed (full?), DatabaseConnectionsCurrentlySessionPinned (pinned?).",
            "2) Full: which function holds them (Lambda ConcurrentExecutions); lower its reserved concurrency or"
            " raise db_max_connections (infra/README.md, 'Capacity').",
            "3) Database CPU alarm too: slow queries hold connections longer; fix that first.",
        ),
        periods=3,
    )
    return created, borrow_latency

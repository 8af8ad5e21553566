"""Aurora's alarms (``-c database=aurora``): the RDS instance's alarms mapped to Aurora's metrics, per role.

CPU and connections of the writer and of the readers (AWS/RDS with dimensions DBClusterIdentifier and Role), free
memory, capacity used against the maximum ACU, the readers' replica lag, and the proxy's borrow latency. No storage
alarm: the cluster volume grows by itself and has no allocation to run out of (infra/README.md, "Aurora").
"""

from __future__ import annotations

import math

from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_rds as rds
from aws_cdk import aws_stepfunctions as sfn

from infra.config import StageConfig
from infra.constructs.alarms import PERIOD, AlarmSet, runbook
from infra.constructs.database_alarms import (
    DB_CONNECTIONS_FRACTION,
    DB_CPU_PERCENT,
    DatabaseAlarms,
    proxy_borrow_latency_alarm,
)
from infra.db_capacity import ACU_MEMORY_GIB

ROLES = ("WRITER", "READER")
ACU_UTILIZATION_PERCENT = 90  # of aurora_max_acu, average over 3 x 5 min: at the ceiling, queries queue
FREEABLE_MEMORY_FRACTION = 0.10  # of the memory at the maximum ACU (Serverless v2 reports it against the maximum)
# The reader bound rag.store.replica keeps on a streaming replica (RAG_DATABASE_READER_MAX_LAG_SECONDS); on Aurora it
# cannot measure the lag itself, so this alarm watches it.
REPLICA_LAG_MS = 5_000


def aurora_alarms(
    alarms: AlarmSet,
    config: StageConfig,
    cluster: rds.IDatabaseCluster,
    db_proxy: rds.IDatabaseProxy,
    state_machine: sfn.IStateMachine,
) -> DatabaseAlarms:
    """Per role (the writer; the readers, where there are some): CPU, connections, memory, capacity; the readers' lag."""
    roles = ROLES if config.aurora_readers else ROLES[:1]
    created: dict[str, cw.Alarm] = {}
    graphs: dict[str, list[cw.IMetric]] = {}
    for role in roles:
        for name, (title, alarm) in _role_alarms(alarms, config, cluster, role, state_machine).items():
            created[name] = alarm
            graphs.setdefault(title, []).append(alarm.metric)
    if config.aurora_readers:
        lag = _metric(cluster, "AuroraReplicaLag", "READER", "Maximum")
        created["AuroraReplicaLag"] = alarms.add(
            "AuroraReplicaLag",
            lag,
            REPLICA_LAG_MS,
            runbook(
                f"A reader has been {REPLICA_LAG_MS / 1000:g} s or more behind the writer for 10 min: searches read"
                " through the proxy's read-only endpoint see older data (ingest status and listings read the writer).",
                "1) Aurora readers read the writer's storage; lag grows with a writer that writes faster than a reader"
                " applies (a bulk ingest, a backfill, an index build) or a reader at its maximum ACU (AuroraReaderCapacity).",
                "2) Reads only tolerate seconds: until it falls, cdk deploy -c aurora_readers=0 sends every read to the"
                " writer, or raise aurora_max_acu.",
            ),
            periods=2,
        )
        graphs["Aurora replica lag (ms)"] = [lag]
    proxy_latency, borrow_latency = proxy_borrow_latency_alarm(alarms, db_proxy)
    created["ProxyBorrowLatency"] = proxy_latency
    return DatabaseAlarms(created, tuple(graphs.items()), borrow_latency)


def _metric(cluster: rds.IDatabaseCluster, name: str, role: str, statistic: str) -> cw.Metric:
    return cw.Metric(
        namespace="AWS/RDS",
        metric_name=name,
        dimensions_map={"DBClusterIdentifier": cluster.cluster_identifier, "Role": role},
        period=PERIOD,
        statistic=statistic,
    )


def _role_alarms(
    alarms: AlarmSet, config: StageConfig, cluster: rds.IDatabaseCluster, role: str, state_machine: sfn.IStateMachine
) -> dict[str, tuple[str, cw.Alarm]]:
    """The alarms of one role, by name, each with the title of the dashboard graph its metric goes to."""
    who = "the writer" if role == "WRITER" else "the readers"
    prefix = f"Aurora{role.capitalize()}"
    connections = math.ceil(DB_CONNECTIONS_FRACTION * config.db_max_connections)
    memory_bytes = math.floor(FREEABLE_MEMORY_FRACTION * config.aurora_max_acu * ACU_MEMORY_GIB * 2**30)
    shed = (
        "stop the backfill: aws stepfunctions list-executions --state-machine-arn"
        f" {state_machine.state_machine_arn} --status-filter RUNNING, then stop-execution --execution-arn <arn>"
    )
    return {
        f"{prefix}Cpu": ("Database CPU (%)", alarms.add(
            f"{prefix}Cpu", _metric(cluster, "CPUUtilization", role, "Average"), DB_CPU_PERCENT,
            runbook(
                f"The CPU of {who} has been at {DB_CPU_PERCENT}% or more for 15 min: queries slow down.",
                "1) What runs (as rag_admin): SELECT pid, now() - query_start AS age, left(query, 80) FROM"
                " pg_stat_activity WHERE state <> 'idle' ORDER BY age DESC;",
                f"2) A backfill or bulk ingest ends by itself; to shed load now {shed}.",
                f"3) {prefix}Capacity at its maximum too: cdk deploy -c aurora_max_acu=<ACU>.",
            ),
            periods=3,
        )),
        f"{prefix}Connections": ("Database connections", alarms.add(
            f"{prefix}Connections", _metric(cluster, "DatabaseConnections", role, "Maximum"), connections,
            runbook(
                f"{connections} or more of max_connections ({config.db_max_connections}) are in use on {who}: near"
                " the limit the proxy, the migrator, a rotation or an operator cannot connect.",
                "1) Who: SELECT usename, application_name, state, count(*) FROM pg_stat_activity GROUP BY 1, 2, 3"
                " ORDER BY 4 DESC;",
                "2) Sessions outside the proxy (not rag_app): SELECT pg_terminate_backend(<pid>);",
                "3) Steady demand: a higher aurora_max_acu and db_max_connections (infra/README.md, 'Capacity').",
            ),
            periods=2,
        )),
        f"{prefix}Memory": ("Aurora freeable memory (bytes)", alarms.add(
            f"{prefix}Memory", _metric(cluster, "FreeableMemory", role, "Minimum"), memory_bytes,
            runbook(
                f"Less than {memory_bytes / 2**30:.2g} GiB of {who}' memory at the maximum ACU is free: the HNSW"
                " indexes no longer fit, searches read from storage and slow down.",
                "1) Index sizes: SELECT relname, pg_size_pretty(pg_relation_size(oid)) FROM pg_class WHERE relkind"
                " = 'i' ORDER BY pg_relation_size(oid) DESC LIMIT 10;",
                "2) More memory: cdk deploy -c aurora_max_acu=<ACU> (2 GiB per ACU).",
            ),
            comparison=cw.ComparisonOperator.LESS_THAN_THRESHOLD,
            periods=3,
        )),
        f"{prefix}Capacity": ("Aurora capacity used (% of aurora_max_acu)", alarms.add(
            f"{prefix}Capacity", _metric(cluster, "ACUUtilization", role, "Average"), ACU_UTILIZATION_PERCENT,
            runbook(
                f"{who.capitalize()} ran at {ACU_UTILIZATION_PERCENT}% or more of aurora_max_acu"
                f" ({config.aurora_max_acu:g} ACU) for 15 min: it cannot scale further and queries queue.",
                "1) ServerlessDatabaseCapacity (same dimensions): the ACUs in use; CPU and memory alarms: which limit.",
                f"2) A backfill or bulk ingest ends by itself; to shed load now {shed}.",
                "3) Steady load: cdk deploy -c aurora_max_acu=<ACU> (the bill follows the ACUs used).",
            ),
            periods=3,
        )),
    }  # fmt: skip

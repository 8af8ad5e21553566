"""How many connections the database takes, by engine, and Aurora Serverless v2's capacity range (infra/README.md,
"Capacity" and "Aurora")."""

from __future__ import annotations

from typing import Literal

# Which engine a stage deploys: an RDS for PostgreSQL instance, or an Aurora PostgreSQL Serverless v2 cluster.
DatabaseEngine = Literal["rds", "aurora"]

# RDS's and Aurora PostgreSQL's default max_connections: LEAST({DBInstanceClassMemory/9531392}, 5000).
RDS_MAX_CONNECTIONS_BYTES = 9_531_392
RDS_MAX_CONNECTIONS_CAP = 5000
# Nominal memory of instance classes (GiB). DBInstanceClassMemory is less (RDS keeps some for the OS and its agents),
# so the formula on the nominal memory is an upper bound on the real default.
DB_INSTANCE_MEMORY_GIB = {
    "t4g.micro": 1, "t4g.small": 2, "t4g.medium": 4, "t4g.large": 8, "t4g.xlarge": 16,
    "m7g.large": 8, "m7g.xlarge": 16, "m7g.2xlarge": 32, "r7g.large": 16, "r7g.xlarge": 32,
}  # fmt: skip

# Aurora Serverless v2: capacity in ACUs of about 2 GiB each, 0.5 steps; the maximum is at most 256 and above 0.5;
# a minimum of 0 pauses idle instances (auto-pause, Aurora PostgreSQL 16.3+/17.4+ and the like).
ACU_MEMORY_GIB = 2
ACU_STEP = 0.5
MAX_ACU = 256.0
# Aurora reader instances per cluster: at most 15 replicas.
AURORA_MAX_READERS = 15


def rds_default_max_connections(instance_class: str) -> int | None:
    """RDS's formula on the class's nominal memory (an upper bound of the real default), None for an unknown class."""
    gib = DB_INSTANCE_MEMORY_GIB.get(instance_class)
    return None if gib is None else min(gib * 2**30 // RDS_MAX_CONNECTIONS_BYTES, RDS_MAX_CONNECTIONS_CAP)


def aurora_default_max_connections(max_acu: float) -> int:
    """The same formula on a Serverless v2 instance's memory at its maximum capacity (max ACU x 2 GiB): Aurora sizes
    max_connections from the maximum, not the current, capacity. An upper bound, as for RDS."""
    return min(int(max_acu * ACU_MEMORY_GIB * 2**30) // RDS_MAX_CONNECTIONS_BYTES, RDS_MAX_CONNECTIONS_CAP)


def max_connections_ceiling(database: str, instance_class: str, max_acu: float) -> tuple[int, str]:
    """The highest db_max_connections the database can take, and what it is computed from (for the error)."""
    if database == "aurora":
        memory = f"{max_acu:g} ACU x {ACU_MEMORY_GIB} GiB"
        return aurora_default_max_connections(max_acu), f"Aurora Serverless v2 at aurora_max_acu {max_acu:g} ({memory})"
    ceiling = rds_default_max_connections(instance_class)
    return ceiling or RDS_MAX_CONNECTIONS_CAP, f"db.{instance_class}"


def _is_acu(value: float) -> bool:
    return isinstance(value, (int, float)) and float(value / ACU_STEP).is_integer()


def check_aurora(database: str, readers: int, min_acu: float, max_acu: float) -> None:
    """A ValueError naming the field and its valid range when the Aurora settings cannot be deployed."""
    if database not in ("rds", "aurora"):
        raise ValueError(f"database must be rds or aurora, not {database!r}")
    if not _is_acu(max_acu) or not ACU_STEP < max_acu <= MAX_ACU:
        raise ValueError(f"aurora_max_acu must be within 1..{MAX_ACU:g} in steps of {ACU_STEP}, not {max_acu!r}")
    if not _is_acu(min_acu) or not (min_acu == 0 or ACU_STEP <= min_acu <= max_acu):
        raise ValueError(
            f"aurora_min_acu must be 0 (auto-pause) or within {ACU_STEP}..aurora_max_acu ({max_acu:g}) in steps of "
            f"{ACU_STEP}, not {min_acu!r}"
        )
    if not isinstance(readers, int) or not 0 <= readers <= AURORA_MAX_READERS:
        raise ValueError(f"aurora_readers must be within 0..{AURORA_MAX_READERS}, not {readers!r}")

"""Reserved concurrency against the database: every warm Lambda behind the proxy holds one connection, and their sum
fits the proxy's pool on each stage, with headroom left on the instance (infra/README.md, "Capacity")."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import DB_ADMIN_HEADROOM, LAMBDA_ACCOUNT_CONCURRENCY, LAMBDA_UNRESERVED_MINIMUM
from infra.db_capacity import rds_default_max_connections
from infra.stages import stage_config
from rag.store.connection import IAM_URL_ENV
from tests.infra.conftest import Synthesized


def proxy_functions(result: Synthesized) -> dict[str, dict[str, Any]]:
    """The functions that connect through the proxy (they get its IAM URL), by logical id."""
    return {
        name: function["Properties"]
        for name, function in result.resources("AWS::Lambda::Function").items()
        if IAM_URL_ENV in function["Properties"].get("Environment", {}).get("Variables", {})
    }


def reserved(result: Synthesized) -> dict[str, int]:
    return {name: props.get("ReservedConcurrentExecutions", 0) for name, props in proxy_functions(result).items()}


def proxy_budget(result: Synthesized) -> tuple[int, int]:
    """(the instance's max_connections, the proxy's pool) as the template sets them."""
    max_connections = int(result.resource("AWS::RDS::DBParameterGroup")["Properties"]["Parameters"]["max_connections"])
    target_group = result.resource("AWS::RDS::DBProxyTargetGroup")["Properties"]
    percent = target_group["ConnectionPoolConfigurationInfo"]["MaxConnectionsPercent"]
    return max_connections, max_connections * percent // 100


def test_every_function_behind_the_proxy_has_reserved_concurrency(stage: Synthesized) -> None:
    found = reserved(stage)
    assert len(found) == 5  # ingest, query, three backfill stages
    assert all(value >= 1 for value in found.values()), found
    by_prefix = {
        prefix: value for name, value in found.items() for prefix in ("Query", "Ingest", "Backfill") if name.startswith(prefix)
    }
    assert by_prefix["Query"] == stage.config.query_reserved_concurrency
    assert by_prefix["Ingest"] == stage.config.ingest_max_concurrency
    assert by_prefix["Backfill"] == stage.config.backfill_reserved_concurrency


def test_the_re_embed_function_connects_past_the_proxy_within_the_admin_headroom(stage: Synthesized) -> None:
    """It runs the owner's DDL (index builds, the column swap): direct connections, as the migrator's, counted in the
    headroom the proxy leaves, and bounded by its reserved concurrency."""
    functions = {
        name: props for name, props in stage.resources("AWS::Lambda::Function").items() if name.startswith("ReembedFunction")
    }
    assert len(functions) == stage.config.reembeds_on_bedrock
    for props in (p["Properties"] for p in functions.values()):
        assert props["ReservedConcurrentExecutions"] == stage.config.direct_connections == 2
    max_connections, budget = proxy_budget(stage)
    assert max_connections - budget >= DB_ADMIN_HEADROOM + stage.config.direct_connections


def test_reserved_concurrency_fits_the_proxy_connection_budget(stage: Synthesized) -> None:
    max_connections, budget = proxy_budget(stage)
    assert sum(reserved(stage).values()) <= budget
    assert sum(reserved(stage).values()) == stage.config.reserved_concurrency
    # What the proxy may not take stays for PostgreSQL's and RDS's superuser slots, the migrator, the rotations
    # and an operator.
    assert max_connections - budget >= DB_ADMIN_HEADROOM
    # max_connections is set, and no higher than RDS's own default for the class (LEAST(memory/9531392, 5000)).
    instance_class = stage.resource("AWS::RDS::DBInstance")["Properties"]["DBInstanceClass"].removeprefix("db.")
    assert max_connections <= rds_default_max_connections(instance_class)


def test_the_numbers_of_the_capacity_section(dev: Synthesized, prod: Synthesized) -> None:
    # db.t4g.micro: 1 GiB / 9531392 = 112 nominal, about 80 after RDS's own reservation; 80 x 80% = 64 for the proxy.
    assert rds_default_max_connections("t4g.micro") == 112
    assert proxy_budget(dev) == (80, 64)
    assert sum(reserved(dev).values()) == 40 + 5 + 3 * 3 == 54  # the re-embed function's 2 connect past the proxy
    assert rds_default_max_connections("m7g.large") == 901
    assert proxy_budget(prod) == (800, 640)
    assert sum(reserved(prod).values()) == 100 + 10 + 3 * 3 == 119


def test_ingest_reserves_exactly_what_its_event_source_may_run(stage: Synthesized) -> None:
    # AWS: an SQS event source's maximum concurrency must not exceed the function's reserved concurrency.
    (mapping,) = stage.resources("AWS::Lambda::EventSourceMapping").values()
    function = mapping["Properties"]["FunctionName"]["Ref"]
    assert reserved(stage)[function] == mapping["Properties"]["ScalingConfig"]["MaximumConcurrency"]


def test_both_stages_in_one_account_leave_lambdas_unreserved_minimum(dev: Synthesized, prod: Synthesized) -> None:
    # Lambda refuses a reservation that leaves less than 100 of the account's quota unreserved (default quota 1000).
    total = sum(reserved(dev).values()) + sum(reserved(prod).values())
    assert total <= LAMBDA_ACCOUNT_CONCURRENCY - LAMBDA_UNRESERVED_MINIMUM


@pytest.mark.parametrize(
    ("stage_name", "overrides", "message"),
    [
        ("dev", {"query_reserved_concurrency": "60"}, r"reserved concurrency 74 .* exceeds the proxy's 64 connections"),
        ("dev", {"ingest_max_concurrency": "30"}, "exceeds the proxy's 64"),
        ("dev", {"db_max_connections": "200"}, r"db_max_connections must be within 1..112 for db.t4g.micro"),
        ("dev", {"db_proxy_max_connections_percent": "95"}, r"leave fewer than 12 connections .* the re-embedding \(2\)"),
        ("prod", {"db_proxy_max_connections_percent": "99"}, "leave fewer than 10 connections"),
        ("dev", {"query_reserved_concurrency": "0"}, "query_reserved_concurrency must be at least 1"),
        ("dev", {"backfill_reserved_concurrency": "0"}, "backfill_reserved_concurrency must be at least 1"),
        (
            "prod",
            {"db_instance_class": "m7g.xlarge", "db_max_connections": "1500", "query_reserved_concurrency": "900"},
            "must leave Lambda's 100 unreserved of the default account quota 1000",
        ),
    ],
)
def test_configuration_beyond_the_database_is_refused_with_the_reason(
    stage_name: str, overrides: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        stage_config(stage_name, overrides)


def test_a_bigger_instance_takes_more_after_raising_its_max_connections() -> None:
    small = stage_config("dev")
    config = stage_config(
        "dev", {"db_instance_class": "t4g.small", "db_max_connections": "160", "query_reserved_concurrency": "100"}
    )
    assert config.proxy_connection_budget > small.proxy_connection_budget
    assert small.proxy_connection_budget < config.reserved_concurrency <= config.proxy_connection_budget
    assert config.db_max_connections - config.proxy_connection_budget >= DB_ADMIN_HEADROOM

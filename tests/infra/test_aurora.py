"""Aurora PostgreSQL Serverless v2 as the database (``-c database=aurora``), on synthesized templates: the cluster, the
proxy's read-only endpoint for the query function, the alarms mapped to Aurora's metrics, the capacity rule and the
refusal of capacity settings Aurora does not take; and the RDS stages as they were (infra/README.md, "Aurora")."""

from __future__ import annotations

import inspect
import json
import math
import re
from typing import Any

import pytest

from infra.config import DB_ADMIN_HEADROOM
from infra.constructs.aurora import AURORA_POSTGRES_VERSION
from infra.db_capacity import aurora_default_max_connections
from infra.stages import stage_config
from rag.store.connection import IAM_URL_ENV
from rag.store.migrations import MIN_VECTOR_VERSION
from tests.infra import (
    test_capacity,
    test_cfn_lint,
    test_connection_iam,
    test_monitoring,
    test_network,
    test_security,
    test_timeouts,
)
from tests.infra.conftest import Synthesized, resolve_strings, synthesize
from tests.infra.test_capacity import proxy_budget, reserved
from tests.infra.test_monitoring import alarm, alarms, logical_id, metric

READER_HOST_ENV = "RAG_DATABASE_READER_HOST"  # rag.settings_sections: Settings.database.reader_host
GIB = 2**30


def functions(result: Synthesized) -> dict[str, dict[str, str]]:
    """Each function's environment variables, by logical id."""
    return {
        name: props["Properties"].get("Environment", {}).get("Variables", {})
        for name, props in result.resources("AWS::Lambda::Function").items()
    }


def instances(result: Synthesized) -> dict[str, dict[str, Any]]:
    return {name: r["Properties"] for name, r in result.resources("AWS::RDS::DBInstance").items()}


# --- the cluster --------------------------------------------------------------------------------------------------


def test_the_cluster_is_aurora_postgresql_serverless_v2_encrypted_with_iam_auth_and_tls(aurora: Synthesized) -> None:
    cluster = aurora.resource("AWS::RDS::DBCluster")["Properties"]
    assert cluster["Engine"] == "aurora-postgresql"
    assert cluster["ServerlessV2ScalingConfiguration"] == {"MinCapacity": 0.5, "MaxCapacity": 4}
    assert cluster["StorageEncrypted"] is True and cluster["EnableIAMDatabaseAuthentication"] is True
    assert (cluster["DatabaseName"], cluster["MasterUsername"], cluster["Port"]) == ("rag", "rag_admin", 5433)
    assert cluster["BackupRetentionPeriod"] == 7 and cluster["EnableCloudwatchLogsExports"] == ["postgresql"]
    # Not in the template: the DeletionProtection custom resource sets it last (a failed first create can roll back).
    assert "DeletionProtection" not in cluster
    parameters = aurora.resource("AWS::RDS::DBClusterParameterGroup")["Properties"]
    assert parameters["Family"] == "aurora-postgresql17" and parameters["Parameters"]["rds.force_ssl"] == "1"
    assert {"Ref": logical_id(aurora, "AWS::RDS::DBClusterParameterGroup")} == cluster["DBClusterParameterGroupName"]
    assert {props["Engine"] for props in instances(aurora).values()} == {"aurora-postgresql"}  # no RDS instance


def test_the_engine_ships_pgvector_0_8(aurora: Synthesized) -> None:
    # Aurora PostgreSQL 17.4 and later ship pgvector 0.8.0; the migrator still checks the installed version first
    # (rag.store.migrations.MIN_VECTOR_VERSION) and stops on an older one.
    version = aurora.resource("AWS::RDS::DBCluster")["Properties"]["EngineVersion"]
    assert version == AURORA_POSTGRES_VERSION.aurora_postgres_full_version
    assert tuple(int(part) for part in version.split(".")) >= (17, 4)
    assert MIN_VECTOR_VERSION == "0.8.0"


def test_a_serverless_v2_writer_and_the_configured_readers(aurora: Synthesized, aurora_prod: Synthesized) -> None:
    for result, readers in ((aurora, 1), (aurora_prod, 2)):
        found = instances(result)
        assert len(found) == 1 + readers == 1 + result.config.aurora_readers
        cluster = {"Ref": logical_id(result, "AWS::RDS::DBCluster")}
        for props in found.values():
            assert (props["DBInstanceClass"], props["Engine"], props["DBClusterIdentifier"]) == (
                "db.serverless", "aurora-postgresql", cluster,
            )  # fmt: skip
            assert props["PubliclyAccessible"] is False and props["AutoMinorVersionUpgrade"] is True
            # max_connections fixed in the instances' parameter group, as on the RDS instance.
            group = result.resources("AWS::RDS::DBParameterGroup")[props["DBParameterGroupName"]["Ref"]]
            assert group["Properties"]["Parameters"] == {"max_connections": str(result.config.db_max_connections)}
        # The writer (tier 0) and the first reader (tier 1, scaling with the writer: it can take over its load).
        assert sorted(p["PromotionTier"] for p in found.values()) == [0, 1, *([2] * (readers - 1))]
    scaling = aurora_prod.resource("AWS::RDS::DBCluster")["Properties"]["ServerlessV2ScalingConfiguration"]
    assert scaling == {"MinCapacity": 1, "MaxCapacity": 16}


def test_prod_keeps_the_cluster_and_protects_it_last(aurora_prod: Synthesized) -> None:
    cluster_id, cluster = next(iter(aurora_prod.resources("AWS::RDS::DBCluster").items()))
    assert (cluster["DeletionPolicy"], cluster["UpdateReplacePolicy"]) == ("RetainExceptOnCreate", "Retain")
    [protection] = aurora_prod.resources("Custom::RdsDeletionProtection").values()
    call = json.loads(resolve_strings(protection["Properties"]["Create"]))
    assert (call["service"], call["action"]) == ("RDS", "modifyDBCluster")
    assert call["parameters"] == {
        "DBClusterIdentifier": f"<{cluster_id}>", "DeletionProtection": True, "ApplyImmediately": True,
    }  # fmt: skip
    policies = [
        s
        for p in aurora_prod.resources("AWS::IAM::Policy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if s["Action"] == "rds:ModifyDBCluster"
    ]
    assert [s["Resource"] for s in policies] == [
        {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":rds:", {"Ref": "AWS::Region"}, ":",
                           {"Ref": "AWS::AccountId"}, ":cluster:", {"Ref": cluster_id}]]}
    ]  # fmt: skip
    # Deletion protection depends on every other resource: the cluster and its instances among them.
    depends = set(protection.get("DependsOn", []))
    assert {cluster_id, *instances(aurora_prod)} <= depends


# --- reads through the proxy's read-only endpoint ---------------------------------------------------------------


def test_the_query_function_reads_through_the_proxys_read_only_endpoint(aurora: Synthesized) -> None:
    proxy_id, proxy = next(iter(aurora.resources("AWS::RDS::DBProxy").items()))
    endpoint_id, endpoint = next(iter(aurora.resources("AWS::RDS::DBProxyEndpoint").items()))
    props = endpoint["Properties"]
    assert props["TargetRole"] == "READ_ONLY" and props["DBProxyName"] == {"Ref": proxy_id}
    assert props["VpcSubnetIds"] == proxy["Properties"]["VpcSubnetIds"]
    assert props["VpcSecurityGroupIds"] == proxy["Properties"]["VpcSecurityGroupIds"]
    targets = aurora.resource("AWS::RDS::DBProxyTargetGroup")["Properties"]
    assert targets["DBClusterIdentifiers"] == [{"Ref": logical_id(aurora, "AWS::RDS::DBCluster")}]

    environments = functions(aurora)
    [query] = [env for name, env in environments.items() if name.startswith("QueryFunction")]
    assert query[READER_HOST_ENV] == {"Fn::GetAtt": [endpoint_id, "Endpoint"]}
    assert "RAG_DATABASE_READER_PORT" not in query  # the proxy's port, as in the writer's URL
    # Writes, ingest, the backfill and the migrator stay on the writer: no other function has a reader.
    assert [name for name, env in environments.items() if READER_HOST_ENV in env] == [
        name for name in environments if name.startswith("QueryFunction")
    ]
    # The writer: the proxy's default endpoint, for every function behind the proxy.
    writers = {str(env[IAM_URL_ENV]) for env in environments.values() if IAM_URL_ENV in env}
    assert len(writers) == 1 and proxy_id in writers.pop()


def test_without_readers_every_read_goes_to_the_writer(tmp_path: Any) -> None:
    result = synthesize("dev", tmp_path, {"database": "aurora", "aurora_readers": "0"})
    assert len(instances(result)) == 1
    assert result.resources("AWS::RDS::DBProxyEndpoint") == {}
    assert not any(READER_HOST_ENV in env for env in functions(result).values())
    names = {re.sub(r"^Monitoring|[0-9A-F]{8}$", "", name) for name in alarms(result)}
    assert not {n for n in names if "Reader" in n or "Replica" in n}
    assert {"AuroraWriterCpu", "AuroraWriterConnections", "AuroraWriterCapacity", "ProxyBorrowLatency"} <= names


# --- alarms --------------------------------------------------------------------------------------------------------


def test_the_alarms_are_mapped_to_auroras_metrics_per_role(aurora: Synthesized) -> None:
    cluster = {"Ref": logical_id(aurora, "AWS::RDS::DBCluster")}
    config = aurora.config

    def dimensions(role: str) -> list[dict[str, Any]]:
        return [{"Name": "DBClusterIdentifier", "Value": cluster}, {"Name": "Role", "Value": role}]

    memory = math.floor(0.10 * 4 * 2 * GIB)  # 10% of the memory at the maximum ACU (4 ACU x 2 GiB)
    connections = math.ceil(0.80 * config.db_max_connections)
    for role in ("Writer", "Reader"):
        expected = {
            "Cpu": ("CPUUtilization", "Average", "GreaterThanOrEqualToThreshold", 80, 3),
            "Connections": ("DatabaseConnections", "Maximum", "GreaterThanOrEqualToThreshold", connections, 2),
            "Memory": ("FreeableMemory", "Minimum", "LessThanThreshold", memory, 3),
            "Capacity": ("ACUUtilization", "Average", "GreaterThanOrEqualToThreshold", 90, 3),
        }
        for name, (metric_name, statistic, comparison, threshold, periods) in expected.items():
            found = alarm(aurora, f"Aurora{role}{name}")
            assert metric(found) == ("AWS/RDS", metric_name, statistic, comparison, threshold, periods, 300), name
            assert found["Dimensions"] == dimensions(role.upper()), name
    lag = alarm(aurora, "AuroraReplicaLag")
    assert metric(lag) == ("AWS/RDS", "AuroraReplicaLag", "Maximum", "GreaterThanOrEqualToThreshold", 5000, 2, 300)
    assert lag["Dimensions"] == dimensions("READER")
    test_monitoring.test_proxy_borrow_latency(aurora)
    # The cluster volume grows by itself: no free-storage alarm, and none on the RDS instance's metrics.
    names = {re.sub(r"^Monitoring|[0-9A-F]{8}$", "", name) for name in alarms(aurora)}
    assert not names & {"DatabaseFreeStorage", "DatabaseCpu", "DatabaseConnections"}


def test_every_aurora_alarm_has_an_action_and_a_runbook(aurora: Synthesized, aurora_prod: Synthesized) -> None:
    for result in (aurora, aurora_prod):
        test_monitoring.test_every_alarm_has_an_action_and_a_runbook_entry(result)
        for name in alarms(result):
            short = re.sub(r"^Monitoring|[0-9A-F]{8}$", "", name)
            if short.startswith("Aurora"):
                text = resolve_strings(alarm(result, short)["AlarmDescription"])
                assert re.search(r"^1\) ", text, re.M) and "infra/README.md" in text.splitlines()[-1], short


def test_the_dashboard_graphs_auroras_metrics(aurora: Synthesized) -> None:
    body = str(aurora.resource("AWS::CloudWatch::Dashboard")["Properties"]["DashboardBody"])
    for name in ("CPUUtilization", "DatabaseConnections", "ACUUtilization", "FreeableMemory", "AuroraReplicaLag"):
        assert name in body, name
    assert "FreeStorageSpace" not in body


# --- capacity --------------------------------------------------------------------------------------------------------


def test_auroras_max_connections_follows_the_maximum_acu() -> None:
    # LEAST(DBInstanceClassMemory/9531392, 5000) on max ACU x 2 GiB: 1 ACU 225, 4 ACU 901, 16 ACU 3604; 5000 from 24 ACU.
    assert [aurora_default_max_connections(acu) for acu in (1, 4, 16, 24, 256)] == [225, 901, 3604, 5000, 5000]


def test_reserved_concurrency_fits_the_proxys_pool_on_aurora(aurora: Synthesized, aurora_prod: Synthesized) -> None:
    for result in (aurora, aurora_prod):
        max_connections, budget = proxy_budget(result)
        assert sum(reserved(result).values()) == result.config.reserved_concurrency <= budget
        assert max_connections - budget >= DB_ADMIN_HEADROOM
        assert max_connections <= aurora_default_max_connections(result.config.aurora_max_acu)
    assert proxy_budget(aurora) == (80, 64) and proxy_budget(aurora_prod) == (800, 640)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"aurora_max_acu": "0.5"}, r"aurora_max_acu must be within 1..256 in steps of 0.5, not 0.5"),
        ({"aurora_max_acu": "257"}, r"aurora_max_acu must be within 1..256"),
        ({"aurora_max_acu": "3.3"}, r"aurora_max_acu must be within 1..256 in steps of 0.5, not 3.3"),
        ({"aurora_min_acu": "0.25"}, r"aurora_min_acu must be 0 \(auto-pause\) or within 0.5..aurora_max_acu \(4\)"),
        ({"aurora_min_acu": "4.5"}, r"aurora_min_acu must be 0 \(auto-pause\) or within 0.5..aurora_max_acu \(4\)"),
        ({"aurora_min_acu": "-1"}, "aurora_min_acu must be 0"),
        ({"aurora_readers": "16"}, r"aurora_readers must be within 0..15, not 16"),
        ({"aurora_readers": "-1"}, r"aurora_readers must be within 0..15"),
        ({"database": "mysql"}, "database must be rds or aurora, not 'mysql'"),
        (
            {"aurora_max_acu": "1", "db_max_connections": "300"},
            r"db_max_connections must be within 1..225 for Aurora Serverless v2 at aurora_max_acu 1 \(1 ACU x 2 GiB\)",
        ),
    ],
)
def test_capacity_settings_aurora_does_not_take_are_refused(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        stage_config("dev", {"database": "aurora", **overrides})


def test_valid_capacity_ranges_are_taken_as_numbers() -> None:
    paused = stage_config("dev", {"database": "aurora", "aurora_min_acu": "0", "aurora_max_acu": "256"})
    assert (paused.aurora_min_acu, paused.aurora_max_acu) == (0.0, 256.0)
    half = stage_config("dev", {"database": "aurora", "aurora_min_acu": "1.5", "aurora_max_acu": "2.5", "aurora_readers": "0"})
    assert (half.aurora_min_acu, half.aurora_max_acu, half.aurora_readers) == (1.5, 2.5, 0)
    # RDS stages keep their ceiling by instance class, whatever the Aurora fields say.
    with pytest.raises(ValueError, match=r"db_max_connections must be within 1..112 for db.t4g.micro"):
        stage_config("dev", {"db_max_connections": "200", "aurora_max_acu": "256"})


# --- the RDS stages -------------------------------------------------------------------------------------------------


def test_rds_stages_deploy_the_instance_as_before(stage: Synthesized) -> None:
    assert stage.config.database == "rds"
    assert stage.resources("AWS::RDS::DBCluster") == {} and stage.resources("AWS::RDS::DBProxyEndpoint") == {}
    [instance] = instances(stage).values()
    assert instance["Engine"] == "postgres" and instance["DBInstanceClass"] == f"db.{stage.config.db_instance_class}"
    assert not any(READER_HOST_ENV in env for env in functions(stage).values())
    assert "DatabaseInstanceIdentifier" in stage.data["Outputs"] and "DatabaseClusterIdentifier" not in stage.data["Outputs"]
    names = {re.sub(r"^Monitoring|[0-9A-F]{8}$", "", name) for name in alarms(stage)}
    assert {"DatabaseCpu", "DatabaseFreeStorage", "DatabaseConnections", "ProxyBorrowLatency"} <= names
    assert not any(name.startswith("Aurora") for name in names)


def test_the_aurora_templates_pass_cfn_lint(aurora: Synthesized, aurora_prod: Synthesized) -> None:
    for result in (aurora, aurora_prod):
        test_cfn_lint.test_templates_pass_cfn_lint(result)


def test_the_proxy_reaches_the_cluster_once_on_its_port_and_the_migrator_too(aurora: Synthesized) -> None:
    cluster = aurora.resource("AWS::RDS::DBCluster")["Properties"]
    port = int(cluster["Port"])
    cluster_sg = test_network._group(cluster["VpcSecurityGroupIds"][0])
    proxy_sg = test_network._group(aurora.resource("AWS::RDS::DBProxy")["Properties"]["VpcSecurityGroupIds"][0])
    rules = test_network.security_group_rules(aurora.data)
    assert rules.count((cluster_sg, "ingress", "tcp", port, port, "SecurityGroupId", proxy_sg)) == 1
    assert rules.count((proxy_sg, "egress", "tcp", port, port, "SecurityGroupId", cluster_sg)) == 1
    migrator_sg = next(name for name in aurora.resources("AWS::EC2::SecurityGroup") if name.startswith("MigrationsSg"))
    assert rules.count((cluster_sg, "ingress", "tcp", port, port, "SecurityGroupId", migrator_sg)) == 1


# The per-stage checks of the other modules that concern no RDS instance in particular, run on the Aurora template:
# security (encryption, TLS, least privilege, private subnets), network, IAM connections, capacity, timeouts.
SHARED_CHECKS = [
    (module, name)
    for module in (test_security, test_network, test_connection_iam, test_capacity, test_timeouts)
    for name, function in vars(module).items()
    if name.startswith("test_") and list(inspect.signature(function).parameters) == ["stage"]
    and name not in {
        # The RDS instance's own properties; Aurora's are asserted above.
        "test_database_is_encrypted_private_backed_up_and_switchable_by_stage",
        "test_the_proxy_and_the_instance_are_connected_once_on_the_instance_port",
        "test_reserved_concurrency_fits_the_proxy_connection_budget",
    }
]  # fmt: skip


@pytest.mark.parametrize(("module", "name"), SHARED_CHECKS, ids=[f"{m.__name__.rsplit('.', 1)[1]}.{n}" for m, n in SHARED_CHECKS])
def test_the_shared_checks_hold_on_the_aurora_template(aurora: Synthesized, module: Any, name: str) -> None:
    getattr(module, name)(aurora)

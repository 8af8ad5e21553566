"""Aurora PostgreSQL Serverless v2 (``-c database=aurora``): a writer and ``aurora_readers`` readers, scaling between
``aurora_min_acu`` and ``aurora_max_acu``; encrypted, TLS forced, IAM authentication, backups as the RDS instance's.

``Database`` puts the same secrets, rotations and RDS Proxy in front, plus the proxy's read-only endpoint for the
query function's reads (infra/README.md, "Aurora").
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from aws_cdk import aws_rds as rds
from constructs import Construct

from infra.config import StageConfig
from infra.constructs.network import Network
from infra.defaults import DATABASE_NAME, DATABASE_PORT, log_retention
from infra.nag import acknowledge

# Aurora PostgreSQL 17.4 and later ship pgvector 0.8 (iterative index scans) and allow a minimum of 0 ACUs
# (auto-pause) and a maximum of 256. Aurora needs a full version; minor upgrades still apply automatically.
AURORA_POSTGRES_VERSION = rds.AuroraPostgresEngineVersion.VER_17_7
AURORA_EXPORTED_LOGS = ("postgresql",)  # Aurora PostgreSQL exports its server log (no "upgrade" log as RDS's)


def aurora_cluster(
    scope: Construct,
    config: StageConfig,
    network: Network,
    *,
    security_group: ec2.ISecurityGroup,
    identifier: str,
    credentials: rds.Credentials,
) -> rds.DatabaseCluster:
    """The cluster: a Serverless v2 writer, ``aurora_readers`` Serverless v2 readers, parameters as the instance's."""
    engine = rds.DatabaseClusterEngine.aurora_postgres(version=AURORA_POSTGRES_VERSION)
    exported_logs = _exported_logs(scope, config, identifier)
    # max_connections is an instance parameter: fixed, as on the RDS instance, so the proxy's pool and the functions'
    # reserved concurrency are sized from a known number (Aurora's default follows the maximum ACU).
    instance_parameters = rds.ParameterGroup(
        scope, "InstanceParameters", engine=engine, parameters={"max_connections": str(config.db_max_connections)}
    )

    def serverless(id: str, *, scale_with_writer: bool = False) -> rds.IClusterInstance:
        return rds.ClusterInstance.serverless_v2(
            id,
            scale_with_writer=scale_with_writer,
            parameter_group=instance_parameters,
            auto_minor_version_upgrade=True,
            publicly_accessible=False,
        )

    cluster = rds.DatabaseCluster(
        scope,
        "Cluster",
        cluster_identifier=identifier,
        engine=engine,
        # The first reader scales with the writer (promotion tier 1): after a failover it can carry the writer's load.
        writer=serverless("Writer"),
        readers=[serverless(f"Reader{n}", scale_with_writer=n == 1) for n in range(1, config.aurora_readers + 1)],
        serverless_v2_min_capacity=config.aurora_min_acu,
        serverless_v2_max_capacity=config.aurora_max_acu,
        vpc=network.vpc,
        vpc_subnets=network.database_subnets,
        security_groups=[security_group],
        port=DATABASE_PORT,
        default_database_name=DATABASE_NAME,
        credentials=credentials,
        storage_encrypted=True,
        iam_authentication=True,
        # Set by the DeletionProtection construct once everything else exists (a failed first create can roll back).
        deletion_protection=None,
        backup=rds.BackupProps(retention=cdk.Duration.days(config.db_backup_retention_days)),
        delete_automated_backups=not config.db_deletion_protection,
        removal_policy=(
            cdk.RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE if config.db_deletion_protection else cdk.RemovalPolicy.DESTROY
        ),
        monitoring_interval=(
            cdk.Duration.seconds(config.db_monitoring_interval_seconds) if config.db_monitoring_interval_seconds else None
        ),
        cloudwatch_logs_exports=list(AURORA_EXPORTED_LOGS),
        parameter_group=rds.ParameterGroup(
            scope,
            "ClusterParameters",
            engine=engine,
            parameters={"rds.force_ssl": "1", "log_min_duration_statement": "1000"},
        ),
    )
    for group in exported_logs:
        cluster.node.add_dependency(group)
    _acknowledge(config, cluster)
    return cluster


def _exported_logs(scope: Construct, config: StageConfig, identifier: str) -> list[logs.LogGroup]:
    """The exported PostgreSQL log's group, with the stage's retention (not a LogRetention Lambda's)."""
    return [
        logs.LogGroup(
            scope,
            f"Cluster{name.capitalize()}Logs",
            log_group_name=f"/aws/rds/cluster/{identifier}/{name}",
            retention=log_retention(config),
            removal_policy=cdk.RemovalPolicy.DESTROY,
        )
        for name in AURORA_EXPORTED_LOGS
    ]


def _acknowledge(config: StageConfig, cluster: rds.DatabaseCluster) -> None:
    """cdk-nag's findings on the cluster that are by design, each with its reason."""
    acknowledge(
        cluster,
        "AwsSolutions-RDS10",
        "deletion protection is set by the DeletionProtection custom resource once every other resource exists "
        f"(db_deletion_protection: {config.db_deletion_protection} here, on in prod), so a failed first create can roll back",
    )
    if config.db_monitoring_interval_seconds:
        acknowledge(
            cluster.node.find_child("MonitoringRole"),
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonRDSEnhancedMonitoringRole]",
            "the role RDS assumes to publish Enhanced Monitoring's OS metrics: AWS's managed policy is the documented one",
        )


def read_only_endpoint(
    scope: Construct, config: StageConfig, network: Network, proxy: rds.DatabaseProxy, security_group: ec2.ISecurityGroup
) -> rds.CfnDBProxyEndpoint:
    """The proxy's READ_ONLY endpoint: connections go to the cluster's readers, on the proxy's port and with its IAM
    authentication and TLS, in the proxy's subnets and security group."""
    return rds.CfnDBProxyEndpoint(
        scope,
        "ProxyReadOnly",
        db_proxy_endpoint_name=f"meeting-rag-{config.name}-read-only",
        db_proxy_name=proxy.db_proxy_name,
        target_role="READ_ONLY",
        vpc_subnet_ids=network.vpc.select_subnets(subnet_group_name=network.database_subnets.subnet_group_name).subnet_ids,
        vpc_security_group_ids=[security_group.security_group_id],
    )

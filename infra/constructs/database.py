"""RDS for PostgreSQL (pgvector 0.8), or Aurora PostgreSQL Serverless v2 (``-c database=aurora``), behind RDS Proxy with IAM
authentication; credentials rotated in Secrets Manager."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_rds as rds
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.config import StageConfig
from infra.constructs.aurora import aurora_cluster, read_only_endpoint
from infra.constructs.network import Network
from infra.defaults import DATABASE_NAME, DATABASE_PORT, POSTGRES_VERSION, VPC_CIDR, log_retention
from infra.nag import acknowledge

ADMIN_USER = "rag_admin"  # owns the schema; used by the deploy-time migrator only
APP_USER = "rag_app"  # what the functions log in as (through the proxy, with IAM): rows, not schema
PROXY_PORT = 5432
EXPORTED_LOGS = ("postgresql", "upgrade")  # RDS Proxy listens on the engine's default port
CFN_LINT_MAJOR_VERSION_CHECK = "W3691"  # "engine version deprecated": a false positive on a major version alone


class Database(Construct):
    def __init__(self, scope: Construct, id: str, *, config: StageConfig, network: Network) -> None:
        super().__init__(scope, id)
        self._security_groups(network)
        self.instance: rds.DatabaseInstance | None = None
        self.cluster: rds.DatabaseCluster | None = None
        self.target: rds.DatabaseInstance | rds.DatabaseCluster
        if config.database == "aurora":
            self.target = self.cluster = aurora_cluster(
                self,
                config,
                network,
                security_group=self.instance_sg,
                identifier=_identifier(config),
                credentials=rds.Credentials.from_generated_secret(ADMIN_USER),
            )
        else:
            self.target = self.instance = self._instance(config, network)
            self._acknowledge(config, self.instance)
        self._secrets(config, network)
        self._proxy(config, network)
        # The query function's reads: the proxy's read-only endpoint, where the cluster has readers.
        self.reader_endpoint = (
            read_only_endpoint(self, config, network, self.proxy, self.proxy_sg)
            if self.cluster is not None and config.aurora_readers
            else None
        )

    def _security_groups(self, network: Network) -> None:
        self.instance_sg = ec2.SecurityGroup(
            self, "InstanceSg", vpc=network.vpc, description="PostgreSQL instance", allow_all_outbound=False
        )
        self.proxy_sg = ec2.SecurityGroup(self, "ProxySg", vpc=network.vpc, description="RDS Proxy", allow_all_outbound=False)
        self.proxy_sg.add_ingress_rule(network.functions_sg, ec2.Port.tcp(PROXY_PORT), "PostgreSQL from the Lambdas")
        # Proxy -> instance on the instance's port (ingress on one group, egress on the other) is made by the proxy's
        # target (ProxyTarget.from_instance): written here too, it would be a second identical rule, which EC2
        # refuses (InvalidPermission.Duplicate; tests/infra/test_network.py).
        # The proxy reads its credentials from Secrets Manager: allow HTTPS to the VPC's interface endpoints.
        self.proxy_sg.add_egress_rule(ec2.Peer.ipv4(VPC_CIDR), ec2.Port.tcp(443), "HTTPS to the VPC endpoints")

    def _instance(self, config: StageConfig, network: Network) -> rds.DatabaseInstance:
        engine = rds.DatabaseInstanceEngine.postgres(version=POSTGRES_VERSION)
        identifier = _identifier(config)
        # The exported PostgreSQL logs get their retention here, not from a LogRetention Lambda.
        exported_logs = [
            logs.LogGroup(
                self,
                f"{name.capitalize()}Logs",
                log_group_name=f"/aws/rds/instance/{identifier}/{name}",
                retention=log_retention(config),
                removal_policy=cdk.RemovalPolicy.DESTROY,
            )
            for name in EXPORTED_LOGS
        ]
        instance = rds.DatabaseInstance(
            self,
            "Instance",
            instance_identifier=identifier,
            engine=engine,
            instance_type=ec2.InstanceType(config.db_instance_class),
            vpc=network.vpc,
            vpc_subnets=network.database_subnets,
            security_groups=[self.instance_sg],
            port=DATABASE_PORT,
            database_name=DATABASE_NAME,
            credentials=rds.Credentials.from_generated_secret(ADMIN_USER),
            storage_encrypted=True,
            storage_type=rds.StorageType.GP3,
            allocated_storage=config.db_allocated_storage_gb,
            max_allocated_storage=config.db_max_allocated_storage_gb,
            multi_az=config.db_multi_az,
            # Not in the template: on the instance from its creation, it would block the rollback of a first create
            # that fails later. The DeletionProtection construct sets it once everything else exists.
            deletion_protection=None,
            backup_retention=cdk.Duration.days(config.db_backup_retention_days),
            delete_automated_backups=not config.db_deletion_protection,
            # Kept when the stack is deleted or the instance replaced; deleted by the rollback of the create that made it.
            removal_policy=(
                cdk.RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE if config.db_deletion_protection else cdk.RemovalPolicy.DESTROY
            ),
            iam_authentication=True,
            auto_minor_version_upgrade=True,
            publicly_accessible=False,
            monitoring_interval=(
                cdk.Duration.seconds(config.db_monitoring_interval_seconds) if config.db_monitoring_interval_seconds else None
            ),
            cloudwatch_logs_exports=list(EXPORTED_LOGS),
            parameter_group=rds.ParameterGroup(
                self,
                "Parameters",
                engine=engine,
                parameters={
                    "rds.force_ssl": "1",
                    "log_min_duration_statement": "1000",
                    # Fixed, not the memory formula's estimate: the proxy's pool and the functions' reserved
                    # concurrency are sized from it (infra/README.md, "Capacity").
                    "max_connections": str(config.db_max_connections),
                },
            ),
        )
        for group in exported_logs:
            instance.node.add_dependency(group)
        return instance

    def _acknowledge(self, config: StageConfig, instance: rds.DatabaseInstance) -> None:
        """cfn-lint's and cdk-nag's findings on the instance that are by design, each with its reason."""
        # cfn-lint's W3691 data lists every bare major version ("17") as deprecated, although RDS takes a major
        # version alone and creates the instance on a recent minor of it (RDS User Guide, "Supported PostgreSQL
        # versions"; the same false positive was fixed once for E3691, cfn-lint issue 3849). This resource only;
        # tests/infra/test_database.py checks that the suppression is still needed.
        cfn_instance = instance.node.default_child
        assert isinstance(cfn_instance, rds.CfnDBInstance)
        cfn_instance.add_metadata("cfn-lint", {"config": {"ignore_checks": [CFN_LINT_MAJOR_VERSION_CHECK]}})
        if config.db_monitoring_interval_seconds:
            monitoring_role = instance.node.find_child("MonitoringRole")
            acknowledge(
                monitoring_role,
                "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonRDSEnhancedMonitoringRole]",
                "the role RDS assumes to publish Enhanced Monitoring's OS metrics: AWS's managed policy is the documented one",
            )
        if not config.db_multi_az:
            acknowledge(
                instance,
                "AwsSolutions-RDS3",
                f"stage {config.name} runs a single-AZ instance to save cost; db_multi_az switches it (on in prod)",
            )
        acknowledge(
            instance,
            "AwsSolutions-RDS10",
            "deletion protection is set by the DeletionProtection custom resource once every other resource exists "
            f"(db_deletion_protection: {config.db_deletion_protection} here, on in prod), so a failed first create can roll back",
        )

    def _secrets(self, config: StageConfig, network: Network) -> None:
        assert self.target.secret is not None
        self.secret = self.target.secret
        self.rotation = self.target.add_rotation_single_user(
            automatically_after=cdk.Duration.days(config.db_secret_rotation_days),
            vpc_subnets=network.function_subnets,
        )

        # The application role's credentials: the migrator creates the role with them, the proxy logs in with them.
        self.app_secret = rds.DatabaseSecret(self, "AppSecret", username=APP_USER, dbname=DATABASE_NAME).attach(self.target)
        self.app_rotation = secretsmanager.SecretRotation(
            self,
            "AppSecretRotation",
            application=secretsmanager.SecretRotationApplication.POSTGRES_ROTATION_SINGLE_USER,
            secret=self.app_secret,
            target=self.target,
            vpc=network.vpc,
            vpc_subnets=network.function_subnets,
            automatically_after=cdk.Duration.days(config.db_secret_rotation_days),
            rotate_immediately_on_update=False,  # the role exists only once the migrator has run
        )

    def _proxy(self, config: StageConfig, network: Network) -> None:
        self.proxy = rds.DatabaseProxy(
            self,
            "Proxy",
            # Unique per stage in an account and region (dev and prod side by side); CDK's default is "Proxy".
            db_proxy_name=f"meeting-rag-{config.name}",
            proxy_target=(
                rds.ProxyTarget.from_cluster(self.target)
                if isinstance(self.target, rds.DatabaseCluster)
                else rds.ProxyTarget.from_instance(self.target)
            ),
            secrets=[self.secret, self.app_secret],
            vpc=network.vpc,
            vpc_subnets=network.database_subnets,
            security_groups=[self.proxy_sg],
            iam_auth=True,
            require_tls=True,
            # Its pool: this percent of max_connections; the rest is headroom for superusers, the migrator, the
            # rotations and an operator. Every function's reserved concurrency fits in it (infra/README.md, "Capacity").
            max_connections_percent=config.db_proxy_max_connections_percent,
            debug_logging=False,
        )

    @property
    def iam_url(self) -> str:
        """``RAG_DATABASE_IAM_URL``: the proxy endpoint and user; the password is an IAM token made at connect time."""
        return f"postgresql://{APP_USER}@{self.proxy.endpoint}:{PROXY_PORT}/{DATABASE_NAME}?sslmode=require"

    @property
    def reader_environment(self) -> dict[str, str]:
        """The query function's reader (rag.store.replica): the read-only endpoint's host; port, user, IAM token (signed
        for that host), database and TLS as the writer's. Empty without readers: every read goes to the writer."""
        return {} if self.reader_endpoint is None else {"RAG_DATABASE_READER_HOST": self.reader_endpoint.attr_endpoint}

    def allow_direct_access(self, peer: ec2.ISecurityGroup, description: str) -> None:
        """The instance or cluster itself (not the proxy), for the deploy-time migrator only."""
        self.instance_sg.add_ingress_rule(peer, ec2.Port.tcp(DATABASE_PORT), description)

    def grant_connect(self, grantee: iam.IGrantable) -> None:
        """``rds-db:connect`` through the proxy as the application user, nothing else."""
        self.proxy.grant_connect(grantee, APP_USER)


def _identifier(config: StageConfig) -> str:
    """meeting-rag-<stage>-<8 hex of this stack's id>: stable for the stack's life, new for a new stack. A database a
    failed create left behind (or the log groups RDS recreates for it) cannot collide with the next create."""
    stack_uuid = cdk.Fn.select(2, cdk.Fn.split("/", cdk.Aws.STACK_ID))
    return f"meeting-rag-{config.name}-{cdk.Fn.select(0, cdk.Fn.split('-', stack_uuid))}"

"""Migrations on every deploy that changes them: a custom resource (CDK Provider framework) running ``rag migrate``'s code.

The resource's properties carry a hash of ``sql/`` and the embedding model, so CloudFormation sends an Update
(and the migrator runs) whenever a migration file or the configured model changes; re-running is a no-op.

The migrator targets ``DATABASE_NAME`` explicitly (``RAG_DATABASE_NAME``): the admin secret RDS fills names no
database. A vector index too large to build during a deploy is built by invoking the same function with
``{"action": "build-indexes"}`` (output ``MigratorFunctionName``; infra/README.md, "Database: schema, pgvector, TLS").
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_lambda as lambda_
from aws_cdk import custom_resources as cr
from constructs import Construct

from infra.bundling import CopyBundler, local_bundling, tree_hash
from infra.defaults import DATABASE_NAME, REPO_ROOT, log_group, python_function
from infra.nag import acknowledge, logical_id
from infra.resources import AppResources

MIGRATE_DIR = REPO_ROOT / "functions" / "migrate"
SQL_DIR = REPO_ROOT / "sql"
BUNDLED_SQL_DIR = "/var/task/sql"  # where the asset's sql/ lands in Lambda
# The function's asset: name in the asset -> source (CopyBundler). tests/artifact builds the same asset from it.
ASSET_FILES = {"handler.py": MIGRATE_DIR / "handler.py", "app_role.py": MIGRATE_DIR / "app_role.py", "sql": SQL_DIR}


class Migrations(Construct):
    def __init__(self, scope: Construct, id: str, *, resources: AppResources) -> None:
        super().__init__(scope, id)
        config, network, database = resources.config, resources.network, resources.database
        security_group = ec2.SecurityGroup(self, "Sg", vpc=network.vpc, description="deploy-time migrator")
        database.allow_direct_access(security_group, "migrations at deploy time")
        self.function = python_function(
            self,
            "Function",
            config=config,
            description="Applies sql/ migrations (rag migrate) at deploy time",
            code=lambda_.Code.from_asset(
                str(MIGRATE_DIR),
                asset_hash_type=cdk.AssetHashType.CUSTOM,
                asset_hash=tree_hash(list(ASSET_FILES.values())),
                bundling=local_bundling(CopyBundler(ASSET_FILES)),
            ),
            handler="handler.lambda_handler",
            service="migrate",
            layer=resources.layer,
            vpc=network.vpc,
            security_group=security_group,
            memory_mb=512,
            # A deploy's migration takes seconds (large index builds are deferred); the build-indexes invocation
            # of the same function may use Lambda's whole 15 minutes.
            timeout=cdk.Duration.minutes(15),
            environment={
                "RAG_MIGRATIONS_DIR": BUNDLED_SQL_DIR,
                # The admin secret names no database (RDS fills it without dbname): never fall back to `postgres`.
                "RAG_DATABASE_NAME": DATABASE_NAME,
                # The admin secret, read directly: DDL (CREATE EXTENSION, indexes) is the owner's job.
                "RAG_DATABASE_SECRET_ARN": database.secret.secret_arn,
                # The functions' role: created with this secret's password, granted row access after each migration.
                "RAG_APP_DATABASE_SECRET_ARN": database.app_secret.secret_arn,
            },
        )
        database.secret.grant_read(self.function)
        database.app_secret.grant_read(self.function)

        provider = cr.Provider(
            self,
            "Provider",
            on_event_handler=self.function,
            log_group=log_group(self, "ProviderLogs", config),
        )
        acknowledge(
            provider,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
            "the CDK Provider framework's own function: it only writes its logs and invokes the migrator",
        )
        acknowledge(
            provider,
            f"AwsSolutions-IAM5[Resource::<{logical_id(self.function)}.Arn>:*]",
            "the Provider framework may invoke any version of the migrator function, and only that function",
        )
        self.resource = cdk.CustomResource(
            self,
            "Schema",
            service_token=provider.service_token,
            resource_type="Custom::MeetingRagMigrations",
            properties={
                "MigrationsHash": tree_hash([SQL_DIR]),
                "EmbeddingModel": config.embedding_model_id,
                "EmbeddingDimension": str(config.embedding_dimension),
            },
        )
        # Migrate only once the instance (or the cluster and its instances) and its credentials exist.
        self.resource.node.add_dependency(database.target)
        self.resource.node.add_dependency(database.rotation)
        output = cdk.CfnOutput(
            self,
            "MigratorFunctionName",
            value=self.function.function_name,
            description='Migrator; invoked with {"action": "build-indexes"} it builds deferred vector indexes',
        )
        output.override_logical_id("MigratorFunctionName")  # a stable key for describe-stacks

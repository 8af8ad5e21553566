"""The whole system as one stack: network, database, layer, ingest, query API, backfill, migrations, monitoring, tenant uploaders."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from cdk_nag import AwsSolutionsChecks
from constructs import Construct

from infra.api_access import PLACEHOLDER_ISSUER
from infra.config import StageConfig
from infra.constructs.backfill import Backfill
from infra.constructs.database import Database
from infra.constructs.deletion_protection import DeletionProtection
from infra.constructs.ingest import Ingest
from infra.constructs.layer import LibraryLayer
from infra.constructs.migrations import Migrations
from infra.constructs.monitoring import Monitoring
from infra.constructs.network import Network
from infra.constructs.query_api import QueryApi
from infra.constructs.reembed import Reembed
from infra.constructs.tenant_uploader import TenantUploader
from infra.resources import AppResources
from infra.stages import stage_config

DEFAULT_STAGE = "dev"
# Feature flags this app relies on (set before any construct exists).
FEATURE_FLAGS = {
    # Access logs delivered under a bucket policy, not the legacy LogDeliveryWrite ACL (ACLs stay disabled).
    "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy": True,
}


class MeetingRagStack(cdk.Stack):
    def __init__(self, scope: Construct, id: str, *, config: StageConfig, **kwargs: Any) -> None:
        super().__init__(
            scope, id, description=f"meeting-rag ({config.name}): S3 -> SQS -> Lambda -> PostgreSQL + pgvector", **kwargs
        )
        self.config = config
        self.network = Network(self, "Network", config=config)
        self.database = Database(self, "Database", config=config, network=self.network)
        layer = LibraryLayer(self, "Library").layer
        resources = AppResources(config=config, network=self.network, database=self.database, layer=layer)
        self.migrations = Migrations(self, "Migrations", resources=resources)
        self.ingest = Ingest(self, "Ingest", resources=resources)
        self.query = QueryApi(self, "Query", resources=resources, documents=self.ingest.bucket)
        # Re-embedding into another model runs on Bedrock's batch inference, which serves Bedrock's models only: with
        # OpenAI embeddings the stage has no re-embed machine (the backfill starts it after each successful run).
        self.reembed = (
            Reembed(self, "Reembed", resources=resources, access_logs=self.ingest.access_logs)
            if config.reembeds_on_bedrock
            else None
        )
        self.backfill = Backfill(
            self, "Backfill", resources=resources, reembed=self.reembed.state_machine if self.reembed else None
        )
        self.backfill.started_after_ingest(self.ingest.function)
        # The first rotation of the functions' secret needs the role the migrator creates.
        self.database.app_rotation.node.add_dependency(self.migrations.resource)
        reembed_functions = [self.reembed.function] if self.reembed else []
        for function in [self.ingest.function, self.query.function, *self.backfill.functions.values(), *reembed_functions]:
            # The schema exists before any function that reads or writes it is updated.
            function.node.add_dependency(self.migrations.resource)
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            config=config,
            functions={
                "Ingest": self.ingest.function,
                "Query": self.query.function,
                **{f"Backfill{stage.capitalize()}": fn for stage, fn in self.backfill.functions.items()},
            },
            dead_letter_queue=self.ingest.dlq,
            ingest_logs=self.ingest.function.log_group,
            state_machine=self.backfill.state_machine,
            apis={"Api": self.query.api, "ServiceApi": self.query.service_api},
            ingest_queue=self.ingest.queue,
            database=self.database,
            backfill_schedule=self.backfill.schedule,
            reembed_machine=self.reembed.state_machine if self.reembed else None,
        )

        self.uploaders = self._tenant_uploaders(config)

        # The database's deletion protection comes last: a create that fails before it can still delete the instance.
        others = list(self.node.children)
        self.deletion_protection = DeletionProtection(
            self, "DatabaseDeletionProtection", config=config, target=self.database.target, after=others
        )

        self._outputs(config)

    def _tenant_uploaders(self, config: StageConfig) -> dict[str, TenantUploader]:
        """One uploader role per configured tenant (-c tenant_uploaders='{"<tenant>": "<principal ARN>"}')."""
        uploaders = Construct(self, "TenantUploaders")
        found: dict[str, TenantUploader] = {}
        for tenant_id, principal_arn in sorted(config.tenant_uploaders.items()):
            uploader = TenantUploader(
                uploaders,
                tenant_id,
                bucket=self.ingest.bucket,
                tenant_id=tenant_id,
                assumed_by=iam.ArnPrincipal(principal_arn),
                default_tenant=tenant_id == config.default_tenant,
            )
            cdk.CfnOutput(
                uploader,
                "RoleArn",
                value=uploader.role_arn,
                description=f"Uploader role of tenant {tenant_id}: writes {', '.join(uploader.prefixes)}",
            )
            found[tenant_id] = uploader
        return found

    def _outputs(self, config: StageConfig) -> None:
        """What an operator needs after a deploy: names and ARNs, and a warning while the JWT issuer is a placeholder."""
        if config.jwt_issuer == PLACEHOLDER_ISSUER and config.web_auth != "cognito":  # cognito: the stack's own pool
            cdk.Annotations.of(self).add_warning_v2(
                "meeting-rag:placeholder-issuer",
                "jwt_issuer is the placeholder: the JWT API will refuse every token until you deploy with "
                "-c jwt_issuer=https://<your identity provider>/ -c jwt_audience=<client id>",
            )
        cdk.CfnOutput(
            self,
            "BucketName",
            value=self.ingest.bucket.bucket_name,
            description="Documents: tenants/<tenant_id>/projects/<project_id>/..., or projects/<project_id>/... (default tenant)",
        )
        cdk.CfnOutput(self, "ApiUrl", value=self.query.url, description="Query API (JWT)")
        cdk.CfnOutput(self, "WebUrl", value=self.query.page_url, description=f"The web page (sign-in: {config.web_auth})")
        if self.query.sign_in is not None:
            cdk.CfnOutput(
                self,
                "UserPoolId",
                value=self.query.sign_in.user_pool.user_pool_id,
                description="The page's users: aws cognito-idp admin-create-user --user-attributes Name=custom:tenant,...",
            )
        cdk.CfnOutput(self, "ServiceApiUrl", value=self.query.service_url, description="Query API (IAM, SigV4)")
        cdk.CfnOutput(self, "StateMachineArn", value=self.backfill.state_machine.state_machine_arn, description="Backfill")
        if self.reembed is not None:
            cdk.CfnOutput(
                self, "ReembedStateMachineArn", value=self.reembed.state_machine.state_machine_arn, description="Re-embedding"
            )
        cdk.CfnOutput(self, "AlarmTopicArn", value=self.monitoring.topic.topic_arn)
        # For the DLQ runbook (infra/README.md): aws sqs start-message-move-task --source-arn <DeadLetterQueueArn>
        cdk.CfnOutput(self, "DeadLetterQueueArn", value=self.ingest.dlq.queue_arn, description="Ingest DLQ (redrive source)")
        cdk.CfnOutput(self, "DeadLetterQueueUrl", value=self.ingest.dlq.queue_url, description="Ingest DLQ (to inspect messages)")
        cdk.CfnOutput(
            self, "IngestLogGroupName", value=self.ingest.function.log_group.log_group_name, description="Ingest errors"
        )
        if self.database.instance is not None:
            cdk.CfnOutput(
                self,
                "DatabaseInstanceIdentifier",
                value=self.database.instance.instance_identifier,
                description="RDS instance (meeting-rag-<stage>-<from the stack id>), for aws rds commands",
            )
        if self.database.cluster is not None:
            cdk.CfnOutput(
                self,
                "DatabaseClusterIdentifier",
                value=self.database.cluster.cluster_identifier,
                description="Aurora cluster (meeting-rag-<stage>-<from the stack id>), for aws rds commands",
            )


def stack_name(stage: str) -> str:
    return f"MeetingRag-{stage}"


def build(app: cdk.App, stage: str | None = None) -> MeetingRagStack:
    """The stage named by ``-c stage=...`` (default dev), context overrides applied, cdk-nag enabled."""
    name = stage or app.node.try_get_context("stage") or DEFAULT_STAGE
    for flag, value in FEATURE_FLAGS.items():
        if app.node.try_get_context(flag) is None:
            app.node.set_context(flag, value)
    overrides = {key: app.node.try_get_context(key) for key in _override_keys() if app.node.try_get_context(key) is not None}
    config = stage_config(name, overrides)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks())
    env = cdk.Environment(account=_env("CDK_DEFAULT_ACCOUNT"), region=_env("CDK_DEFAULT_REGION"))
    return MeetingRagStack(app, stack_name(name), config=config, env=env)


def _override_keys() -> list[str]:
    import dataclasses

    return [field.name for field in dataclasses.fields(StageConfig) if field.name != "name"]


def _env(name: str) -> str | None:
    import os

    return os.environ.get(name) or None

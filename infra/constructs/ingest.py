"""Storage and ingest: the documents bucket, its change notifications to an encrypted queue with a DLQ, the ingest Lambda.

The ingest contract (README.md, "Ingest contract") takes the tenant from the object's key, never from its metadata:
``tenants/<tenant_id>/projects/<project_id>/<any path>/<file>``, or ``projects/<project_id>/<any path>/<file>``
for the deployment's default tenant. Writers are granted their tenant's prefix only (constructs/tenant_uploader.py).
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_notifications as s3n
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.defaults import function_code, secure_bucket, secure_queue
from infra.nag import acknowledge, logical_id
from infra.resources import AppResources

DEFAULT_TENANT_PREFIX = "projects/"  # projects/<project_id>/<any path>/<file>: the default tenant's documents
TENANTS_PREFIX = "tenants/"  # tenants/<tenant_id>/projects/<project_id>/<any path>/<file>
DOCUMENT_PREFIXES = (DEFAULT_TENANT_PREFIX, TENANTS_PREFIX)
# AWS's guidance for SQS event sources: visibility timeout at least six times the function timeout.
VISIBILITY_TIMEOUT_FACTOR = 6


class Ingest(Construct):
    def __init__(self, scope: Construct, id: str, *, resources: AppResources) -> None:
        super().__init__(scope, id)
        config = resources.config
        self.access_logs = secure_bucket(
            self,
            "AccessLogs",
            config,
            versioned=False,
            lifecycle_rules=[s3.LifecycleRule(expiration=cdk.Duration.days(365))],
        )
        self.bucket = secure_bucket(
            self, "Documents", config, server_access_logs_bucket=self.access_logs, server_access_logs_prefix="documents/"
        )

        self.dlq = secure_queue(self, "DeadLetters", retention_period=cdk.Duration.days(14))
        self.queue = secure_queue(
            self,
            "Changes",
            visibility_timeout=cdk.Duration.seconds(config.ingest_timeout_seconds * VISIBILITY_TIMEOUT_FACTOR),
            retention_period=cdk.Duration.days(4),
            dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=config.ingest_max_receive_count, queue=self.dlq),
        )
        # Both key forms, nothing else (the prefixes do not overlap, as S3 requires for one event type).
        for prefix in DOCUMENT_PREFIXES:
            for event in (s3.EventType.OBJECT_CREATED, s3.EventType.OBJECT_REMOVED):
                self.bucket.add_event_notification(event, s3n.SqsDestination(self.queue), s3.NotificationKeyFilter(prefix=prefix))
        # CDK's singleton that writes the bucket's notification configuration.
        notifications_handler = next(
            child for child in cdk.Stack.of(self).node.children if child.node.id.startswith("BucketNotificationsHandler")
        )
        acknowledge(
            notifications_handler,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
            "CDK's bucket-notification custom resource: it writes only its own logs with this policy",
        )

        self.function = resources.app_function(
            self,
            "Function",
            description="S3 changes (via SQS) -> parsed, chunked, embedded rows in PostgreSQL",
            code=function_code("ingest"),
            handler="handler.lambda_handler",
            service="ingest",
            memory_mb=config.ingest_memory_mb,
            timeout=cdk.Duration.seconds(config.ingest_timeout_seconds),
            environment={"RAG_DEFAULT_TENANT": config.default_tenant},
            # The event source's maximum concurrency, reserved: never throttled below it, never more connections.
            reserved_concurrency=config.ingest_reserved_concurrency,
        )
        # The event source grants the role sqs:ChangeMessageVisibility on this queue (with Receive/Delete/GetQueue*):
        # on a transient error the handler pushes the failing message's next attempt back (exponential backoff)
        # and reports it as a batch item failure; the arithmetic against the DLQ is in infra/README.md.
        self.function.add_event_source(
            sources.SqsEventSource(
                self.queue,
                batch_size=config.ingest_batch_size,
                max_batching_window=cdk.Duration.seconds(config.ingest_batching_window_seconds),
                max_concurrency=config.ingest_max_concurrency,
                report_batch_item_failures=True,
            )
        )
        # A file too large for one invocation is continued by a new message on this queue (rag.queue_retry).
        self.queue.grant_send_messages(self.function)
        self._read_documents()
        # Without ListBucket, S3 answers 403 (not 404) for a deleted key, and deletions would never apply.
        self.function.add_to_role_policy(iam.PolicyStatement(actions=["s3:ListBucket"], resources=[self.bucket.bucket_arn]))

    def _read_documents(self) -> None:
        """Read the documents (any version, either key form), nothing else of the bucket."""
        self.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["s3:GetObject", "s3:GetObjectVersion"],
                resources=[self.bucket.arn_for_objects(f"{prefix}*") for prefix in DOCUMENT_PREFIXES],
            )
        )
        role = self.function.role
        assert role is not None  # app_function gives every function its execution role
        for prefix in DOCUMENT_PREFIXES:
            acknowledge(
                role,
                f"AwsSolutions-IAM5[Resource::<{logical_id(self.bucket)}.Arn>/{prefix}*]",
                f"the documents are any objects under {prefix} (keys are data, the tenant and project are in them); "
                "read-only, this bucket only",
            )

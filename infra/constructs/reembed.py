"""Re-embedding a corpus on Amazon Bedrock's batch inference: the manifests bucket, the service role Bedrock's jobs
assume, the re-embed Lambda and the state machine that drives a run (constructs/reembed_state_machine.py).

A run (``rag.reembed.steps``) writes each manifest of texts to ``<prefix><run>/input/<n>.jsonl``, starts one model
invocation job per manifest, which Bedrock runs as the service role, reading its input and writing its results under
``<prefix><run>/output/<n>/``; the Lambda imports those vectors beside the current ones and switches the model once
every row has one. Batch inference exists for Bedrock's models only: the stack creates this for the Bedrock
embedding provider (infra/stack.py).
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.constructs.reembed_state_machine import ReembedStateMachine, nag_region_account
from infra.defaults import DATABASE_NAME, function_code, python_function, secure_bucket
from infra.nag import acknowledge, logical_id
from infra.permissions import grant_embedding_and_llm
from infra.resources import AppResources

# The key prefix of every run's manifests and results (rag.settings_sections.ReembedSettings.prefix, set explicitly).
PREFIX = "reembed/"
# Manifests and results are working copies: the vectors live in the database once imported.
OBJECT_DAYS = 30
FUNCTION_TIMEOUT = cdk.Duration.minutes(15)  # Lambda's maximum: one manifest's import (up to 50,000 rows) fits it


class Reembed(Construct):
    def __init__(self, scope: Construct, id: str, *, resources: AppResources, access_logs: s3.IBucket) -> None:
        super().__init__(scope, id)
        config = resources.config
        stack = cdk.Stack.of(self)
        self.job_arns = f"arn:{stack.partition}:bedrock:{stack.region}:{stack.account}:model-invocation-job/*"
        self.model_arn = f"arn:{stack.partition}:bedrock:{stack.region}::foundation-model/{config.reembed_target_model}"
        # Unversioned: every run writes new keys under its own run id and never overwrites one; the objects are
        # rebuilt from the database by a new run and expire after OBJECT_DAYS, so versions would only keep copies.
        self.bucket = secure_bucket(
            self,
            "Manifests",
            config,
            versioned=False,
            lifecycle_rules=[
                s3.LifecycleRule(
                    expiration=cdk.Duration.days(OBJECT_DAYS),
                    abort_incomplete_multipart_upload_after=cdk.Duration.days(1),
                )
            ],
            server_access_logs_bucket=access_logs,
            server_access_logs_prefix="reembed/",
        )
        self.service_role = self._service_role()
        self.function = self._function(resources)
        self._grant_function()

        machine = ReembedStateMachine(self, "Machine", function=self.function, max_concurrency=config.reembed_max_jobs)
        self.state_machine: sfn.StateMachine = machine.state_machine
        # The construct fixes its log retention (a month): the stage's retention applies here too.
        log_group = machine.log_group.node.default_child
        assert isinstance(log_group, cdk.CfnResource)  # a LogGroup's default child is its AWS::Logs::LogGroup
        log_group.add_property_override("RetentionInDays", config.log_retention_days)

    def _function(self, resources: AppResources) -> lambda_.Function:
        """The re-embed Lambda, connecting as the schema's owner, directly, as the migrator does: its steps create
        and drop indexes and swap columns, which only the owner may do (the functions' role reads and writes rows)."""
        config, network, database = resources.config, resources.network, resources.database
        security_group = ec2.SecurityGroup(self, "Sg", vpc=network.vpc, description="re-embedding: indexes and the switch")
        database.allow_direct_access(security_group, "re-embedding's index builds and column swap")
        function = python_function(
            self,
            "Function",
            config=config,
            description="Re-embedding: manifests to Bedrock batch inference, its vectors into PostgreSQL, then the switch",
            code=function_code("backfill"),
            handler="handler.reembed_handler",
            service="reembed",
            layer=resources.layer,
            vpc=network.vpc,
            security_group=security_group,
            memory_mb=config.backfill_memory_mb,
            timeout=FUNCTION_TIMEOUT,
            environment={
                "RAG_DATABASE_NAME": DATABASE_NAME,  # the admin secret names no database
                "RAG_DATABASE_SECRET_ARN": database.secret.secret_arn,
                "RAG_REEMBED_BUCKET": self.bucket.bucket_name,
                "RAG_REEMBED_PREFIX": PREFIX,
                "RAG_REEMBED_ROLE_ARN": self.service_role.role_arn,
            },
            reserved_concurrency=config.reembed_reserved_concurrency,
        )
        database.secret.grant_read(function)
        grant_embedding_and_llm(self, function, config, chat_model=False)  # the catch-up embeds online in the target model
        return function

    def _service_role(self) -> iam.Role:
        """What Bedrock's batch jobs of this account run as: read the inputs, write the results, nothing else."""
        stack = cdk.Stack.of(self)
        role = iam.Role(
            self,
            "BatchJobRole",
            description="Bedrock batch inference jobs of the re-embedding: read manifests, write results",
            # Only Bedrock acting for a model invocation job of this account may assume it (confused deputy).
            assumed_by=iam.ServicePrincipal(
                "bedrock.amazonaws.com",
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {"aws:SourceArn": self.job_arns},
                },
            ),
        )
        role.add_to_policy(iam.PolicyStatement(actions=["s3:ListBucket"], resources=[self.bucket.bucket_arn]))
        role.add_to_policy(
            iam.PolicyStatement(actions=["s3:GetObject"], resources=[self.bucket.arn_for_objects(f"{PREFIX}*/input/*")])
        )
        role.add_to_policy(
            iam.PolicyStatement(actions=["s3:PutObject"], resources=[self.bucket.arn_for_objects(f"{PREFIX}*/output/*")])
        )
        bucket = logical_id(self.bucket)
        for keys, access in ((f"{PREFIX}*/input/*", "reads"), (f"{PREFIX}*/output/*", "writes")):
            acknowledge(
                role,
                f"AwsSolutions-IAM5[Resource::<{bucket}.Arn>/{keys}]",
                f"a job {access} the objects of its own run, whose id is made at run time; this bucket and prefix only",
            )
        return role

    def _grant_function(self) -> None:
        """Start and follow batch jobs of the configured model as the service role; the run's objects in the bucket."""
        function: lambda_.Function = self.function
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["bedrock:CreateModelInvocationJob"], resources=[self.model_arn, self.job_arns])
        )
        # Follow a job; stop the jobs of a failed run (they would go on, and bill).
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["bedrock:GetModelInvocationJob", "bedrock:StopModelInvocationJob"], resources=[self.job_arns]
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["iam:PassRole"],
                resources=[self.service_role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": "bedrock.amazonaws.com"}},
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["s3:GetObject", "s3:PutObject"], resources=[self.bucket.arn_for_objects(f"{PREFIX}*")])
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[self.bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{PREFIX}*"]}},
            )
        )
        role = function.role
        assert role is not None  # app_function gives every function its execution role
        region, account = nag_region_account(cdk.Stack.of(self))
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:{region}:{account}:model-invocation-job/*]",
            "batch jobs get their ids from Bedrock when they are created; Create and Get only, this account and region",
        )
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::<{logical_id(self.bucket)}.Arn>/{PREFIX}*]",
            "every run's manifests and results, under keys named by run ids made at run time; this bucket and prefix only",
        )

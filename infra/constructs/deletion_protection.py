"""Deletion protection of the database instance (or Aurora cluster), set as the last step of a deploy.

On the instance from its creation, deletion protection would block the rollback of a first create that fails later
(a quota, a migration, a subscription): the stack ends ROLLBACK_FAILED with the instance left behind. The template
therefore leaves it out; this custom resource calls RDS ``ModifyDBInstance`` (``ModifyDBCluster`` for Aurora) with the
stage's ``db_deletion_protection``
after every other resource of the stack exists (``after``), and again whenever the value or the instance changes.
Nothing is undone on delete: a deleted stack leaves a protected instance protected (and retained, by its removal policy).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_rds as rds
from aws_cdk import custom_resources as cr
from constructs import Construct, IDependable

from infra.config import StageConfig
from infra.defaults import log_group
from infra.nag import acknowledge

# The logical id CDK gives AwsCustomResource's singleton function (its fixed uuid without dashes, prefixed AWS).
AWS_CUSTOM_RESOURCE_FUNCTION = "AWS679f53fac002430cb0da5b7982bd2287"


class DeletionProtection(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: StageConfig,
        target: rds.DatabaseInstance | rds.DatabaseCluster,
        after: Sequence[IDependable],
    ) -> None:
        super().__init__(scope, id)
        # The RDS instance: ModifyDBInstance; the Aurora cluster: ModifyDBCluster (its instances have none of their own).
        if isinstance(target, rds.DatabaseCluster):
            action, key, identifier, arn = "modifyDBCluster", "DBClusterIdentifier", target.cluster_identifier, target.cluster_arn
        else:
            action, key, identifier, arn = (
                "modifyDBInstance",
                "DBInstanceIdentifier",
                target.instance_identifier,
                target.instance_arn,
            )
        call = cr.AwsSdkCall(
            service="RDS",
            action=action,
            parameters={
                key: identifier,
                "DeletionProtection": config.db_deletion_protection,
                "ApplyImmediately": True,  # deletion protection needs no maintenance window or reboot
            },
            physical_resource_id=cr.PhysicalResourceId.of(identifier),
        )
        self.resource = cr.AwsCustomResource(
            self,
            "Call",
            resource_type="Custom::RdsDeletionProtection",
            on_create=call,
            on_update=call,
            policy=cr.AwsCustomResourcePolicy.from_statements(
                [iam.PolicyStatement(actions=[f"rds:{action[0].upper()}{action[1:]}"], resources=[arn])]
            ),
            install_latest_aws_sdk=False,  # the runtime's SDK has ModifyDBInstance; no npm install at deploy time
            log_group=log_group(self, "Logs", config),
        )
        # Last: while anything else may still fail, the instance stays deletable by the rollback.
        self.resource.node.add_dependency(*after)
        # The function is a singleton of the stack (CDK's, one for every AwsCustomResource).
        provider = Stack.of(self).node.find_child(AWS_CUSTOM_RESOURCE_FUNCTION)
        acknowledge(
            provider,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
            "CDK's AwsCustomResource function: it only writes its logs and calls ModifyDBInstance (ModifyDBCluster) on this database",
        )

"""cdk-nag acknowledgements: each one is made next to the resource it concerns, with the reason."""

from __future__ import annotations

import aws_cdk as cdk
from constructs import IConstruct

PACK = "AwsSolutions"


def acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
    """Accept one AwsSolutions finding (exact id, e.g. ``AwsSolutions-IAM5[Resource::*]``) on ``scope`` and below."""
    cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(id=f"{PACK}::{rule}", reason=reason))


def logical_id(construct: IConstruct) -> str:
    """The CloudFormation logical id of a construct's main resource, as findings name it (``<Id.Arn>``)."""
    resource = construct.node.default_child
    assert isinstance(resource, cdk.CfnElement), f"{construct.node.path} has no CloudFormation resource"
    return cdk.Stack.of(construct).get_logical_id(resource)

"""A tenant's uploader: an IAM role that may write that tenant's documents and nothing else of the bucket.

The ingest contract takes a document's tenant from its key (``tenants/<tenant_id>/projects/<project_id>/...``),
never from S3 metadata: what a writer is allowed to write therefore decides which tenant its documents belong to.
Each role may put, delete and abort uploads of objects under ``tenants/<tenant_id>/`` (and list that prefix);
the default tenant's uploader may also write the short form ``projects/``.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.config import check_tenant_id
from infra.constructs.ingest import DEFAULT_TENANT_PREFIX, TENANTS_PREFIX
from infra.nag import acknowledge, logical_id

# Upload (single or multipart), abandon a multipart upload, remove a document (a delete marker: the ingest Lambda
# deletes its rows; older versions stay, so no s3:DeleteObjectVersion). No read: writers do not need one.
WRITE_ACTIONS = ("s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject")
# SSE-KMS: PutObject needs a data key, a multipart upload also decrypts it to assemble the parts.
KMS_ACTIONS = ("kms:GenerateDataKey", "kms:Decrypt")


def tenant_prefix(tenant_id: str) -> str:
    """``tenants/<tenant_id>/``, the keys of one tenant (the id validated first)."""
    return f"{TENANTS_PREFIX}{check_tenant_id(tenant_id)}/"


class TenantUploader(Construct):
    """An IAM role, assumable by ``assumed_by``, that may write one tenant's prefix of ``bucket`` only.

    ``default_tenant=True`` is for the deployment's default tenant (``RAG_DEFAULT_TENANT``): its writer may also
    use the short key form ``projects/<project_id>/...``, which the ingest Lambda files under that tenant.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        bucket: s3.Bucket,
        tenant_id: str,
        assumed_by: iam.IPrincipal,
        default_tenant: bool = False,
        max_session_duration: cdk.Duration | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.tenant_id = check_tenant_id(tenant_id)
        self.prefixes: tuple[str, ...] = (tenant_prefix(tenant_id), *((DEFAULT_TENANT_PREFIX,) if default_tenant else ()))
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=assumed_by,
            description=(
                f"meeting-rag uploads for tenant {tenant_id}: writes {', '.join(self.prefixes)} of the documents bucket only"
            ),
            max_session_duration=max_session_duration,
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=list(WRITE_ACTIONS),
                resources=[bucket.arn_for_objects(f"{prefix}*") for prefix in self.prefixes],
            )
        )
        # Listing is limited to the same prefixes (sync tools list before they upload); other tenants' keys stay unseen.
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{prefix}*" for prefix in self.prefixes]}},
            )
        )
        if bucket.encryption_key is not None:
            self.role.add_to_policy(
                iam.PolicyStatement(
                    actions=list(KMS_ACTIONS),
                    resources=[bucket.encryption_key.key_arn],
                    conditions={"StringEquals": {"kms:ViaService": f"s3.{cdk.Stack.of(self).region}.amazonaws.com"}},
                )
            )
        for prefix in self.prefixes:
            acknowledge(
                self.role,
                f"AwsSolutions-IAM5[Resource::<{logical_id(bucket)}.Arn>/{prefix}*]",
                f"tenant {tenant_id}'s documents are any objects under {prefix} (keys are data); "
                "write-only, its own prefix of this bucket, no other tenant's",
            )

    @property
    def role_arn(self) -> str:
        return self.role.role_arn

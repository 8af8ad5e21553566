"""Tenant uploader roles: each writes its own tenant's prefix of the documents bucket and nothing else.

The tenant of a document is where it is written (tenants/<tenant_id>/...), so these grants are the tenant boundary.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

from infra import node as _node  # noqa: F401  (JSII_NODE before aws_cdk)
from infra.constructs.tenant_uploader import TenantUploader, tenant_prefix
from tests.infra.conftest import Synthesized, resolve_strings, synthesize
from tests.infra.test_cfn_lint import IGNORED_CHECKS, lint, template_of

ACME = "arn:aws:iam::123456789012:role/acme-sync"
GLOBEX = "arn:aws:iam::210987654321:root"
MAIN = "arn:aws:iam::123456789012:role/main-sync"
UPLOADERS = {"acme": ACME, "globex.eu": GLOBEX, "default": MAIN}  # "default" is the stage's default tenant


@pytest.fixture(scope="module")
def with_uploaders(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    # As `cdk deploy -c tenant_uploaders='{...}'` passes it: a JSON string in context.
    return synthesize("dev", tmp_path_factory.mktemp("cdk-uploaders"), {"tenant_uploaders": json.dumps(UPLOADERS)})


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def role_named(result: Synthesized, tenant: str) -> str:
    """The logical id of ``tenant``'s uploader role, found by its trust policy's principal."""
    (name,) = [
        name
        for name, role in result.resources("AWS::IAM::Role").items()
        if role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"AWS": UPLOADERS[tenant]}
    ]
    return name


def role_statements(result: Synthesized, role: str) -> list[dict[str, Any]]:
    found = []
    for policy in result.resources("AWS::IAM::Policy").values():
        if {"Ref": role} in policy["Properties"]["Roles"]:
            found += policy["Properties"]["PolicyDocument"]["Statement"]
    return found


def documents_bucket(result: Synthesized) -> str:
    return next(name for name, b in result.resources("AWS::S3::Bucket").items() if "LoggingConfiguration" in b["Properties"])


def test_a_tenant_uploader_writes_only_its_tenant_prefix(with_uploaders: Synthesized) -> None:
    bucket = documents_bucket(with_uploaders)
    for tenant in ("acme", "globex.eu"):
        role = role_named(with_uploaders, tenant)
        found = role_statements(with_uploaders, role)
        assert all(s["Effect"] == "Allow" for s in found)
        writes = [s for s in found if "s3:PutObject" in as_list(s["Action"])]
        assert len(writes) == 1
        assert sorted(as_list(writes[0]["Action"])) == ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:PutObject"]
        assert [resolve_strings(r) for r in as_list(writes[0]["Resource"])] == [f"<{bucket}>/tenants/{tenant}/*"]
        (listing,) = [s for s in found if s["Action"] == "s3:ListBucket"]
        assert resolve_strings(listing["Resource"]) == f"<{bucket}>"
        assert listing["Condition"] == {"StringLike": {"s3:prefix": [f"tenants/{tenant}/*"]}}
        assert len(found) == 2  # nothing else: no read, no other bucket, no KMS (the bucket is SSE-S3)
        # No statement reaches the whole bucket, the default tenant's projects/ or another tenant's prefix.
        for statement in found:
            for resource in map(resolve_strings, as_list(statement["Resource"])):
                assert resource in (f"<{bucket}>", f"<{bucket}>/tenants/{tenant}/*"), resource
                assert "*" not in resource.replace(f"/tenants/{tenant}/*", "")


def test_the_default_tenants_uploader_also_writes_the_short_key_form(with_uploaders: Synthesized) -> None:
    bucket = documents_bucket(with_uploaders)
    found = role_statements(with_uploaders, role_named(with_uploaders, "default"))
    (writes,) = [s for s in found if "s3:PutObject" in as_list(s["Action"])]
    assert sorted(resolve_strings(r) for r in writes["Resource"]) == [f"<{bucket}>/projects/*", f"<{bucket}>/tenants/default/*"]
    ingest = next(
        f["Properties"] for f in with_uploaders.resources("AWS::Lambda::Function").values()
        if f["Properties"].get("Description", "").startswith("S3 changes")
    )  # fmt: skip
    assert ingest["Environment"]["Variables"]["RAG_DEFAULT_TENANT"] == "default"


def test_each_role_trusts_its_configured_principal_and_its_arn_is_an_output(with_uploaders: Synthesized) -> None:
    outputs = with_uploaders.data["Outputs"]
    for tenant, principal in UPLOADERS.items():
        role = role_named(with_uploaders, tenant)
        trust = with_uploaders.data["Resources"][role]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        assert trust == [{"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"AWS": principal}}]
        assert "ManagedPolicyArns" not in with_uploaders.data["Resources"][role]["Properties"]
        (output,) = [o for o in outputs.values() if o["Value"] == {"Fn::GetAtt": [role, "Arn"]}]
        assert output["Description"].startswith(f"Uploader role of tenant {tenant}: writes tenants/{tenant}/")


def test_uploaders_pass_cdk_nag_with_exact_acknowledgements(with_uploaders: Synthesized) -> None:
    (plugin,) = with_uploaders.validation_report["pluginReports"]
    assert plugin["conclusion"] == "success" and plugin["violations"] == []
    bucket = f"<{documents_bucket(with_uploaders)}.Arn>"
    acknowledged = {
        (finding["acknowledgedAt"], finding["ruleName"])
        for finding in plugin["suppressedViolations"]
        if "/TenantUploaders/" in finding["acknowledgedAt"] or "/Ingest/FunctionRole" in finding["acknowledgedAt"]
    }
    # Each wildcard is one exact prefix, acknowledged on the role that holds it: nothing broader slips through.
    assert acknowledged == {
        ("MeetingRag-dev/TenantUploaders/acme/Role", f"AwsSolutions-IAM5[Resource::{bucket}/tenants/acme/*]"),
        ("MeetingRag-dev/TenantUploaders/globex.eu/Role", f"AwsSolutions-IAM5[Resource::{bucket}/tenants/globex.eu/*]"),
        ("MeetingRag-dev/TenantUploaders/default/Role", f"AwsSolutions-IAM5[Resource::{bucket}/tenants/default/*]"),
        ("MeetingRag-dev/TenantUploaders/default/Role", f"AwsSolutions-IAM5[Resource::{bucket}/projects/*]"),
        ("MeetingRag-dev/Ingest/FunctionRole", f"AwsSolutions-IAM5[Resource::{bucket}/projects/*]"),
        ("MeetingRag-dev/Ingest/FunctionRole", f"AwsSolutions-IAM5[Resource::{bucket}/tenants/*]"),
        ("MeetingRag-dev/Ingest/FunctionRole", "AwsSolutions-IAM5[Resource::*]"),  # VPC ENIs and X-Ray
    }


def test_the_template_with_uploaders_passes_cfn_lint(with_uploaders: Synthesized) -> None:
    assert [text for rule, text in lint(template_of(with_uploaders)) if rule not in IGNORED_CHECKS] == []


def test_no_uploader_role_unless_configured(dev: Synthesized) -> None:
    assert not [name for name in dev.resources("AWS::IAM::Role") if name.startswith("TenantUploaders")]


@pytest.mark.parametrize("tenant_id", ["", "-acme", "acme/other", "acme*", "a?", "x" * 129, "tenant id"])
def test_an_invalid_tenant_id_is_refused_before_it_reaches_a_policy(tenant_id: str) -> None:
    stack = cdk.Stack(cdk.App(), "Probe")
    bucket = s3.Bucket(stack, "Documents")
    with pytest.raises(ValueError, match="is not valid: 1-128 characters from A-Z a-z 0-9 . _ -"):
        TenantUploader(stack, "Uploader", bucket=bucket, tenant_id=tenant_id, assumed_by=iam.AccountRootPrincipal())
    with pytest.raises(ValueError, match="is not valid"):
        tenant_prefix(tenant_id)


def test_a_kms_encrypted_bucket_gets_its_key_for_s3_uploads_only(tmp_path: Path) -> None:
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Probe")
    bucket = s3.Bucket(stack, "Documents", encryption=s3.BucketEncryption.KMS)
    uploader = TenantUploader(stack, "Uploader", bucket=bucket, tenant_id="acme", assumed_by=iam.AccountRootPrincipal())
    assert uploader.prefixes == ("tenants/acme/",)
    template = app.synth().get_stack_by_name("Probe").template
    (policy,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::IAM::Policy"]
    (kms,) = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if "kms:GenerateDataKey" in as_list(s["Action"])]
    assert sorted(kms["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey"]
    key = next(name for name, r in template["Resources"].items() if r["Type"] == "AWS::KMS::Key")
    assert kms["Resource"] == {"Fn::GetAtt": [key, "Arn"]}
    assert resolve_strings(kms["Condition"]["StringEquals"]["kms:ViaService"]) == "s3.<AWS::Region>.amazonaws.com"

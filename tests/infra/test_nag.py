"""cdk-nag AwsSolutions checks: zero unacknowledged findings, each acknowledgement next to its resource with a reason."""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_s3 as s3
from cdk_nag import AwsSolutionsChecks

from infra import node as _node  # noqa: F401
from infra.nag import acknowledge
from tests.infra.conftest import Synthesized


def report(result: Synthesized) -> dict:
    (plugin,) = result.validation_report["pluginReports"]
    assert plugin["pluginName"] == "AwsSolutions"
    return plugin


def test_no_unacknowledged_findings(stage: Synthesized) -> None:
    plugin = report(stage)
    assert plugin["conclusion"] == "success"
    assert plugin["violations"] == []


def test_every_acknowledgement_sits_on_its_resource_with_a_reason(stage: Synthesized) -> None:
    suppressed = report(stage)["suppressedViolations"]
    assert suppressed, "the report lists what was acknowledged"
    for finding in suppressed:
        at = finding["acknowledgedAt"]
        assert at.count("/") >= 1, f"{finding['ruleName']} acknowledged at the stack or app level ({at})"
        assert all(c["constructPath"].startswith(at + "/") for c in finding["violatingConstructs"])
        assert len(finding["reason"]) >= 40, finding["reason"]
        assert finding["acknowledgedId"] == f"AwsSolutions::{finding['ruleName']}"


def test_production_needs_no_availability_or_deletion_exceptions(dev: Synthesized, prod: Synthesized) -> None:
    rules = lambda result: {f["ruleName"]: f["reason"] for f in report(result)["suppressedViolations"]}  # noqa: E731
    assert "AwsSolutions-RDS3" in rules(dev) and "AwsSolutions-RDS3" not in rules(prod)
    # Deletion protection is not in the instance's template in any stage (a failed first create could not roll back):
    # the acknowledgement names what sets it instead (test_database.py checks that it does, on in prod).
    for result in (dev, prod):
        assert "DeletionProtection custom resource" in rules(result)["AwsSolutions-RDS10"]


def _bucket_app(tmp_path: Path, *, acknowledge_rule: str | None) -> cdk.App:
    app = cdk.App(outdir=str(tmp_path))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks())
    stack = cdk.Stack(app, "Probe")
    bucket = s3.Bucket(stack, "Unlogged", enforce_ssl=True)  # no server access logs: AwsSolutions-S1
    if acknowledge_rule:
        acknowledge(bucket, acknowledge_rule, "a probe bucket that only exists inside this test, never deployed")
    return app


def test_a_finding_fails_synthesis(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        _bucket_app(tmp_path, acknowledge_rule="AwsSolutions-S10").synth()  # another rule's ack does not help


def test_an_acknowledgement_names_the_exact_finding(tmp_path: Path) -> None:
    assembly = _bucket_app(tmp_path, acknowledge_rule="AwsSolutions-S1").synth()
    assert assembly.get_stack_by_name("Probe").template["Resources"]

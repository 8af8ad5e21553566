"""checkov (CloudFormation policy checks, next to cdk-nag) on every synthesized template.

No failed check beyond the skips listed here, each with its reason; a skip that no longer matches a failure fails too.
checkov runs twice over both stages' templates and dev's with Aurora (``-c database=aurora``; copies in a temp dir): once as synthesized, to find what fails and
whether each skip is still needed, and once with the skips written into the templates' resource metadata
(``Metadata.checkov.skip``, with the reason as comment) on exactly the failing resources they cover.

checkov pins exact versions of boto3, packaging and networkx that conflict with constraints.txt, so it lives in its
own venv (``.local/checkov``, pinned by ``checkov-requirements.txt`` next to this file) unless the project's venv has
it; ``CHECKOV=<path>`` names another executable.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.infra.conftest import Synthesized

CHECKOV_VERSION = "3.3.30"
REPO_ROOT = Path(__file__).resolve().parents[2]
TOOL_VENV = REPO_ROOT / ".local" / "checkov"
REQUIREMENTS = Path(__file__).with_name("checkov-requirements.txt")

# The one place where checkov findings are accepted: check id -> why it does not apply here, or what compensates.
SKIPPED: dict[str, str] = {
    "CKV_AWS_111": (
        "the function roles (ingest, query, the three backfill stages, re-embedding's, the migrator) hold Lambda's VPC network-interface "
        "actions (ec2:CreateNetworkInterface, DeleteNetworkInterface, Assign/UnassignPrivateIpAddresses) on *, as "
        "AWSLambdaVPCAccessExecutionRole does: Lambda creates the functions' ENIs with them and they support no useful "
        "resource scoping (cdk-nag AwsSolutions-IAM5[Resource::*] acknowledged in infra/defaults.py python_function for "
        "the same reason); every other write names its resources "
        "(test_security.py::test_no_statement_allows_every_action_or_every_resource_beyond_unscopable_actions)"
    ),
    "CKV_AWS_115": (
        "the application functions have reserved concurrency sized to the RDS Proxy's pool (StageConfig "
        "reserved_concurrency); the migrator runs once per deployment that changes sql/ (or by hand for build-indexes) "
        "and takes one admin connection from the headroom outside the proxy's pool, and CDK's custom-resource handlers "
        "run during deployments only: a cap would protect nothing and take capacity from the account's unreserved pool"
    ),
    "CKV_AWS_116": (
        "a function's dead-letter queue only receives failed asynchronous invocations: ingest is polled from SQS (its "
        "failures go to the queue's own DLQ IngestDeadLetters after maxReceiveCount, with an alarm), query is invoked "
        "synchronously by API Gateway, the backfill stages and the re-embed function synchronously by their state machines "
        "(Retry + Catch), the "
        "migrator synchronously by the Provider framework; the others are CloudFormation custom-resource handlers whose "
        "failure fails the deployment, where a queued event would serve no one"
    ),
    "CKV_AWS_117": (
        "CDK's own deploy-time handlers, outside the VPC: BucketNotificationsHandler (writes the documents bucket's "
        "notification configuration), CustomS3AutoDeleteObjects (dev: empties the buckets when the stack is deleted), "
        "CustomVpcRestrictDefaultSG (removes the default security group's rules), the migrations Provider "
        "framework's onEvent (only invokes the migrator, which runs in the VPC) and AwsCustomResource's function "
        "(AWS679f53fac..., sets the instance's deletion protection with RDS ModifyDBInstance as the deploy's last "
        "step); they call AWS APIs and CloudFormation's "
        "response URL only, which the isolated subnets cannot reach without more endpoints; every application "
        "function runs in the VPC (test_functions_run_in_private_subnets_with_tracing_and_log_retention)"
    ),
    "CKV_AWS_118": (
        "dev's single-AZ t4g.micro (or, with -c database=aurora, its Serverless v2 writer and reader) runs without "
        "Enhanced Monitoring (its OS metrics cost more than they tell on a developer database); prod turns it on every "
        "60 s (StageConfig.db_monitoring_interval_seconds)"
    ),
    "CKV_AWS_149": (
        "the two database secrets (the RDS instance's or Aurora cluster's admin secret from from_generated_secret and "
        "DatabaseAppSecret, the functions' "
        "role) are encrypted with the AWS managed key aws/secretsmanager; who may read them is decided by IAM: the RDS "
        "Proxy, the migrator and the rotation apps only "
        "(test_only_the_proxy_and_the_maintenance_functions_read_the_database_secrets); a customer managed key would add a key "
        "policy but no reader less, in a single-account deployment"
    ),
    "CKV_AWS_157": (
        "dev's instance is single-AZ to save cost; db_multi_az switches it and prod has it on (cdk-nag "
        "AwsSolutions-RDS3 acknowledged in infra/constructs/database.py for dev only; "
        "test_production_needs_no_availability_or_deletion_exceptions)"
    ),
    "CKV_AWS_158": (
        "CloudWatch Logs encrypts every log group at rest with service-managed keys; the log groups here (functions, "
        "API access, reject flow logs, PostgreSQL, the state machine) are read through IAM (logs:GetLogEvents), which a "
        "customer managed key would not narrow; no compliance regime of this service asks for one"
    ),
    "CKV_AWS_173": (
        "the functions' environments hold configuration only: model names, the proxy endpoint and database user (the "
        "password is an IAM token made at connect time), secret ARNs and names, never a secret value "
        "(infra/config.py; test_models_and_secrets_are_granted_by_name); Lambda encrypts them at rest with its AWS "
        "managed key, and a customer managed key would protect nothing confidential"
    ),
    "CKV_AWS_18": (
        "IngestAccessLogs is the server-access-log bucket of the documents bucket (which logs to it, "
        "test_buckets_are_encrypted_private_tls_only_and_the_documents_bucket_is_versioned_and_logged); logging the "
        "log bucket would need yet another bucket, or log its own log deliveries in a loop"
    ),
    "CKV_AWS_21": (
        "IngestAccessLogs, the access-log bucket, is unversioned on purpose (infra/constructs/ingest.py): S3's log "
        "delivery writes each log object once under a new key, no application role may write or delete there, and "
        "objects expire after 365 days, so versions would only keep expired copies; the documents bucket is versioned. "
        "ReembedManifests (Bedrock embeddings only) holds re-embedding's manifests and batch results: each run writes new "
        "keys under its own run id and never overwrites one, the objects are rebuilt from the database by a new run and "
        "expire after 30 days (infra/constructs/reembed.py)"
    ),
    "CKV_AWS_27": (
        "both queues (the ingest queue and its DLQ) are encrypted at rest with SQS-managed keys (SqsManagedSseEnabled, "
        "infra/defaults.py secure_queue; test_queues_are_encrypted_tls_only_with_a_dead_letter_queue); this check only "
        "recognizes KmsMasterKeyId, and S3 cannot deliver notifications to a queue under the AWS managed aws/sqs key"
    ),
}

# CDK's own custom-resource handlers (singletons and the Provider framework's), by logical id.
CDK_HANDLERS = (
    "BucketNotificationsHandler",
    "CustomS3AutoDeleteObjectsCustomResourceProviderHandler",
    "CustomVpcRestrictDefaultSGCustomResourceProviderHandler",
    "MigrationsProviderframeworkonEvent",
    "AWS679f53fac002430cb0da5b7982bd2287",  # AwsCustomResource's (infra/constructs/deletion_protection.py)
)
APP_FUNCTIONS = (
    "IngestFunction",
    "QueryFunction",
    "BackfillSegmentFunction",
    "BackfillEmbedFunction",
    "BackfillExtractFunction",
    "ReembedFunction",
    "MigrationsFunction",
)
# Skips that hold for some resources only: CloudFormation logical ids containing one of these names. The same
# finding on any other resource (a new function, role, bucket...) fails the test, and each name must still match a
# failure.
SKIP_ONLY_ON: dict[str, tuple[str, ...]] = {
    "CKV_AWS_111": tuple(f"{name}RoleDefaultPolicy" for name in APP_FUNCTIONS),
    "CKV_AWS_115": ("MigrationsFunction",) + CDK_HANDLERS,
    "CKV_AWS_116": APP_FUNCTIONS + CDK_HANDLERS,
    "CKV_AWS_117": CDK_HANDLERS,
    "CKV_AWS_118": ("DatabaseInstance", "DatabaseClusterWriter", "DatabaseClusterReader"),
    "CKV_AWS_149": ("DatabaseAppSecret", "DatabaseInstanceSecret", "DatabaseClusterSecret"),
    "CKV_AWS_18": ("IngestAccessLogs",),
    "CKV_AWS_21": ("IngestAccessLogs", "ReembedManifests"),
}
# Skips that hold in these stages only.
SKIP_ONLY_IN: dict[str, frozenset[str]] = {
    "CKV_AWS_118": frozenset({"dev", "aurora"}),
    "CKV_AWS_157": frozenset({"dev"}),
}


@dataclass(frozen=True, order=True)
class Finding:
    check: str
    resource: str  # logical id
    name: str

    def __str__(self) -> str:
        return f"{self.check} {self.resource}: {self.name}"


@dataclass(frozen=True)
class Scan:
    version: str
    passed: int
    failed: tuple[Finding, ...]
    skipped: tuple[Finding, ...]


def covers(finding: Finding, stage: str) -> bool:
    """Whether a skip of SKIPPED covers this finding in this stage."""
    if finding.check not in SKIPPED or stage not in SKIP_ONLY_IN.get(finding.check, {stage}):
        return False
    names = SKIP_ONLY_ON.get(finding.check)
    return names is None or any(name in finding.resource for name in names)


def checkov_executable() -> Path | None:
    candidates = [os.environ.get("CHECKOV"), Path(sys.executable).with_name("checkov"), TOOL_VENV / "bin" / "checkov"]
    return next((Path(c) for c in candidates if c and Path(c).is_file()), None)


def run_checkov(executable: Path, templates: dict[str, Path], workdir: Path) -> dict[str, Scan]:
    """One checkov process over every stage's template (offline: no download, no update check, no config file)."""
    command = [str(executable), "--framework", "cloudformation", "--output", "json", "--compact", "--skip-download"]
    for template in templates.values():
        command += ["--file", str(template)]
    env = {**os.environ, "CKV_SKIP_PACKAGE_UPDATE_CHECK": "true", "HOME": str(workdir)}
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), f"checkov exited {done.returncode}: {done.stderr[-2000:]}"
    reports = json.loads(done.stdout)
    (report,) = [r for r in (reports if isinstance(reports, list) else [reports]) if r["check_type"] == "cloudformation"]
    assert report["summary"]["parsing_errors"] == 0, report["results"].get("parsing_errors")

    stage_of = {template.name: stage for stage, template in templates.items()}

    def findings(kind: str, stage: str) -> tuple[Finding, ...]:
        return tuple(
            sorted(
                Finding(r["check_id"], r["resource"].split(".", 1)[1], r["check_name"])
                for r in report["results"][kind]
                if stage_of[Path(r["file_path"]).name] == stage
            )
        )

    return {
        stage: Scan(
            version=report["summary"]["checkov_version"],
            passed=sum(stage_of[Path(r["file_path"]).name] == stage for r in report["results"]["passed_checks"]),
            failed=findings("failed_checks", stage),
            skipped=findings("skipped_checks", stage),
        )
        for stage in templates
    }


def with_skips(template: dict[str, Any], stage: str, failed: tuple[Finding, ...]) -> dict[str, Any]:
    """The template with a checkov skip (reason as comment) on each failing resource a skip covers."""
    template = copy.deepcopy(template)
    for finding in failed:
        if covers(finding, stage):
            metadata = template["Resources"][finding.resource].setdefault("Metadata", {})
            skips = metadata.setdefault("checkov", {}).setdefault("skip", [])
            skips.append({"id": finding.check, "comment": SKIPPED[finding.check]})
    return template


def write(folder: Path, templates: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, Path]:
    folder.mkdir()
    paths = {}
    for stage, (stack_name, template) in templates.items():
        paths[stage] = folder / f"{stack_name}.template.json"
        paths[stage].write_text(json.dumps(template, indent=1))
    return paths


@pytest.fixture(scope="module")
def scans(
    synthesized: dict[str, Synthesized], aurora: Synthesized, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[Scan, Scan]]:
    """Per stage (and "aurora": dev with Aurora): checkov on the template as synthesized, and on it with the skips."""
    synthesized = {**synthesized, "aurora": aurora}
    executable = checkov_executable()
    if executable is None:
        pytest.skip(
            f"checkov {CHECKOV_VERSION} is not installed: python3.11 -m venv {TOOL_VENV.relative_to(REPO_ROOT)} && "
            f"{TOOL_VENV.relative_to(REPO_ROOT)}/bin/pip install -r {REQUIREMENTS.relative_to(REPO_ROOT)}"
        )
    root = tmp_path_factory.mktemp("checkov")
    names = {stage: result.stack.stack_name + ("-aurora" if stage == "aurora" else "") for stage, result in synthesized.items()}
    raw = run_checkov(executable, write(root / "raw", {s: (names[s], r.data) for s, r in synthesized.items()}), root)
    with_skipped = {s: (names[s], with_skips(r.data, s, raw[s].failed)) for s, r in synthesized.items()}
    skipped = run_checkov(executable, write(root / "skipped", with_skipped), root)
    return {stage: (raw[stage], skipped[stage]) for stage in synthesized}


def test_templates_pass_checkov(
    stage: Synthesized, scans: dict[str, tuple[Scan, Scan]], record_property: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    check_scan(stage.stage, stage.stack.stack_name, scans, record_property, capsys)


def test_the_aurora_template_passes_checkov(
    aurora: Synthesized, scans: dict[str, tuple[Scan, Scan]], record_property: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    check_scan("aurora", f"{aurora.stack.stack_name} (database=aurora)", scans, record_property, capsys)


def check_scan(
    stage: str, title: str, scans: dict[str, tuple[Scan, Scan]], record_property: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    raw, scan = scans[stage]
    counts = {"passed": scan.passed, "failed": len(scan.failed), "skipped": len(scan.skipped)}
    for name, count in counts.items():
        record_property(f"checkov_{name}", count)  # in --junitxml reports
    with capsys.disabled():  # on the terminal, uncaptured
        print(f"\ncheckov {scan.version} {title}: " + ", ".join(f"{n} {c}" for c, n in counts.items()))

    assert scan.version == CHECKOV_VERSION, f"checkov {scan.version}: install {REQUIREMENTS.name}'s pins"
    assert [str(f) for f in scan.failed] == [], "fix the resource, or add the check to SKIPPED with the reason"
    # The skips went into the templates as checkov reads them: exactly the covered findings, nothing else changed.
    assert scan.skipped == tuple(f for f in raw.failed if covers(f, stage))
    assert scan.passed == raw.passed


def test_every_skip_is_still_needed(scans: dict[str, tuple[Scan, Scan]]) -> None:
    failed = [(stage, finding) for stage, (raw, _) in scans.items() for finding in raw.failed]
    stale = [check for check in SKIPPED if not any(f.check == check and covers(f, s) for s, f in failed)]
    stale += [
        f"{check} on {name}"
        for check, names in SKIP_ONLY_ON.items()
        for name in names
        if not any(f.check == check and name in f.resource and covers(f, s) for s, f in failed)
    ]
    stale += [
        f"{check} in {stage}"
        for check, stages in SKIP_ONLY_IN.items()
        for stage in sorted(stages)
        if not any(f.check == check and covers(f, s) for s, f in failed if s == stage)
    ]
    assert stale == [], "these skips match no failure any more: remove them"


def test_every_skip_has_a_specific_reason() -> None:
    for check, reason in SKIPPED.items():
        assert re.fullmatch(r"CKV2?_AWS_\d+", check), check
        assert len(reason) >= 100, (check, reason)
    assert set(SKIP_ONLY_ON) <= set(SKIPPED) and set(SKIP_ONLY_IN) <= set(SKIPPED)

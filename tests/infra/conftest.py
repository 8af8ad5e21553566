"""Each stage synthesized ONCE per session (offline: bundling skipped, cdk-nag on) and shared by the infra tests."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from infra import node as _node  # noqa: F401  (JSII_NODE before aws_cdk)
from infra.config import StageConfig
from infra.stack import MeetingRagStack, build
from infra.stages import STAGES

# CDK's own switch: assets are not bundled (no pip per synth); their hashes come from the sources.
SKIP_BUNDLING = {"aws:cdk:bundling-stacks": []}
# What a stage needs to synthesize at all: prod refuses to deploy alarms that reach nobody (constructs/monitoring.py).
REQUIRED_CONTEXT = {"prod": {"alarm_email": "alarms@example.com"}}


@dataclass
class Synthesized:
    stage: str
    config: StageConfig
    stack: MeetingRagStack
    outdir: Path
    template: Template
    data: dict[str, Any]  # the template as JSON

    @property
    def validation_report(self) -> dict[str, Any]:
        return json.loads((self.outdir / "validation-report.json").read_text())

    def resources(self, type_: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.data["Resources"].items() if v["Type"] == type_}

    def resource(self, type_: str) -> dict[str, Any]:
        found = list(self.resources(type_).values())
        assert len(found) == 1, f"expected one {type_}, found {len(found)}"
        return found[0]


def synthesize(stage: str, outdir: Path, context: dict[str, Any] | None = None) -> Synthesized:
    app = cdk.App(context={**SKIP_BUNDLING, **REQUIRED_CONTEXT.get(stage, {}), **(context or {})}, outdir=str(outdir))
    stack = build(app, stage)
    assembly = app.synth()  # cdk-nag runs here: an unacknowledged finding raises ValidationFailed
    data = assembly.get_stack_by_name(stack.stack_name).template
    return Synthesized(stage, stack.config, stack, outdir, Template.from_json(data), data)


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Synthesized]:
    return {stage: synthesize(stage, tmp_path_factory.mktemp(f"cdk-{stage}")) for stage in STAGES}


@pytest.fixture(scope="session")
def dev(synthesized: dict[str, Synthesized]) -> Synthesized:
    return synthesized["dev"]


@pytest.fixture(scope="session")
def prod(synthesized: dict[str, Synthesized]) -> Synthesized:
    return synthesized["prod"]


# Aurora PostgreSQL Serverless v2 instead of the RDS instance (infra/README.md, "Aurora"): dev's defaults (one reader,
# 0.5-4 ACU), and prod's with two readers and a larger range.
AURORA_CONTEXT = {"database": "aurora"}
AURORA_PROD_CONTEXT = {**AURORA_CONTEXT, "aurora_readers": "2", "aurora_min_acu": "1", "aurora_max_acu": "16"}


@pytest.fixture(scope="session")
def aurora(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize("dev", tmp_path_factory.mktemp("cdk-aurora"), AURORA_CONTEXT)


@pytest.fixture(scope="session")
def aurora_prod(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize("prod", tmp_path_factory.mktemp("cdk-aurora-prod"), AURORA_PROD_CONTEXT)


@pytest.fixture(params=sorted(STAGES))
def stage(request: pytest.FixtureRequest, synthesized: dict[str, Synthesized]) -> Synthesized:
    return synthesized[request.param]


def resolve_strings(value: Any) -> str:
    """A template value (string or Fn::Join of strings and references) as text, references as ``<Ref>``."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(resolve_strings(part) for part in parts)
    if isinstance(value, dict) and ("Ref" in value or "Fn::GetAtt" in value):
        target = value.get("Ref") or value["Fn::GetAtt"][0]
        return f"<{target}>"
    return json.dumps(value)

"""The database as a first deploy meets it: a proxy name of its own per stage, the engine pinned to its major version."""

from __future__ import annotations

import json
import re
from pathlib import Path

from infra.constructs.database import CFN_LINT_MAJOR_VERSION_CHECK
from tests.infra.conftest import Synthesized

# RDS Proxy names: 1-60 letters, digits and hyphens, a letter first, no "--" and no hyphen last; unique per
# account and region, so two stages side by side need two names.
PROXY_NAME = re.compile(r"^(?!.*--)[A-Za-z][A-Za-z0-9-]{0,59}(?<!-)$")


def test_each_stage_names_its_own_proxy(dev: Synthesized, prod: Synthesized) -> None:
    names = [result.resource("AWS::RDS::DBProxy")["Properties"].get("DBProxyName") for result in (dev, prod)]
    named = [name for name in names if name is not None]  # an unset name is CloudFormation's own, unique
    assert len(set(named)) == len(named)
    assert all(PROXY_NAME.fullmatch(name) for name in named), named
    assert names == ["meeting-rag-dev", "meeting-rag-prod"]
    for result in (dev, prod):
        proxy = next(iter(result.resources("AWS::RDS::DBProxy")))
        target_group = result.resource("AWS::RDS::DBProxyTargetGroup")["Properties"]
        assert target_group["DBProxyName"] == {"Ref": proxy}


def test_the_engine_is_pinned_to_its_major_version_and_moves_on_minor_versions(stage: Synthesized) -> None:
    # A minor version in the template next to AutoMinorVersionUpgrade falls behind the instance after the first
    # upgrade; the major version alone is what the template can promise (17: pgvector 0.8, RDS Proxy support).
    instance = stage.resource("AWS::RDS::DBInstance")["Properties"]
    assert instance["Engine"] == "postgres"
    assert instance["EngineVersion"] == "17"
    assert instance["AutoMinorVersionUpgrade"] is True
    assert stage.resource("AWS::RDS::DBParameterGroup")["Properties"]["Family"] == "postgres17"


def test_the_major_version_suppression_of_cfn_lint_is_on_the_instance_only_and_still_needed(
    stage: Synthesized, tmp_path: Path
) -> None:
    from cfnlint.api import ManualArgs, lint_file

    suppressed = {
        name: resource["Metadata"]["cfn-lint"]["config"]["ignore_checks"]
        for name, resource in stage.data["Resources"].items()
        if "cfn-lint" in resource.get("Metadata", {})
    }
    instance = next(iter(stage.resources("AWS::RDS::DBInstance")))
    assert suppressed == {instance: [CFN_LINT_MAJOR_VERSION_CHECK]}
    # Without it, cfn-lint flags the bare major version (and nothing else on the instance): when its data stops
    # doing so, this fails and the suppression goes.
    data = json.loads(json.dumps(stage.data))
    del data["Resources"][instance]["Metadata"]["cfn-lint"]
    path = tmp_path / "template.json"
    path.write_text(json.dumps(data))
    matches = lint_file(path, config=ManualArgs(regions=["us-east-1"]))
    on_instance = [m for m in matches if m.rule.id != "W3005" and instance in str(m.path)]
    assert [m.rule.id for m in on_instance] == [CFN_LINT_MAJOR_VERSION_CHECK]
    assert "'17'" in on_instance[0].message

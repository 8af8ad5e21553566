"""The database as a first deploy meets it: a proxy name of its own per stage, the engine pinned to its major version."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from infra.constructs.database import CFN_LINT_MAJOR_VERSION_CHECK
from tests.infra.conftest import Synthesized, resolve_strings
from tests.infra.test_security import as_list

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


# --- a first create that fails can roll back, and the next deploy can create again ------------------------------


def references(value: Any) -> set[str]:
    """The logical ids a template value refers to (Ref, Fn::GetAtt, Fn::Sub's ${...})."""
    if isinstance(value, dict):
        found = set()
        for key, item in value.items():
            if key == "Ref" and isinstance(item, str):
                found.add(item)
            elif key == "Fn::GetAtt":
                found.add(item[0] if isinstance(item, list) else item.split(".")[0])
            elif key == "Fn::Sub":
                text = item[0] if isinstance(item, list) else item
                found |= {name.split(".")[0] for name in re.findall(r"\$\{([^}!]+)\}", text)}
                found |= references(item[1] if isinstance(item, list) else {})
            else:
                found |= references(item)
        return found
    if isinstance(value, list):
        return set().union(*(references(item) for item in value)) if value else set()
    return set()


def created_before(data: dict[str, Any], logical_id: str) -> set[str]:
    """Every resource CloudFormation must create before ``logical_id`` (DependsOn and references, transitively)."""
    resources = data["Resources"]
    seen: set[str] = set()
    todo = [logical_id]
    while todo:
        resource = resources[todo.pop()]
        direct = set(as_list(resource.get("DependsOn", []))) | references(resource.get("Properties", {}))
        for name in direct & set(resources) - seen:
            seen.add(name)
            todo.append(name)
    return seen


def stack_specific(value: Any) -> bool:
    """Whether a name is made from this stack's id (a new stack, hence a retry, gets a new one)."""
    return "AWS::StackId" in references(value)


def deletion_protection(result: Synthesized) -> tuple[str, dict[str, Any]]:
    [(name, resource)] = [(n, r) for n, r in result.data["Resources"].items() if r["Type"] == "Custom::RdsDeletionProtection"]
    return name, resource


def test_no_database_name_outlives_a_failed_create_to_collide_with_the_retry(stage: Synthesized) -> None:
    # A retained instance (or the log groups RDS recreates for it) would hold a fixed name, and the next create of
    # the same name would fail: the names carry this stack's id, which a new stack does not share.
    instance = stage.resource("AWS::RDS::DBInstance")["Properties"]
    assert stack_specific(instance["DBInstanceIdentifier"])
    assert resolve_strings(instance["DBInstanceIdentifier"]).startswith(f"meeting-rag-{stage.stage}-")
    rds_logs = [r["Properties"]["LogGroupName"] for r in stage.resources("AWS::Logs::LogGroup").values()
                if "/aws/rds/instance/" in resolve_strings(r["Properties"].get("LogGroupName", ""))]  # fmt: skip
    assert len(rds_logs) == 2 and all(stack_specific(name) for name in rds_logs)
    assert all(resolve_strings(name).startswith("/aws/rds/instance/meeting-rag-") for name in rds_logs)
    # Secrets keep generated names. (The proxy and the dashboard keep fixed ones: a rollback deletes them.)
    secrets = stage.resources("AWS::SecretsManager::Secret")
    assert len(secrets) == 2 and all("Name" not in s["Properties"] for s in secrets.values())


def test_the_instance_is_kept_on_delete_and_replacement_but_not_after_a_failed_create(
    dev: Synthesized, prod: Synthesized
) -> None:
    instance = next(iter(prod.resources("AWS::RDS::DBInstance").values()))
    # RetainExceptOnCreate: a stack deletion or a replacement keeps it, the rollback of the create that made it deletes it.
    assert (instance["DeletionPolicy"], instance["UpdateReplacePolicy"]) == ("RetainExceptOnCreate", "Retain")
    dev_instance = next(iter(dev.resources("AWS::RDS::DBInstance").values()))
    assert (dev_instance["DeletionPolicy"], dev_instance["UpdateReplacePolicy"]) == ("Delete", "Delete")


def test_deletion_protection_is_turned_on_after_everything_else_was_created(stage: Synthesized) -> None:
    # On the instance from the start, it would block the rollback of a create that fails later (ROLLBACK_FAILED, the
    # instance left behind). So the template leaves it out and a custom resource sets it as the create's last step.
    data = stage.data
    instance_id = next(iter(stage.resources("AWS::RDS::DBInstance")))
    assert "DeletionProtection" not in data["Resources"][instance_id]["Properties"]
    name, protection = deletion_protection(stage)
    call = json.loads(resolve_strings(protection["Properties"]["Create"]))
    assert (call["service"], call["action"]) == ("RDS", "modifyDBInstance")
    assert call["parameters"] == {
        "DBInstanceIdentifier": f"<{instance_id}>",
        "DeletionProtection": stage.config.db_deletion_protection,
        "ApplyImmediately": True,
    }
    assert json.loads(resolve_strings(protection["Properties"]["Update"]))["parameters"] == call["parameters"]
    assert "Delete" not in protection["Properties"]  # deleting the stack leaves the protection on
    # Created after every other resource: whatever fails, it has not run yet and the rollback deletes the instance.
    others = set(data["Resources"]) - {name}
    assert created_before(data, name) == others


def test_the_protection_call_may_modify_this_instance_only(stage: Synthesized) -> None:
    name, protection = deletion_protection(stage)
    provider = protection["Properties"]["ServiceToken"]["Fn::GetAtt"][0]
    role = stage.data["Resources"][provider]["Properties"]["Role"]["Fn::GetAtt"][0]
    instance_id = next(iter(stage.resources("AWS::RDS::DBInstance")))
    grants = [
        (s["Action"], resolve_strings(s["Resource"]))
        for policy in stage.resources("AWS::IAM::Policy").values()
        if {"Ref": role} in policy["Properties"]["Roles"]
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    arn = f"arn:<AWS::Partition>:rds:<AWS::Region>:<AWS::AccountId>:db:<{instance_id}>"
    assert grants == [("rds:ModifyDBInstance", arn)]

"""The network as EC2 will take it: no rule defined twice, only the endpoints the code calls, a NAT per AZ in prod."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Annotations, Match

from tests.infra.conftest import Synthesized, resolve_strings, synthesize

PROTOCOL_NAMES = {"6": "tcp", "17": "udp", "1": "icmp", "58": "icmpv6"}
PEER_KEYS = (
    "CidrIp", "CidrIpv6", "SourceSecurityGroupId", "DestinationSecurityGroupId", "SourcePrefixListId", "DestinationPrefixListId",
)  # fmt: skip


def _group(value: Any) -> str:
    """A security group reference (``Ref`` or ``Fn::GetAtt [id, GroupId]``) as the group's logical id."""
    if isinstance(value, dict) and "Ref" in value:
        return value["Ref"]
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return value["Fn::GetAtt"][0]
    return resolve_strings(value)


def _port(value: Any, resources: dict[str, Any]) -> int | str | None:
    """A port as EC2 sees it: ``Fn::GetAtt [instance, Endpoint.Port]`` is the instance's configured port."""
    if value is None:
        return None
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        target, attribute = value["Fn::GetAtt"]
        if attribute == "Endpoint.Port" and "Port" in resources[target]["Properties"]:
            return int(resources[target]["Properties"]["Port"])
        return resolve_strings(value)
    return int(value)


def _rule_key(group: str, direction: str, rule: dict[str, Any], resources: dict[str, Any]) -> tuple[Any, ...]:
    """What EC2 compares to call a rule a duplicate: group, direction, protocol, port range, peer (not the description)."""
    protocol = str(rule["IpProtocol"]).lower()
    protocol = PROTOCOL_NAMES.get(protocol, protocol)
    ports = (None, None) if protocol == "-1" else (_port(rule.get("FromPort"), resources), _port(rule.get("ToPort"), resources))
    peers = [(key.replace("Source", "").replace("Destination", ""), rule[key]) for key in PEER_KEYS if key in rule]
    assert len(peers) == 1, f"{group}: a rule needs exactly one peer, found {peers}"
    kind, peer = peers[0]
    peer = _group(peer) if kind == "SecurityGroupId" else resolve_strings(peer)
    return (group, direction, protocol, *ports, kind, peer)


def security_group_rules(data: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Every rule of the template: inline in AWS::EC2::SecurityGroup and standalone Ingress/Egress resources."""
    resources = data["Resources"]
    rules = []
    for name, resource in resources.items():
        props = resource.get("Properties", {})
        if resource["Type"] == "AWS::EC2::SecurityGroup":
            rules += [_rule_key(name, "ingress", rule, resources) for rule in props.get("SecurityGroupIngress", [])]
            rules += [_rule_key(name, "egress", rule, resources) for rule in props.get("SecurityGroupEgress", [])]
        elif resource["Type"] == "AWS::EC2::SecurityGroupIngress":
            rules.append(_rule_key(_group(props["GroupId"]), "ingress", props, resources))
        elif resource["Type"] == "AWS::EC2::SecurityGroupEgress":
            rules.append(_rule_key(_group(props["GroupId"]), "egress", props, resources))
    return rules


def duplicate_rules(data: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [rule for rule, count in Counter(security_group_rules(data)).items() if count > 1]


def test_no_security_group_rule_is_defined_twice(stage: Synthesized) -> None:
    # EC2 refuses a second identical rule (InvalidPermission.Duplicate): the stack would fail to create.
    rules = security_group_rules(stage.data)
    assert len(rules) > 10
    assert duplicate_rules(stage.data) == []


def test_the_duplicate_check_sees_a_literal_port_and_the_instance_port_as_the_same_rule(stage: Synthesized) -> None:
    # The proxy's target wiring names the instance's port as Fn::GetAtt Endpoint.Port: a rule written with the
    # literal port is the same rule to EC2, and the check must say so (the bug this guards against).
    data = {"Resources": dict(stage.data["Resources"])}
    name, rule = next(
        (n, r) for n, r in data["Resources"].items()
        if r["Type"] == "AWS::EC2::SecurityGroupIngress" and isinstance(r["Properties"]["FromPort"], dict)
    )  # fmt: skip
    instance = rule["Properties"]["FromPort"]["Fn::GetAtt"][0]
    port = int(data["Resources"][instance]["Properties"]["Port"])
    literal = {**rule, "Properties": {**rule["Properties"], "FromPort": port, "ToPort": port, "Description": "another"}}
    data["Resources"][f"{name}Literal"] = literal
    assert len(duplicate_rules(data)) == 1


def test_the_proxy_and_the_instance_are_connected_once_on_the_instance_port(stage: Synthesized) -> None:
    resources = stage.data["Resources"]
    instance = next(iter(stage.resources("AWS::RDS::DBInstance")))
    port = int(resources[instance]["Properties"]["Port"])
    proxy_sg = _group(stage.resource("AWS::RDS::DBProxy")["Properties"]["VpcSecurityGroupIds"][0])
    instance_sg = _group(resources[instance]["Properties"]["VPCSecurityGroups"][0])
    rules = security_group_rules(stage.data)
    assert rules.count((instance_sg, "ingress", "tcp", port, port, "SecurityGroupId", proxy_sg)) == 1
    assert rules.count((proxy_sg, "egress", "tcp", port, port, "SecurityGroupId", instance_sg)) == 1


# --- endpoints and NAT ------------------------------------------------------------------------------


def endpoint_services(result: Synthesized) -> set[str]:
    return {
        resolve_strings(e["Properties"]["ServiceName"]).split(".")[-1] for e in result.resources("AWS::EC2::VPCEndpoint").values()
    }


def test_vpc_endpoints_are_exactly_the_services_the_code_calls(dev: Synthesized, prod: Synthesized) -> None:
    # S3 (gateway, free): documents. SQS: the ingest function's ChangeMessageVisibility and SendMessage
    # (rag.queue_retry). Secrets Manager: the proxy, the rotations, the migrator, the OpenAI key.
    # Bedrock only where the embeddings come from Bedrock (its control plane: the re-embed function's batch inference
    # jobs). Step Functions (the ingest function starts the backfill)
    # only where no NAT reaches it. No Logs (Lambda ships logs outside the VPC).
    assert endpoint_services(dev) == {"s3", "sqs", "secretsmanager", "bedrock-runtime", "bedrock", "states"}
    assert endpoint_services(prod) == {"s3", "sqs", "secretsmanager"}
    for result in (dev, prod):
        bedrock = {"bedrock-runtime", "bedrock"} if result.config.embedding_provider == "bedrock" else set()
        states = set() if result.config.needs_internet_egress else {"states"}
        assert endpoint_services(result) == {"s3", "sqs", "secretsmanager"} | bedrock | states
        assert result.resource("AWS::EC2::FlowLog")["Properties"]["TrafficType"] == "REJECT"


def _availability_zone(result: Synthesized, subnet: dict[str, Any]) -> str:
    return resolve_strings(result.data["Resources"][subnet["Ref"]]["Properties"]["AvailabilityZone"])


def test_production_has_one_nat_gateway_per_availability_zone(dev: Synthesized, prod: Synthesized) -> None:
    assert dev.resources("AWS::EC2::NatGateway") == {}
    assert prod.config.nat_gateway_per_az
    resources = prod.data["Resources"]
    function_subnets = {n: s for n, s in prod.resources("AWS::EC2::Subnet").items() if n.startswith("NetworkVpcfunctionsSubnet")}
    zones = {resolve_strings(s["Properties"]["AvailabilityZone"]) for s in function_subnets.values()}
    nats = prod.resources("AWS::EC2::NatGateway")
    assert len(zones) == prod.config.max_azs == 2
    assert len(nats) == len(zones)
    assert {_availability_zone(prod, nat["Properties"]["SubnetId"]) for nat in nats.values()} == zones
    # Each AZ's functions leave through their own AZ's NAT: losing one AZ leaves the other's path to OpenAI.
    associations = [a["Properties"] for a in prod.resources("AWS::EC2::SubnetRouteTableAssociation").values()]
    for name in function_subnets:
        (table,) = [a["RouteTableId"]["Ref"] for a in associations if a["SubnetId"] == {"Ref": name}]
        (route,) = [
            r["Properties"] for r in prod.resources("AWS::EC2::Route").values()
            if r["Properties"]["RouteTableId"] == {"Ref": table} and r["Properties"].get("DestinationCidrBlock") == "0.0.0.0/0"
        ]  # fmt: skip
        nat = resources[route["NatGatewayId"]["Ref"]]["Properties"]
        assert _availability_zone(prod, nat["SubnetId"]) == _availability_zone(prod, {"Ref": name})


# --- where the interface endpoints go ---------------------------------------------------------------------------

ACCOUNT, REGION = "111111111111", "us-east-1"
REGION_AZS = ["us-east-1a", "us-east-1b", "us-east-1c"]


def endpoint_zones(result: Synthesized) -> dict[str, set[str]]:
    """Each interface endpoint's service (last part of its name) -> the AZs of its subnets."""
    return {
        resolve_strings(e["Properties"]["ServiceName"]).split(".")[-1]: {
            _availability_zone(result, subnet) for subnet in e["Properties"]["SubnetIds"]
        }
        for e in result.resources("AWS::EC2::VPCEndpoint").values()
        if e["Properties"]["VpcEndpointType"] == "Interface"
    }


def synthesize_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, context: dict[str, Any] | None = None) -> Synthesized:
    # What `cdk deploy` does: the CLI sets the account and region of the credentials, then runs the app.
    monkeypatch.setenv("CDK_DEFAULT_ACCOUNT", ACCOUNT)
    monkeypatch.setenv("CDK_DEFAULT_REGION", REGION)
    return synthesize("dev", tmp_path, context)


def missing_context(result: Synthesized) -> dict[str, str]:
    """The lookups the synthesis left for the CDK CLI: key -> provider."""
    manifest = json.loads((result.outdir / "manifest.json").read_text())
    return {m["key"]: m["provider"] for m in manifest.get("missing", [])}


def test_an_environment_agnostic_synthesis_cannot_check_the_zones_and_says_so(dev: Synthesized) -> None:
    # No account and region (a unit synthesis, `cdk synth` without credentials): nothing to look up, the endpoints
    # take every function subnet, and the stack warns that a deploy must come from a synthesis with an environment.
    zones = endpoint_zones(dev)
    assert set(zones) == {"sqs", "secretsmanager", "bedrock-runtime", "bedrock", "states"}
    assert all(len(azs) == dev.config.max_azs for azs in zones.values()), zones
    Annotations.from_stack(dev.stack).has_warning(
        "/MeetingRag-dev/Network", Match.string_like_regexp("availability zones of the interface endpoints.*not checked")
    )


def test_offline_with_an_environment_the_zone_lookups_are_left_to_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Offline, a lookup has no answer: CDK records it as missing context and synthesizes with placeholders; the CDK
    # CLI (cdk synth/deploy) performs the lookups, stores them in cdk.context.json and synthesizes again.
    result = synthesize_in(tmp_path, monkeypatch)
    lookups = missing_context(result)
    services = {key.rsplit(".", 1)[-1] for key, provider in lookups.items() if provider == "endpoint-service-availability-zones"}
    assert services == {"sqs", "secretsmanager", "bedrock-runtime", "bedrock", "states"}
    assert f"availability-zones:account={ACCOUNT}:region={REGION}" in lookups


def test_the_bedrock_endpoint_goes_only_to_zones_that_offer_the_service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the answers the CLI's lookups give (cdk.context.json): Bedrock Runtime is not offered in us-east-1a
    first = synthesize_in(tmp_path / "first", monkeypatch)
    offered = {"sqs": REGION_AZS, "secretsmanager": REGION_AZS, "bedrock-runtime": REGION_AZS[1:], "bedrock": REGION_AZS,
               "states": REGION_AZS}  # fmt: skip
    context = {
        key: (REGION_AZS if provider == "availability-zones" else offered[key.rsplit(".", 1)[-1]])
        for key, provider in missing_context(first).items()
    }
    # WHEN the app is synthesized with them
    result = synthesize_in(tmp_path / "second", monkeypatch, context)
    # THEN the VPC spans the first two AZs, and the endpoint of Bedrock only the one of them that offers it
    assert missing_context(result) == {}
    assert endpoint_zones(result) == {"sqs": {"us-east-1a", "us-east-1b"}, "secretsmanager": {"us-east-1a", "us-east-1b"},
                                      "bedrock-runtime": {"us-east-1b"}, "bedrock": {"us-east-1a", "us-east-1b"},
                                      "states": {"us-east-1a", "us-east-1b"}}  # fmt: skip
    Annotations.from_stack(result.stack).has_no_warning("/MeetingRag-dev/Network", Match.any_value())

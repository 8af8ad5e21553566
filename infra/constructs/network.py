"""The VPC: private isolated subnets for the database and the Lambdas, VPC endpoints for the AWS services they call.

A NAT gateway (and public subnets for it) exists only when a provider outside AWS (OpenAI) is configured: one per AZ
with ``nat_gateway_per_az`` (prod), else one for all. Costs and choices: infra/README.md, "Network and cost".

An interface endpoint fails to create in an AZ where its service is not offered (Bedrock Runtime is not in every AZ).
With an account and region (``cdk deploy`` sets them from the credentials) CDK looks up the AZs each service is offered
in and the endpoint goes only to those of the VPC's AZs; an environment-agnostic synthesis cannot look up and warns.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from infra.config import StageConfig
from infra.defaults import DATABASE_SUBNETS, FUNCTION_SUBNETS, VPC_CIDR, log_group

# Interface endpoints for what is called from inside the VPC (S3 is a free gateway endpoint), about $7.30 a month
# per AZ each. SQS: the ingest function's ChangeMessageVisibility and SendMessage (rag.queue_retry). Secrets Manager:
# the proxy, the rotations, the migrator, the OpenAI key. Bedrock: embeddings and the chat model, where configured;
# Bedrock Agent Runtime: the query function's Rerank calls, with the Bedrock reranker. Bedrock (the control plane):
# the re-embed function's batch inference jobs, with Bedrock embeddings (constructs/reembed.py). Step Functions: the ingest
# function's start of the backfill (rag.backfill_trigger), where no NAT reaches it (a few calls per batch: through a
# NAT they cost nothing worth an endpoint). Not CloudWatch Logs (Lambda ships logs from outside the VPC).
INTERFACE_ENDPOINTS: dict[str, ec2.InterfaceVpcEndpointAwsService] = {
    "Sqs": ec2.InterfaceVpcEndpointAwsService.SQS,
    "SecretsManager": ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER,
    "BedrockRuntime": ec2.InterfaceVpcEndpointAwsService.BEDROCK_RUNTIME,
    "BedrockAgentRuntime": ec2.InterfaceVpcEndpointAwsService.BEDROCK_AGENT_RUNTIME,
    "Bedrock": ec2.InterfaceVpcEndpointAwsService.BEDROCK,
    "StepFunctions": ec2.InterfaceVpcEndpointAwsService.STEP_FUNCTIONS,
}


class Network(Construct):
    def __init__(self, scope: Construct, id: str, *, config: StageConfig) -> None:
        super().__init__(scope, id)
        subnets = [
            ec2.SubnetConfiguration(name=DATABASE_SUBNETS, subnet_type=ec2.SubnetType.PRIVATE_ISOLATED, cidr_mask=24),
        ]
        if config.needs_internet_egress:
            subnets += [
                ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24),
                ec2.SubnetConfiguration(name=FUNCTION_SUBNETS, subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=22),
            ]
        else:
            subnets.append(
                ec2.SubnetConfiguration(name=FUNCTION_SUBNETS, subnet_type=ec2.SubnetType.PRIVATE_ISOLATED, cidr_mask=22)
            )
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(VPC_CIDR),
            max_azs=config.max_azs,
            # One NAT per AZ (nat_gateway_per_az): each AZ's functions leave through their own, so OpenAI stays
            # reachable when an AZ (or its NAT) fails; else one NAT shared by all AZs.
            nat_gateways=(config.max_azs if config.nat_gateway_per_az else 1) if config.needs_internet_egress else 0,
            subnet_configuration=subnets,
            restrict_default_security_group=True,
            flow_logs={
                "RejectedTraffic": ec2.FlowLogOptions(
                    destination=ec2.FlowLogDestination.to_cloud_watch_logs(log_group(self, "FlowLogs", config)),
                    traffic_type=ec2.FlowLogTrafficType.REJECT,
                )
            },
        )
        self.function_subnets = ec2.SubnetSelection(subnet_group_name=FUNCTION_SUBNETS)
        self.database_subnets = ec2.SubnetSelection(subnet_group_name=DATABASE_SUBNETS)

        # In isolated subnets there is no route out of the VPC: all-outbound reaches only the proxy and the
        # endpoints (the S3 gateway endpoint has no security group to name). With OpenAI, the NAT is the way out.
        self.functions_sg = ec2.SecurityGroup(self, "FunctionsSg", vpc=self.vpc, description="meeting-rag Lambdas")
        endpoints_sg = ec2.SecurityGroup(
            self, "EndpointsSg", vpc=self.vpc, description="VPC interface endpoints", allow_all_outbound=False
        )
        # Any function of the VPC (ours, the secret rotation, the custom resources) may call the endpoints.
        endpoints_sg.add_ingress_rule(ec2.Peer.ipv4(VPC_CIDR), ec2.Port.tcp(443), "HTTPS from the VPC")

        self.vpc.add_gateway_endpoint("S3Endpoint", service=ec2.GatewayVpcEndpointAwsService.S3, subnets=[self.function_subnets])
        endpoints = dict(INTERFACE_ENDPOINTS)
        if not config.uses_bedrock:
            del endpoints["BedrockRuntime"]  # about $15 a month (two AZs) for a service this stage never calls
        if not config.uses_bedrock_rerank:
            del endpoints["BedrockAgentRuntime"]  # Rerank is its only caller
        if not config.reembeds_on_bedrock:
            del endpoints["Bedrock"]  # batch inference jobs are its only calls
        if config.needs_internet_egress:
            del endpoints["StepFunctions"]  # the NAT reaches it
        # The lookup (an EC2 DescribeVpcEndpointServices by the CDK CLI, kept in cdk.context.json) needs the
        # account and region; offline it is recorded as missing context and the CLI performs it before deploying.
        stack = cdk.Stack.of(self)
        look_up_zones = not (cdk.Token.is_unresolved(stack.account) or cdk.Token.is_unresolved(stack.region))
        for name, service in endpoints.items():
            self.vpc.add_interface_endpoint(
                f"{name}Endpoint",
                service=service,
                subnets=self.function_subnets,
                security_groups=[endpoints_sg],
                private_dns_enabled=True,
                open=False,  # the rule above, with a literal CIDR (CDK's own uses a token cdk-nag cannot read)
                # Functions in an AZ without the endpoint reach it in another AZ (its private DNS name).
                lookup_supported_azs=look_up_zones,
            )
        if not look_up_zones:
            cdk.Annotations.of(self).add_warning_v2(
                "meeting-rag:endpoint-zones-unchecked",
                "the availability zones of the interface endpoints (" + ", ".join(endpoints) + ") are not checked: "
                "this synthesis has no account and region, and an endpoint fails to create in an AZ that does not offer "
                "its service. Deploy with cdk deploy (it sets the account and region of your credentials and looks "
                "the zones up), or set CDK_DEFAULT_ACCOUNT and CDK_DEFAULT_REGION",
            )

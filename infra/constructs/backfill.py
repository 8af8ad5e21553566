"""The backfill: three stage Lambdas, the Step Functions machine that loops them, an EventBridge schedule."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config import StageConfig
from infra.constructs.backfill_state_machine import STAGES, BackfillStateMachine
from infra.constructs.database import Database
from infra.constructs.network import Network
from infra.defaults import function_code, python_function
from infra.permissions import grant_embedding_and_llm

STAGE_DESCRIPTIONS = {
    "segment": "Backfill stage: meetings -> topic segments (raw_ingested -> segmented)",
    "embed": "Backfill stage: chunk and segment vectors (segmented -> embedded)",
    "extract": "Backfill stage: decisions, risks, opportunities, tasks (embedded -> extracted)",
}


class Backfill(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: StageConfig,
        network: Network,
        database: Database,
        layer: lambda_.ILayerVersion,
    ) -> None:
        super().__init__(scope, id)
        code = function_code("backfill")
        self.functions: dict[str, lambda_.Function] = {}
        for stage in STAGES:
            function = python_function(
                self,
                f"{stage.capitalize()}Function",
                config=config,
                description=STAGE_DESCRIPTIONS[stage],
                code=code,
                handler=f"handler.{stage}_handler",
                service=f"backfill-{stage}",
                layer=layer,
                vpc=network.vpc,
                security_group=network.functions_sg,
                memory_mb=config.backfill_memory_mb,
                timeout=cdk.Duration.seconds(config.backfill_timeout_seconds),
                environment={"RAG_DATABASE_IAM_URL": database.iam_url},
            )
            database.grant_connect(function)
            grant_embedding_and_llm(self, function, config)
            self.functions[stage] = function

        machine = BackfillStateMachine(
            self,
            "Machine",
            segment=self.functions["segment"],
            embed=self.functions["embed"],
            extract=self.functions["extract"],
            max_iterations=config.backfill_max_iterations,
        )
        self.machine = machine
        self.state_machine: sfn.StateMachine = machine.state_machine
        # The construct fixes its log retention (a month): the stage's retention applies here too.
        machine.log_group.node.default_child.add_property_override("RetentionInDays", config.log_retention_days)

        self.schedule = events.Rule(
            self,
            "Schedule",
            description="Starts the backfill state machine on a schedule",
            schedule=events.Schedule.rate(cdk.Duration.minutes(config.backfill_schedule_minutes)),
            enabled=config.backfill_schedule_enabled,
            targets=[
                targets.SfnStateMachine(
                    self.state_machine,
                    input=events.RuleTargetInput.from_object(
                        {
                            "stages": list(STAGES),
                            "batch_size": config.backfill_batch_size,
                            "max_iterations": config.backfill_max_iterations,
                        }
                    ),
                )
            ],
        )

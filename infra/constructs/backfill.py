"""The backfill: three stage Lambdas, the Step Functions machine that loops them, an EventBridge schedule,
and the start after ingest (the ingest function starts the machine once it stored documents)."""

from __future__ import annotations

import json

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.constructs.backfill_state_machine import STAGES, BackfillStateMachine
from infra.defaults import function_code
from infra.resources import AppResources
from rag.knowledge import EXTRACTED

CHAT_MODEL_STAGES = ("segment", "extract")  # the stages that call the chat model when one is configured
STAGE_DESCRIPTIONS = {
    "segment": "Backfill stage: meetings -> topic segments (raw_ingested -> segmented)",
    "embed": "Backfill stage: chunk and segment vectors (segmented -> embedded)",
    "extract": f"Backfill stage: {', '.join(kind.table for kind in EXTRACTED)} (embedded -> extracted)",
}


class Backfill(Construct):
    def __init__(self, scope: Construct, id: str, *, resources: AppResources, reembed: sfn.IStateMachine | None = None) -> None:
        """``reembed``: the re-embed machine a successful run starts (constructs/reembed.py), where the stage has one."""
        super().__init__(scope, id)
        config = resources.config
        code = function_code("backfill")
        self.functions: dict[str, lambda_.Function] = {}
        for stage in STAGES:
            self.functions[stage] = resources.app_function(
                self,
                f"{stage.capitalize()}Function",
                description=STAGE_DESCRIPTIONS[stage],
                code=code,
                handler=f"handler.{stage}_handler",
                service=f"backfill-{stage}",
                memory_mb=config.backfill_memory_mb,
                timeout=cdk.Duration.seconds(config.backfill_timeout_seconds),
                reserved_concurrency=config.backfill_reserved_concurrency,
                chat_model=stage in CHAT_MODEL_STAGES,
            )

        machine = BackfillStateMachine(
            self,
            "Machine",
            segment=self.functions["segment"],
            embed=self.functions["embed"],
            extract=self.functions["extract"],
            max_iterations=config.backfill_max_iterations,
            # Overlapping executions (schedule and manual): one that finds everything held by the other waits, then moves on.
            idle_wait=cdk.Duration.seconds(config.backfill_idle_wait_seconds),
            reembed=reembed,
        )
        self.machine = machine
        self.state_machine: sfn.StateMachine = machine.state_machine
        # The construct fixes its log retention (a month): the stage's retention applies here too.
        log_group = machine.log_group.node.default_child
        assert isinstance(log_group, cdk.CfnResource)  # a LogGroup's default child is its AWS::Logs::LogGroup
        log_group.add_property_override("RetentionInDays", config.log_retention_days)

        # What the schedule starts, and the ingest function after it stored documents (rag.backfill_trigger).
        self.execution_input = {
            "stages": list(STAGES),
            "batch_size": config.backfill_batch_size,
            "max_iterations": config.backfill_max_iterations,
        }
        self.schedule = events.Rule(
            self,
            "Schedule",
            description="Starts the backfill state machine on a schedule",
            schedule=events.Schedule.rate(cdk.Duration.minutes(config.backfill_schedule_minutes)),
            enabled=config.backfill_schedule_enabled,
            targets=[
                targets.SfnStateMachine(
                    self.state_machine,
                    input=events.RuleTargetInput.from_object(self.execution_input),
                )
            ],
        )

    def started_after_ingest(self, function: lambda_.Function) -> None:
        """``function`` (the ingest) starts this machine once it stored documents, when no execution runs:
        it may list this machine's executions and start one, nothing else of Step Functions."""
        function.add_environment("RAG_BACKFILL_STATE_MACHINE_ARN", self.state_machine.state_machine_arn)
        function.add_environment("RAG_BACKFILL_EXECUTION_INPUT", json.dumps(self.execution_input, sort_keys=True))
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["states:ListExecutions", "states:StartExecution"],
                resources=[self.state_machine.state_machine_arn],
            )
        )

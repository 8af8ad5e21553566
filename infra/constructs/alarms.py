"""What every alarm of ``Monitoring`` shares: the period, the runbook's form, and the topic as its action."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from constructs import Construct

PERIOD = Duration.minutes(5)
RUNBOOK = "Runbook: infra/README.md, 'When an alarm fires'."


def runbook(*lines: str) -> str:
    """An alarm description: what it means, then numbered steps, then where the long version is."""
    return "\n".join([*lines, RUNBOOK])


class AlarmSet:
    """The alarms of one construct: each created in its scope (its logical id stays ``<scope><id>``) with the action."""

    def __init__(self, scope: Construct, action: cw.IAlarmAction) -> None:
        self.scope = scope
        self.action = action
        self.alarms: list[cw.Alarm] = []

    def add(
        self,
        id: str,
        metric: cw.IMetric,
        threshold: float,
        description: str,
        periods: int = 1,
        *,
        comparison: cw.ComparisonOperator = cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        missing: cw.TreatMissingData = cw.TreatMissingData.NOT_BREACHING,
    ) -> cw.Alarm:
        created = cw.Alarm(
            self.scope,
            id,
            metric=metric,
            threshold=threshold,
            evaluation_periods=periods,
            comparison_operator=comparison,
            treat_missing_data=missing,
            alarm_description=description,
        )
        return self.register(created)

    def register(self, created: cw.Alarm) -> cw.Alarm:
        """An alarm built apart (its own properties): the topic as its action, listed with the others."""
        created.add_alarm_action(self.action)
        self.alarms.append(created)
        return created

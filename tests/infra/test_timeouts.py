"""Every function's timeout fits what invokes it, on the synthesized templates of both stages.

Invariants rather than numbers: whichever function or trigger is added later, a queue must not hand a message to
a second consumer while the first still works on it, an API must not give up before its function does, and a state
machine must let a stage finish.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.infra.conftest import Synthesized, resolve_strings

# An HTTP API's Lambda integration gives up after 30 s at most.
HTTP_API_INTEGRATION_SECONDS = 30
# AWS: a queue's visibility timeout at least six times its function's timeout, so throttled retries fit.
SQS_VISIBILITY_FACTOR = 6


def timeouts(stage: Synthesized) -> dict[str, int]:
    return {name: int(fn["Properties"].get("Timeout", 3)) for name, fn in stage.resources("AWS::Lambda::Function").items()}


def target(value: dict[str, Any]) -> str:
    return value.get("Ref") or value["Fn::GetAtt"][0]


def test_a_queue_hides_a_message_longer_than_its_function_may_run(stage: Synthesized) -> None:
    queues = stage.resources("AWS::SQS::Queue")
    mappings = stage.resources("AWS::Lambda::EventSourceMapping").values()
    assert mappings
    for mapping in mappings:
        props = mapping["Properties"]
        queue = queues[target(props["EventSourceArn"])]["Properties"]
        function_timeout = timeouts(stage)[target(props["FunctionName"])]
        assert queue["VisibilityTimeout"] >= SQS_VISIBILITY_FACTOR * function_timeout


def test_an_api_waits_as_long_as_its_function_may_run(stage: Synthesized) -> None:
    integrations = stage.resources("AWS::ApiGatewayV2::Integration").values()
    assert integrations
    for integration in integrations:
        props = integration["Properties"]
        function_timeout = timeouts(stage)[target(props["IntegrationUri"])]
        waits = props.get("TimeoutInMillis", HTTP_API_INTEGRATION_SECONDS * 1000) / 1000
        assert function_timeout < waits <= HTTP_API_INTEGRATION_SECONDS  # the function's own error reaches the caller


def test_the_backfill_machine_lets_every_stage_finish(stage: Synthesized) -> None:
    # The re-embed machine too, where the stage has one (Bedrock embeddings): its function's 15 minutes.
    machines = stage.resources("AWS::StepFunctions::StateMachine")
    assert any(name.startswith("Backfill") for name in machines)
    for machine_name, machine in machines.items():
        prefix = "Backfill" if machine_name.startswith("Backfill") else "Reembed"
        definition = json.loads(re.sub(r"<[^>]+>", "ARN", resolve_strings(machine["Properties"]["DefinitionString"])))
        stages = [t for name, t in timeouts(stage).items() if name.startswith(prefix)]
        assert stages and definition["TimeoutSeconds"] > max(stages)
        tasks = [s for s in _states(definition) if s.get("Type") == "Task" and "TimeoutSeconds" in s]
        assert all(task["TimeoutSeconds"] >= max(stages) for task in tasks)


def _states(definition: dict[str, Any]) -> list[dict[str, Any]]:
    """Every state, nested ones (Map iterators, Parallel branches) included."""
    found = []
    for state in definition.get("States", {}).values():
        found.append(state)
        for nested in [state.get("Iterator"), state.get("ItemProcessor"), *state.get("Branches", [])]:
            if nested:
                found.extend(_states(nested))
    return found

"""The backfill state machine as each stage deploys it: input caps, waits between idle batches, stage failures.

How the definition behaves is tested by running it in moto (tests/backfill/test_state_machine.py); here, that the
stack's machine carries the configuration and that the configuration stays inside the machine's caps.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.constructs.backfill_state_machine import MAX_BATCH_SIZE, MAX_ITERATIONS, STAGES
from infra.stages import stage_config
from tests.infra.conftest import Synthesized, resolve_strings


def backfill_machine(stage: Synthesized) -> str:
    """The backfill machine's logical id (stages with Bedrock embeddings also have the re-embed machine)."""
    (machine,) = [name for name in stage.resources("AWS::StepFunctions::StateMachine") if name.startswith("BackfillMachine")]
    return machine


def definition(stage: Synthesized) -> dict[str, Any]:
    machine = stage.data["Resources"][backfill_machine(stage)]["Properties"]
    return json.loads(resolve_strings(machine["DefinitionString"]))


def test_the_deployed_machine_waits_between_idle_batches_as_configured(stage: Synthesized) -> None:
    states = definition(stage)["States"]
    for name in STAGES:
        assert states[f"{name}: wait"] == {
            "Type": "Wait",
            "Seconds": stage.config.backfill_idle_wait_seconds,
            "Next": f"{name}: run batch",
        }
        idle = [rule for rule in states[f"{name}: more?"]["Choices"] if "idle_batches" in rule["Variable"]]
        assert [rule["Next"] for rule in idle] == [
            {"segment": "embed?", "embed": "extract?", "extract": "Any stage failed?"}[name],
            f"{name}: wait",
        ]
    assert stage.config.backfill_idle_wait_seconds == 30


def test_the_deployed_machine_fails_on_a_stage_error_and_on_input_beyond_its_caps(stage: Synthesized) -> None:
    states = definition(stage)["States"]
    assert states["Stage failed"]["Type"] == "Fail" and states["Stage failed"]["Error"] == "BackfillStageFailed"
    assert states["Invalid input"]["Type"] == "Fail" and states["Invalid input"]["Error"] == "InvalidInput"
    [rule] = states["Valid input?"]["Choices"]
    caps = {c["Variable"]: c["NumericGreaterThan"] for c in rule["Or"] if "NumericGreaterThan" in c}
    assert caps == {"$.options.max_iterations": MAX_ITERATIONS, "$.options.batch_size": MAX_BATCH_SIZE} == {
        "$.options.max_iterations": 1000, "$.options.batch_size": 500,
    }  # fmt: skip


def test_the_schedule_asks_for_what_the_machine_accepts(stage: Synthesized) -> None:
    [rule] = [r["Properties"] for name, r in stage.resources("AWS::Events::Rule").items() if name.startswith("BackfillSchedule")]
    [target] = rule["Targets"]
    scheduled = json.loads(target["Input"])
    assert 1 <= scheduled["max_iterations"] <= MAX_ITERATIONS and 1 <= scheduled["batch_size"] <= MAX_BATCH_SIZE
    assert scheduled == {
        "stages": list(STAGES),
        "batch_size": stage.config.backfill_batch_size,
        "max_iterations": stage.config.backfill_max_iterations,
    }


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"backfill_max_iterations": "1001"}, r"backfill_max_iterations must be within 1\.\.1000, not 1001"),
        ({"backfill_max_iterations": "0"}, r"backfill_max_iterations must be within 1\.\.1000, not 0"),
        ({"backfill_batch_size": "501"}, r"backfill_batch_size must be within 1\.\.500, not 501"),
        ({"backfill_idle_wait_seconds": "-1"}, r"backfill_idle_wait_seconds must be within 0\.\.3600, not -1"),
    ],
)
def test_backfill_settings_beyond_the_machine_are_refused_at_synth(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        stage_config("dev", overrides)


def test_the_largest_settings_are_accepted() -> None:
    config = stage_config(
        "dev", {"backfill_max_iterations": "1000", "backfill_batch_size": "500", "backfill_idle_wait_seconds": "0"}
    )
    assert (config.backfill_max_iterations, config.backfill_batch_size, config.backfill_idle_wait_seconds) == (1000, 500, 0)


def test_the_ingest_function_may_start_the_machine_after_ingest_and_nothing_else_of_step_functions(stage: Synthesized) -> None:
    from tests.infra.test_security import as_list, function_named, statements

    machine = backfill_machine(stage)
    ingest = function_named(stage, "handler.lambda_handler", "S3 changes")
    variables = ingest["Environment"]["Variables"]
    assert variables["RAG_BACKFILL_STATE_MACHINE_ARN"] == {"Ref": machine}
    # The schedule's input: a start after ingest runs the same stages, batches and bounds.
    (rule,) = stage.resources("AWS::Events::Rule").values()
    schedule_input = json.loads(rule["Properties"]["Targets"][0]["Input"])
    assert (
        json.loads(variables["RAG_BACKFILL_EXECUTION_INPUT"])
        == schedule_input
        == {
            "stages": list(STAGES),
            "batch_size": stage.config.backfill_batch_size,
            "max_iterations": stage.config.backfill_max_iterations,
        }
    )
    granted = [
        (sorted(as_list(s["Action"])), [resolve_strings(r) for r in as_list(s["Resource"])])
        for name, s in statements(stage)
        if name.startswith("IngestFunctionRole") and any(a.startswith("states:") for a in as_list(s["Action"]))
    ]
    assert granted == [(["states:ListExecutions", "states:StartExecution"], [f"<{machine}>"])]

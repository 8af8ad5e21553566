"""Two behaviours of Step Functions that moto 5.2.5's engine lacks, added for the tests that need them.

``failed_items_fail_the_map``: AWS's failure rule of a Distributed Map.

Step Functions fails a Distributed Map Run once more child executions failed than ToleratedFailureCount /
ToleratedFailurePercentage allow (both 0 by default: the first failed item fails the Map with
``States.ExceedToleratedFailureThreshold``, which the Map state's Catch sees). moto 5.2.5's engine counts failed
items but lets the Map succeed; while active, ``failed_items_fail_the_map`` makes a failed item end the Map Run as
AWS does (only the default thresholds of 0, the ones the re-embed machine uses). ``check_private_api`` says clearly
what changed when moto moves the method this patches.

``start_execution_speaks_boto``: the ``states:startExecution`` task integration. moto hands the state's
parameters (``StateMachineArn``, ``Input``) to boto3 as they are, but boto3's Step Functions API names them
``stateMachineArn`` and ``input`` (and answers ``executionArn``, ``startDate``), so every such task fails with a
KeyError; while active, the names are translated both ways as Step Functions does.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

EVAL_JOB_PARAMETERS = ("self", "env", "job")
THRESHOLD_ERROR = "States.ExceedToleratedFailureThreshold"


def check_private_api() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor.distributed_item_processor_worker import (  # noqa: E501
        DistributedItemProcessorWorker,
    )

    found = tuple(inspect.signature(DistributedItemProcessorWorker._eval_job).parameters)
    if found != EVAL_JOB_PARAMETERS:
        raise RuntimeError(f"moto's DistributedItemProcessorWorker._eval_job takes {found}, expected {EVAL_JOB_PARAMETERS}")


@contextmanager
def failed_items_fail_the_map() -> Iterator[None]:
    from moto.stepfunctions.parser.api import ExecutionFailedEventDetails, HistoryEventType
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEvent, FailureEventException
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import StatesErrorNameType
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor.distributed_item_processor_worker import (  # noqa: E501
        DistributedItemProcessorWorker,
    )
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramError

    check_private_api()
    original = DistributedItemProcessorWorker._eval_job

    def eval_job(self: Any, env: Any, job: Any) -> None:
        original(self, env, job)
        state = env.program_state()
        if isinstance(state, ProgramError):  # the child execution failed: with a threshold of 0, so does the Map Run
            child = state.error or {}
            cause = f"The tolerated failure threshold was exceeded (item {job.job_index}: {child.get('error')})"
            details = ExecutionFailedEventDetails(error=THRESHOLD_ERROR, cause=cause)
            job.job_output = FailureEventException(
                FailureEvent(
                    env=env,
                    error_name=StatesErrorName(typ=StatesErrorNameType.StatesExceedToleratedFailureThreshold),
                    event_type=HistoryEventType.ExecutionFailed,
                    event_details=EventDetails(executionFailedEventDetails=details),
                )
            )

    with mock.patch.object(DistributedItemProcessorWorker, "_eval_job", eval_job):
        yield


@contextmanager
def start_execution_speaks_boto() -> Iterator[None]:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn import (
        StateTaskServiceSfn,
    )

    normalise_parameters = StateTaskServiceSfn._normalise_parameters

    def parameters_as_boto(self: Any, parameters: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        normalise_parameters(self, parameters, *args, **kwargs)
        for key in list(parameters):
            parameters[key[0].lower() + key[1:]] = parameters.pop(key)

    def response_as_states(self: Any, response: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(response, dict):
            for key in list(response):
                value = response.pop(key)
                response[key[0].upper() + key[1:]] = value.isoformat() if hasattr(value, "isoformat") else value

    with (
        mock.patch.object(StateTaskServiceSfn, "_normalise_parameters", parameters_as_boto),
        mock.patch.object(StateTaskServiceSfn, "_normalise_response", response_as_states),
    ):
        yield

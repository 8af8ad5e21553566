"""cfn-lint on every synthesized template: nothing beyond the checks ignored here, each for a reason."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from cfnlint.api import ManualArgs, lint_file

from tests.infra.conftest import Synthesized

# The one place where cfn-lint checks are ignored, each for something CDK itself generates.
IGNORED_CHECKS = {
    "W3005": "CDK adds DependsOn on roles and queues that a GetAtt already implies (redundant, harmless)",
}


@cache
def lint(template: Path) -> tuple[tuple[str, str], ...]:
    """Every match, ignored checks included (filtered below), so a stale ignore shows up too."""
    matches = lint_file(template, config=ManualArgs(regions=["us-east-1"]))
    return tuple((m.rule.id, f"{m.rule.id} {m.message} ({m.linenumber})") for m in matches)


def template_of(result: Synthesized) -> Path:
    return Path(result.outdir) / f"{result.stack.stack_name}.template.json"


def test_templates_pass_cfn_lint(stage: Synthesized) -> None:
    assert [text for rule, text in lint(template_of(stage)) if rule not in IGNORED_CHECKS] == []


def test_every_ignored_check_is_still_needed(stage: Synthesized) -> None:
    assert {rule for rule, _ in lint(template_of(stage))} == set(IGNORED_CHECKS)

"""Names in a run's manifests: record ids (Bedrock's ``recordId``) and the S3 keys of inputs and results."""

from __future__ import annotations

import re

_RECORD_ID = re.compile(r"R(\d{10})")


def record_id(n: int) -> str:
    """``R`` and ten digits: 11 alphanumeric characters, the recordId Bedrock's documentation shows."""
    if not 0 <= n < 10**10:
        raise ValueError(f"record number out of range: {n}")
    return f"R{n:010d}"


def record_number(value: str) -> int:
    match = _RECORD_ID.fullmatch(value)
    if match is None:
        raise ValueError(f"not a record id of this project: {value!r}")
    return int(match.group(1))


def input_key(prefix: str, run_id: str, manifest: int) -> str:
    return f"{prefix}{run_id}/input/{manifest:05d}.jsonl"


def output_prefix(prefix: str, run_id: str, manifest: int) -> str:
    return f"{prefix}{run_id}/output/{manifest:05d}/"

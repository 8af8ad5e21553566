"""``rag ingest``, ``rag rm``, ``rag status`` and ``rag redrive``: files in (and out) through S3 -> SQS -> the ingest
handler, and how it went."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_local.commands import Subparsers, fail

if TYPE_CHECKING:
    from rag.config import Settings

NOT_RUNNING = "local services are not running: run `rag up` first"


def register(subparsers: Subparsers) -> None:
    ingest = subparsers.add_parser(
        "ingest",
        help="upload files or folders through S3 -> SQS -> the ingest handler and wait for the result",
        description="Uploads each file to projects/<project>/<path> in the local bucket, then waits until every "
        "file is ingested or failed. Exit status 1 if any failed. A file <name>.meta.json beside <name> is its "
        "sidecar (meeting_date, title, participants), uploaded first and never a document; --meeting-date, --title "
        "and --participants set the S3 metadata of the files (a sidecar's fields win over them).",
    )
    ingest.add_argument("paths", nargs="+", metavar="PATH", help="files or folders (folders are walked)")
    ingest.add_argument("--project", required=True, help="project id (the key's projects/<project>/ prefix)")
    ingest.add_argument("--tenant", help="tenant (S3 metadata 'tenant'); default: the configured default tenant")
    ingest.add_argument("--meeting-date", metavar="YYYY-MM-DD", help="the meeting's date (S3 metadata meeting-date)")
    ingest.add_argument("--title", help="the meeting's title (S3 metadata title; one file only)")
    ingest.add_argument("--participants", metavar="NAMES", help='comma-separated names, e.g. "Dana Kim, Ravi"')
    ingest.add_argument("--timeout", type=float, default=900, help="seconds to wait for processing (default 900)")
    ingest.add_argument("--quiet", action="store_true", help="no progress bars")
    ingest.set_defaults(func=ingest_command)

    rm = subparsers.add_parser(
        "rm",
        help="delete files (or folders) of a project through the bucket, as a delete in S3 does",
        description="Deletes projects/<project>/<PATH> from the local bucket, with its sidecar <PATH>.meta.json; the "
        "delete event removes the document and everything made from it, as in AWS. A PATH that is a folder deletes "
        "every file under it. Waits until the rows are gone. Nothing is deleted if a PATH is not in the project.",
    )
    rm.add_argument(
        "paths", nargs="+", metavar="PATH",
        help="a file's path in the project as ingested (s3://<bucket>/projects/<project>/<PATH>), or a folder",
    )  # fmt: skip
    rm.add_argument("--project", required=True, help="project id (the key's projects/<project>/ prefix)")
    rm.add_argument("--timeout", type=float, default=120, help="seconds to wait for the rows to go (default 120)")
    rm.set_defaults(func=rm_command)

    status = subparsers.add_parser(
        "status", help="documents by status, backfill work pending per stage, knowledge counts, failures, queue depths"
    )
    status.set_defaults(func=status_command)

    redrive = subparsers.add_parser(
        "redrive",
        help="move the dead-letter queue's messages back to the ingest queue",
        description="Moves every message waiting in the DLQ (<queue>-dlq) back to the ingest queue, where the worker "
        "delivers it again with a fresh receive count, and prints how many moved. Fix what failed them first "
        "(`rag status` shows the failures and the queue depths).",
    )
    redrive.set_defaults(func=redrive_command)


def files_under(paths: list[str]) -> list[tuple[Path, str]]:
    """(file, path relative to its argument's folder) for every file to ingest (hidden ones left out)."""
    found = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for file in sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")):
                found.append((file, file.relative_to(path).as_posix()))
        elif path.is_file():
            found.append((path, path.name))
        else:
            raise FileNotFoundError(f"{raw}: no such file or folder")
    return found


def ingest_command(args: argparse.Namespace, settings: Settings) -> int:
    from rag.events import ID_PATTERN
    from rag_local.supervisor import services_pid

    if not ID_PATTERN.match(args.project):
        return fail(f"project id {args.project!r} must be 1-128 letters, digits, '.', '_' or '-'")
    if services_pid(settings) is None:
        return fail(NOT_RUNNING)
    try:
        files = files_under(args.paths)
    except FileNotFoundError as exc:
        return fail(str(exc))
    if not files:
        return fail("no files to ingest")
    try:
        metadata = upload_metadata(args, files)
    except ValueError as exc:
        return fail(str(exc))
    # Sidecars first: the file they describe finds its sidecar when its own event is handled.
    files.sort(key=lambda found: not is_sidecar(found[1]))
    expected = _upload(settings, files, args, metadata)
    if not expected:
        print("uploaded sidecars only: the files they describe are ingested again with their fields")
        return 0
    return _wait_for(settings, expected, args)


def is_sidecar(relative: str) -> bool:
    from rag.meeting_metadata import is_sidecar as sidecar_key

    return sidecar_key(relative)


def upload_metadata(args: argparse.Namespace, files: list[tuple[Path, str]]) -> dict[str, str]:
    """The S3 metadata of the uploads (meeting-date, title, participants), checked as the ingest checks it."""
    from email.header import Header

    from rag.errors import ParseError
    from rag.meeting_metadata import from_object_metadata

    given = {"meeting-date": args.meeting_date, "title": args.title, "participants": args.participants}
    metadata = {name: value for name, value in given.items() if value is not None}
    if args.title is not None and sum(not is_sidecar(relative) for _, relative in files) > 1:
        raise ValueError("--title names one meeting: give one file (or a sidecar <file>.meta.json per file)")
    try:
        from_object_metadata(metadata)
    except ParseError as exc:
        raise ValueError(str(exc).replace("S3 metadata: meeting-date", "--meeting-date")) from exc
    if args.tenant:
        metadata["tenant"] = args.tenant
    # S3 metadata is ASCII on the wire; other text travels RFC 2047-encoded, as S3 itself returns it.
    return {name: value if value.isascii() else Header(value, "utf-8").encode() for name, value in metadata.items()}


def _upload(
    settings: Settings, files: list[tuple[Path, str]], args: argparse.Namespace, metadata: dict[str, str]
) -> dict[str, tuple[str, str | None]]:
    """Put each file into the bucket (on disk once acknowledged: ``rag_local.durable``); returns key -> (SHA-256,
    S3 version) of each uploaded document (sidecars are none)."""
    import hashlib

    from tqdm import tqdm

    from rag.aws import s3_client

    s3 = s3_client(settings)
    expected: dict[str, tuple[str, str | None]] = {}
    for file, relative in tqdm(files, desc="upload", unit="file", disable=args.quiet):
        data = file.read_bytes()
        key = f"projects/{args.project}/{relative}"
        put = s3.put_object(Bucket=settings.local.bucket, Key=key, Body=data, Metadata=metadata)
        if not is_sidecar(relative):
            expected[key] = (hashlib.sha256(data).hexdigest(), put.get("VersionId"))
    return expected


def _wait_for(settings: Settings, expected: dict[str, tuple[str, str | None]], args: argparse.Namespace) -> int:
    """Until each key's row holds the uploaded version (ingested or failed) or the timeout passes; prints the tally.

    The version, not only the content: the same bytes uploaded again with other meeting fields are a new meeting."""
    from tqdm import tqdm

    from rag.store.connection import connect, resolve_database_url
    from rag.store.status import object_states
    from rag_local.supervisor import services_pid

    done: dict[str, tuple[str, str | None]] = {}
    deadline = time.monotonic() + args.timeout
    with (
        connect(resolve_database_url(settings)) as conn,
        tqdm(total=len(expected), desc="ingest", unit="file", disable=args.quiet) as bar,
    ):
        while len(done) < len(expected) and time.monotonic() < deadline:
            for state in object_states(conn, settings.local.bucket, [k for k in expected if k not in done]):
                sha256, version = expected[state.object_key]
                if state.content_sha256 == sha256 and (version is None or state.s3_version_id == version):
                    done[state.object_key] = (state.status, state.error)
                    bar.update(1)
            if services_pid(settings) is None:
                return fail("the local worker stopped; see .local/logs/services.log")
            time.sleep(0.3)
    failed = {k: v for k, v in done.items() if v[0] == "failed"}
    missing = [k for k in expected if k not in done]
    for key, (_, error) in failed.items():
        print(f"FAILED   {key}: {error}", file=sys.stderr)
    for key in missing:
        print(f"TIMEOUT  {key}: not processed within {args.timeout} s (see `rag status`)", file=sys.stderr)
    print(f"{len(done) - len(failed)} ingested, {len(failed)} failed, {len(missing)} not processed")
    return 1 if failed or missing else 0


def rm_command(args: argparse.Namespace, settings: Settings) -> int:
    from rag.aws import s3_client
    from rag.events import ID_PATTERN
    from rag_local.supervisor import services_pid

    if not ID_PATTERN.match(args.project):
        return fail(f"project id {args.project!r} must be 1-128 letters, digits, '.', '_' or '-'")
    if services_pid(settings) is None:
        return fail(NOT_RUNNING)
    s3 = s3_client(settings)
    keys: list[str] = []
    for path in args.paths:
        found = objects_at(s3, settings.local.bucket, f"projects/{args.project}/{path.strip('/')}")
        if not found:
            return fail(f"{path}: no such file or folder in project {args.project} (see `rag status`); nothing deleted")
        keys += [key for key in found if key not in keys]
    for key in keys:
        s3.delete_object(Bucket=settings.local.bucket, Key=key)
    documents = [key for key in keys if not is_sidecar(key)]
    return _wait_for_removal(settings, documents, args.timeout)


def objects_at(s3: Any, bucket: str, key: str) -> list[str]:
    """The object ``key`` with its sidecar, or every object under the folder ``key``."""
    from rag.meeting_metadata import sidecar_key

    listed = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key)
    names = {item["Key"] for page in listed for item in page.get("Contents", [])}
    if key in names:
        return [name for name in (key, sidecar_key(key)) if name in names]
    return sorted(name for name in names if name.startswith(key + "/"))


def _wait_for_removal(settings: Settings, keys: list[str], timeout: float) -> int:
    """Until no row of ``keys`` is left (their delete events handled) or the timeout passes."""
    from rag.store.connection import connect, resolve_database_url
    from rag.store.status import object_states

    deadline = time.monotonic() + timeout
    with connect(resolve_database_url(settings)) as conn:
        while (left := object_states(conn, settings.local.bucket, keys)) and time.monotonic() < deadline:
            time.sleep(0.3)
    for state in left:
        print(f"TIMEOUT  {state.object_key}: its rows are still there after {timeout} s (see `rag status`)", file=sys.stderr)
    print(f"{len(keys) - len(left)} deleted, {len(left)} not yet removed")
    return 1 if left else 0


def status_command(args: argparse.Namespace, settings: Settings) -> int:
    from rag.store.connection import connect, resolve_database_url
    from rag.store.status import pipeline_status
    from rag_local.supervisor import services_pid

    with connect(resolve_database_url(settings)) as conn:
        status = pipeline_status(conn, model_id=settings.embedding.model_id)
    print("documents by status:")
    if not status.counts:
        print("  (none)")
    for (project, state), count in sorted(status.counts.items()):
        print(f"  {project:<24} {state:<14} {count:>6}")
    print(f"chunks: {status.chunks}")
    print(f"backfill pending ({settings.embedding.model_id}):")
    for stage, count in status.pending.items():
        print(f"  {stage:<10} {count:>6} documents")
    print("knowledge: " + ", ".join(f"{count} {name}" for name, count in status.knowledge.items()))
    if status.failures:
        print("failures:")
        for failure in status.failures:
            print(f"  {failure.source_uri}\n    {failure.error}")
    if status.backfill_failures:
        print("backfill failures (`rag backfill --retry-failed` tries exhausted ones again):")
        for backfill_failure in status.backfill_failures:
            state = "exhausted" if backfill_failure.exhausted else "will retry"
            print(
                f"  {backfill_failure.source_uri} [{backfill_failure.status}, {backfill_failure.attempts} attempts, {state}]"
                f"\n    {backfill_failure.error}"
            )
    if services_pid(settings) is not None:
        _print_queue_depths(settings)
    return 0


def _print_queue_depths(settings: Settings) -> None:
    from rag.aws import sqs_client

    sqs = sqs_client(settings)
    for name in (settings.local.queue, f"{settings.local.queue}-dlq"):
        url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
        attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        print(
            f"queue {name}: {attrs['ApproximateNumberOfMessages']} waiting, "
            f"{attrs['ApproximateNumberOfMessagesNotVisible']} in flight"
        )
        if name.endswith("-dlq") and int(attrs["ApproximateNumberOfMessages"]) > 0:
            print(f"  (dead letters: fix the cause, then `rag redrive` moves them back to {settings.local.queue})")


def redrive_command(args: argparse.Namespace, settings: Settings) -> int:
    from rag.aws import sqs_client
    from rag_local.services import move_dead_letters
    from rag_local.supervisor import services_pid

    if services_pid(settings) is None:
        return fail(NOT_RUNNING)
    sqs = sqs_client(settings)
    dlq = f"{settings.local.queue}-dlq"
    moved = move_dead_letters(
        sqs, sqs.get_queue_url(QueueName=dlq)["QueueUrl"], sqs.get_queue_url(QueueName=settings.local.queue)["QueueUrl"]
    )
    print(f"moved {moved} messages from {dlq} back to {settings.local.queue}")
    return 0

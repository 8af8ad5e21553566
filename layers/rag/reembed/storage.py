"""Where a run's manifests and results live: an S3 bucket on AWS (Bedrock reads and writes there), a directory here.

Keys are the same in both (``rag.reembed.manifest``), so the steps never know which one they write to.
A result file holds one vector per line and a manifest up to 50,000 of them (hundreds of MB), so lines
are streamed both ways rather than held as one string.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

JSONL = "application/jsonl"
SPOOL_BYTES = 8 * 1024 * 1024  # an upload stays in memory up to this size, then spills to a temporary file
READ_CHUNK_BYTES = 64 * 1024  # one Titan vector line is about 20 kB


class ManifestStore(Protocol):
    """Text objects under string keys: what the steps and the batch engines share."""

    def put_text(self, key: str, text: str) -> None: ...

    def put_lines(self, key: str, lines: Iterable[str]) -> None:
        """Writes ``lines`` (each without its newline) as one JSONL object, never holding them all at once."""
        ...

    def get_text(self, key: str) -> str:
        """The whole object; a missing key raises FileNotFoundError."""
        ...

    def lines(self, key: str) -> Iterator[str]:
        """The object's non-empty lines, read as they stream in; a missing key raises FileNotFoundError."""
        ...

    def keys(self, prefix: str) -> list[str]:
        """Every key starting with ``prefix``, sorted."""
        ...


class S3ManifestStore:
    """One bucket; encryption is the bucket's default, so no object carries its own settings."""

    def __init__(self, bucket: str, client: Any):
        self.bucket = bucket
        self.client = client

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def put_text(self, key: str, text: str) -> None:
        self.client.put_object(Bucket=self.bucket, Key=key, Body=text.encode(), ContentType=JSONL)

    def put_lines(self, key: str, lines: Iterable[str]) -> None:
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
            for line in lines:
                spool.write(line.encode() + b"\n")
            spool.seek(0)
            self.client.put_object(Bucket=self.bucket, Key=key, Body=spool, ContentType=JSONL)

    def _body(self, key: str) -> Any:
        from botocore.exceptions import ClientError

        try:
            return self.client.get_object(Bucket=self.bucket, Key=key)["Body"]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                raise FileNotFoundError(f"no object {self.uri(key)}") from exc
            raise

    def get_text(self, key: str) -> str:
        return str(self._body(key).read().decode())

    def lines(self, key: str) -> Iterator[str]:
        body = self._body(key)
        try:
            for raw in body.iter_lines(chunk_size=READ_CHUNK_BYTES):
                if raw.strip():
                    yield raw.decode()
        finally:
            body.close()

    def keys(self, prefix: str) -> list[str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []))


class LocalManifestStore:
    """Keys are relative paths under ``root``; a write lands whole or not at all (a rename), like an S3 put."""

    def __init__(self, root: Path):
        self.root = root

    def path(self, key: str) -> Path:
        parts = PurePosixPath(key).parts
        if not parts or key.startswith("/") or ".." in parts:
            raise ValueError(f"not a relative key under the store: {key!r}")
        return self.root.joinpath(*parts)

    def put_text(self, key: str, text: str) -> None:
        self._write(key, [text])

    def put_lines(self, key: str, lines: Iterable[str]) -> None:
        self._write(key, (line + "\n" for line in lines))

    def _write(self, key: str, pieces: Iterable[str]) -> None:
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        # Hidden beside the target until complete (keys() skips hidden names): a reader never sees half a file.
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        try:
            with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as out:
                out.writelines(pieces)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def get_text(self, key: str) -> str:
        return self.path(key).read_text(encoding="utf-8")

    def lines(self, key: str) -> Iterator[str]:
        with self.path(key).open(encoding="utf-8", newline="\n") as source:
            for line in source:
                if line.strip():
                    yield line.rstrip("\n")

    def keys(self, prefix: str) -> list[str]:
        # Walk only the deepest directory the prefix names, not the whole root.
        directory = self.root.joinpath(*PurePosixPath(prefix).parts[: -1 if not prefix.endswith("/") else None])
        if not directory.is_dir():
            return []
        found = (path.relative_to(self.root).as_posix() for path in directory.rglob("*") if path.is_file())
        return sorted(key for key in found if key.startswith(prefix) and not PurePosixPath(key).name.startswith("."))

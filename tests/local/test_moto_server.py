"""`rag up`'s moto server: each acknowledged S3 write is already on disk; once S3 writes are closed (a stop
began), none is acknowledged; reads and SQS go on."""

from __future__ import annotations

import hashlib
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError

from rag_local.durable import write_through
from rag_local.mirror import Mirror, MirrorEntry
from rag_local.moto_server import REFUSED_BODY, MotoServer, S3WriteGate, is_s3_write, signed_service

BUCKET = "gate-bucket"


@pytest.fixture
def server() -> Iterator[MotoServer]:
    from moto.moto_api._internal.models import moto_api_backend  # what POST /moto-api/reset runs

    moto = MotoServer(0)
    moto.start()
    yield moto
    moto.stop()
    moto_api_backend.reset()


def clients(port: int) -> tuple[object, object]:
    endpoint = f"http://127.0.0.1:{port}"
    config = Config(retries={"max_attempts": 1})
    return (
        boto3.client("s3", region_name="us-east-1", endpoint_url=endpoint, config=config),
        boto3.client("sqs", region_name="us-east-1", endpoint_url=endpoint, config=config),
    )


def test_after_close_s3_writes_are_refused_and_reads_and_sqs_go_on(server):
    s3, sqs = clients(server.port)
    s3.create_bucket(Bucket=BUCKET)
    s3.put_object(Bucket=BUCKET, Key="projects/p/kept.txt", Body=b"A: kept")
    queue = sqs.create_queue(QueueName="gate-queue")["QueueUrl"]
    presigned_put = s3.generate_presigned_url("put_object", Params={"Bucket": BUCKET, "Key": "projects/p/presigned.txt"})

    assert server.close_s3_writes(timeout=5) is True  # nothing in flight

    for write in (
        lambda: s3.put_object(Bucket=BUCKET, Key="projects/p/late.txt", Body=b"A: late"),
        lambda: s3.delete_object(Bucket=BUCKET, Key="projects/p/kept.txt"),
        lambda: s3.create_multipart_upload(Bucket=BUCKET, Key="projects/p/big.txt"),
    ):
        with pytest.raises(ClientError) as refused:
            write()
        assert refused.value.response["Error"]["Code"] == "ServiceUnavailable"
        assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    with pytest.raises(urllib.error.HTTPError) as presigned:
        urllib.request.urlopen(urllib.request.Request(presigned_put, data=b"A: x", method="PUT"), timeout=30)
    assert presigned.value.code == 503

    assert s3.get_object(Bucket=BUCKET, Key="projects/p/kept.txt")["Body"].read() == b"A: kept"
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"]] == ["projects/p/kept.txt"]
    sqs.send_message(QueueUrl=queue, MessageBody="still delivered")
    assert [m["Body"] for m in sqs.receive_message(QueueUrl=queue)["Messages"]] == ["still delivered"]


def test_which_requests_count_as_s3_writes():
    scope = "AWS4-HMAC-SHA256 Credential=testing/20261125/us-east-1/{}/aws4_request, SignedHeaders=host, Signature=x"
    s3_put = {"REQUEST_METHOD": "PUT", "HTTP_AUTHORIZATION": scope.format("s3")}
    sqs_post = {"REQUEST_METHOD": "POST", "HTTP_AUTHORIZATION": scope.format("sqs")}
    presigned = {"REQUEST_METHOD": "PUT", "QUERY_STRING": "X-Amz-Credential=testing%2F20261125%2Fus-east-1%2Fs3%2Faws4_request"}
    assert signed_service(s3_put) == "s3" and signed_service(sqs_post) == "sqs" and signed_service(presigned) == "s3"
    assert is_s3_write(s3_put) and is_s3_write(presigned) and not is_s3_write(sqs_post)
    assert not is_s3_write({"REQUEST_METHOD": "GET", "HTTP_AUTHORIZATION": scope.format("s3")})
    assert is_s3_write({"REQUEST_METHOD": "DELETE", "HTTP_AUTHORIZATION": "AWS testing:signature"})  # SigV2: S3 only


def test_close_waits_for_the_writes_in_flight():
    # GIVEN an S3 write inside the app (held there), behind the gate
    inside, release = threading.Event(), threading.Event()

    def app(environ, start_response):
        inside.set()
        release.wait()
        start_response("200 OK", [])
        return [b""]

    gate = S3WriteGate(app)
    put = {"REQUEST_METHOD": "PUT", "HTTP_AUTHORIZATION": "AWS testing:signature"}
    writer = threading.Thread(target=gate, args=(put, lambda *args: None))
    writer.start()
    assert inside.wait(30)

    # WHEN the gate closes: it reports the write still in flight; a new write is refused at once
    assert gate.close(timeout=0.2) is False
    statuses: list[str] = []
    assert gate(put, lambda status, headers: statuses.append(status)) == [REFUSED_BODY]
    assert statuses == ["503 Service Unavailable"]

    # THEN once the write is done, nothing is in flight
    release.set()
    writer.join(30)
    assert gate.close(timeout=30) is True


# --- write-through: what moto acknowledges is already on disk -------------------------


@dataclass
class Mirrored:
    server: MotoServer
    s3: Any
    mirror: Mirror


@pytest.fixture
def mirrored(tmp_path) -> Iterator[Mirrored]:
    """`rag up`'s moto: each S3 write to BUCKET is mirrored to ``tmp_path`` before the client hears back."""
    from moto.moto_api._internal.models import moto_api_backend

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    s3, _ = clients(port)
    mirror = Mirror(tmp_path, BUCKET)
    moto = MotoServer(port, on_s3_write=write_through(s3, mirror))
    moto.start()
    s3.create_bucket(Bucket=BUCKET)
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    yield Mirrored(moto, s3, mirror)
    moto.stop()
    moto_api_backend.reset()


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def test_each_kind_of_s3_write_is_on_disk_when_it_is_acknowledged(mirrored):
    # No reconcile runs here: only the write itself can have put the object on disk.
    s3, mirror = mirrored.s3, mirrored.mirror
    key = "projects/p/kick off.txt"

    s3.put_object(Bucket=BUCKET, Key=key, Body=b"A: one", Metadata={"meeting-date": "2026-11-02"}, ContentType="text/plain")
    assert mirror.read(key) == (MirrorEntry(key, md5(b"A: one"), "text/plain", {"meeting-date": "2026-11-02"}), b"A: one")

    presigned = s3.generate_presigned_url("put_object", Params={"Bucket": BUCKET, "Key": "projects/p/presigned.txt"})
    put = urllib.request.Request(presigned, data=b"A: two", method="PUT", headers={"Content-Type": "text/plain"})
    urllib.request.urlopen(put, timeout=30).close()
    assert mirror.read("projects/p/presigned.txt") == (
        MirrorEntry("projects/p/presigned.txt", md5(b"A: two"), "text/plain"),
        b"A: two",
    )

    s3.copy_object(Bucket=BUCKET, Key="projects/p/copy.txt", CopySource={"Bucket": BUCKET, "Key": key})
    assert mirror.read("projects/p/copy.txt") == (
        MirrorEntry("projects/p/copy.txt", md5(b"A: one"), "text/plain", {"meeting-date": "2026-11-02"}),
        b"A: one",
    )

    upload = s3.create_multipart_upload(Bucket=BUCKET, Key="projects/p/big.txt")["UploadId"]
    assert mirror.entry("projects/p/big.txt") is None  # nothing to mirror until the upload completes
    part = s3.upload_part(Bucket=BUCKET, Key="projects/p/big.txt", UploadId=upload, PartNumber=1, Body=b"A: three")
    assert mirror.entry("projects/p/big.txt") is None
    completed = s3.complete_multipart_upload(Bucket=BUCKET, Key="projects/p/big.txt", UploadId=upload,
                                             MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})  # fmt: skip
    assert mirror.read("projects/p/big.txt") == (
        MirrorEntry("projects/p/big.txt", completed["ETag"].strip('"'), "binary/octet-stream"),
        b"A: three",
    )

    form = s3.generate_presigned_post(BUCKET, "projects/p/form.txt")  # a browser's form upload: the key is in the body
    assert requests.post(form["url"], data=form["fields"], files={"file": b"A: four"}, timeout=30).status_code == 204
    assert mirror.read("projects/p/form.txt")[1] == b"A: four"


def test_deletes_are_on_disk_when_they_are_acknowledged(mirrored):
    s3, mirror = mirrored.s3, mirrored.mirror
    keys = [f"projects/p/{name}.txt" for name in ("one", "two", "three", "four")]
    for key in keys:
        s3.put_object(Bucket=BUCKET, Key=key, Body=f"A: {key}".encode())

    s3.delete_object(Bucket=BUCKET, Key=keys[0])  # versioned: a delete marker
    assert mirror.entry(keys[0]) == MirrorEntry(keys[0], deleted=True)

    s3.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": keys[1]}, {"Key": keys[2]}]})
    assert mirror.entry(keys[1]) == MirrorEntry(keys[1], deleted=True)
    assert mirror.entry(keys[2]) == MirrorEntry(keys[2], deleted=True)

    # Deleting the newest version makes the previous one current again: the mirror follows S3.
    newest = s3.put_object(Bucket=BUCKET, Key=keys[3], Body=b"A: newer")["VersionId"]
    assert mirror.read(keys[3])[1] == b"A: newer"
    s3.delete_object(Bucket=BUCKET, Key=keys[3], VersionId=newest)
    assert mirror.read(keys[3]) == (MirrorEntry(keys[3], md5(f"A: {keys[3]}".encode()), "binary/octet-stream"),
                                    f"A: {keys[3]}".encode())  # fmt: skip


def test_keys_s3_allows_are_mirrored_under_their_own_names(mirrored):
    s3, mirror = mirrored.s3, mirrored.mirror
    keys = ["projects/p/a+b c.txt", "projects%2Fp%2Fencoded.txt", "/tenants/t/projects/p/lead.txt",
            "projects/p/réunion ünd 会议.txt", "projects/p/a\x01b.txt", "projects/p/q?x=1&y#z.txt"]  # fmt: skip
    for key in keys:
        s3.put_object(Bucket=BUCKET, Key=key, Body=key.encode())
    assert {key: mirror.read(key)[1] for key in keys} == {key: key.encode() for key in keys}
    assert sorted(mirror.entries()) == sorted(keys)
    s3.delete_object(Bucket=BUCKET, Key=keys[1])
    assert mirror.entry(keys[1]) == MirrorEntry(keys[1], deleted=True)


def test_writes_that_change_no_object_of_the_bucket_leave_the_mirror_alone(mirrored):
    s3, mirror = mirrored.s3, mirrored.mirror
    s3.create_bucket(Bucket="another-bucket")
    s3.put_object(Bucket="another-bucket", Key="projects/p/elsewhere.txt", Body=b"A: elsewhere")
    s3.put_bucket_tagging(Bucket=BUCKET, Tagging={"TagSet": [{"Key": "team", "Value": "rag"}]})
    s3.delete_object(Bucket=BUCKET, Key="projects/p/never-there.txt")
    assert mirror.entries() == {}


def test_a_write_that_cannot_be_mirrored_is_not_acknowledged(tmp_path, caplog):
    # GIVEN a mirror that cannot be written (its directory is a file)
    from moto.moto_api._internal.models import moto_api_backend

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    s3, _ = clients(port)
    (tmp_path / BUCKET).write_text("not a directory")
    moto = MotoServer(port, on_s3_write=write_through(s3, Mirror(tmp_path, BUCKET)))
    moto.start()
    try:
        s3.create_bucket(Bucket=BUCKET)

        # WHEN an object is uploaded
        with pytest.raises(ClientError) as failed:
            s3.put_object(Bucket=BUCKET, Key="projects/p/unsaved.txt", Body=b"A: unsaved")

        # THEN the client hears an error it retries (a 500), and the log says why
        assert failed.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
        assert failed.value.response["Error"]["Code"] == "InternalError"
        assert "could not be put on disk" in failed.value.response["Error"]["Message"]
        assert any("projects/p/unsaved.txt" in r.getMessage() for r in caplog.records if r.name == "rag.moto")
    finally:
        moto.stop()
        moto_api_backend.reset()


def test_the_objects_a_write_names():
    from io import BytesIO

    from rag_local.moto_server import objects_written

    def request(method: str, path: str, query: str = "", host: str = "127.0.0.1:4566", body: bytes = b"") -> dict[str, Any]:
        return {"REQUEST_METHOD": method, "PATH_INFO": path, "RAW_URI": f"{path}?{query}" if query else path,
                "QUERY_STRING": query, "HTTP_HOST": host, "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "4566",
                "wsgi.url_scheme": "http", "wsgi.input": BytesIO(body), "CONTENT_LENGTH": str(len(body))}  # fmt: skip

    assert objects_written(request("PUT", "/b/projects/p/kick%20off.txt")) == ("b", ["projects/p/kick off.txt"])
    assert objects_written(request("PUT", "/projects/p/a.txt", host="b.s3.amazonaws.com")) == ("b", ["projects/p/a.txt"])
    assert objects_written(request("DELETE", "/b/projects/p/a.txt", "versionId=v1")) == ("b", ["projects/p/a.txt"])
    assert objects_written(request("POST", "/b/projects/p/a.txt", "uploadId=u1")) == ("b", ["projects/p/a.txt"])
    for no_object in (
        request("PUT", "/b/projects/p/a.txt", "partNumber=1&uploadId=u1"),  # a part
        request("POST", "/b/projects/p/a.txt", "uploads"),  # a multipart upload's start
        request("DELETE", "/b/projects/p/a.txt", "uploadId=u1"),  # its abort
        request("PUT", "/b", "versioning"),  # the bucket's settings
        request("PUT", "/b"),  # the bucket itself
    ):
        assert objects_written(no_object) is None
    assert objects_written(request("POST", "/b")) == ("b", None)  # a form upload: its key is in the body

    delete = b'<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>projects/p/a.txt</Key>'
    delete += b"<VersionId>v1</VersionId></Object><Object><Key>projects/p/b &amp; c.txt</Key></Object></Delete>"
    environ = request("POST", "/b", "delete", body=delete)
    assert objects_written(environ) == ("b", ["projects/p/a.txt", "projects/p/b & c.txt"])
    assert environ["wsgi.input"].read() == delete  # put back for moto

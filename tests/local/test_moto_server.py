"""`rag up`'s moto server: once S3 writes are closed (a stop began), none is acknowledged; reads and SQS go on."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

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

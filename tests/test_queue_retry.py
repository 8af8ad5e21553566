from __future__ import annotations

import boto3
from moto import mock_aws

from rag.queue_retry import back_off, retry_delay_seconds


def test_the_delay_doubles_per_receive_up_to_fifteen_minutes():
    assert [retry_delay_seconds(n) for n in range(1, 8)] == [30, 60, 120, 240, 480, 900, 900]
    # Five receives span 7.5 minutes: a five-minute database outage never reaches the DLQ.
    assert sum(retry_delay_seconds(n) for n in range(1, 5)) == 450


def test_back_off_hides_the_message_for_its_delay():
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="retry-me", Attributes={"VisibilityTimeout": "0"})["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sqs.send_message(QueueUrl=url, MessageBody="{}")
        (message,) = sqs.receive_message(QueueUrl=url)["Messages"]
        record = {
            "messageId": message["MessageId"], "receiptHandle": message["ReceiptHandle"], "eventSourceARN": arn,
            "attributes": {"ApproximateReceiveCount": "3"},
        }  # fmt: skip

        assert back_off(sqs, record) == 120
        assert sqs.receive_message(QueueUrl=url).get("Messages", []) == []  # hidden, not back at once


def test_back_off_that_cannot_reach_the_queue_says_so_and_raises_nothing():
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        record = {"messageId": "m", "receiptHandle": "r", "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:gone"}
        assert back_off(sqs, record) is None

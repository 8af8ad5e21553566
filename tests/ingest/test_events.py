from __future__ import annotations

import json

import pytest

from rag.errors import InvalidObjectKey
from rag.events import (
    ObjectChange,
    UnsupportedEvent,
    changes_from_event,
    changes_from_sqs_body,
    event_shape,
    location_from_key,
)
from tests.ingest.events import eventbridge, load, s3_notification, sqs_batch


def test_documented_s3_put_notification_becomes_a_created_change():
    changes = changes_from_event(load("s3_object_created.json"))
    assert changes == [
        ObjectChange(
            action="created",
            bucket="mybucket",
            key="HappyFace.jpg",
            version_id="096fKKXTRTtl3on89fVO.nfljtsv6qko",
            etag="d41d8cd98f00b204e9800998ecf8427e",
            sequencer="0055AED6DCD90281E5",
        )
    ]


def test_url_encoded_keys_are_decoded():
    event = s3_notification("b", "projects/acme/meeting notes/Q1 review+plan.txt")
    assert changes_from_event(event)[0].key == "projects/acme/meeting notes/Q1 review+plan.txt"


def test_removed_notification_and_eventbridge_events():
    assert changes_from_event(load("s3_object_removed.json"))[0].action == "removed"
    created = changes_from_event(load("eventbridge_object_created.json"))[0]
    assert (created.action, created.bucket, created.key) == ("created", "mybucket", "example-key")
    assert created.version_id == "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e"
    deleted = changes_from_event(eventbridge("b", "projects/p/x.txt", deleted=True))[0]
    assert (deleted.action, deleted.key) == ("removed", "projects/p/x.txt")


def test_s3_test_event_in_sqs_is_ignored():
    assert changes_from_sqs_body(json.dumps(load("s3_test_event.json"))) == []


def test_event_shapes_are_recognised_and_junk_is_rejected():
    assert event_shape(sqs_batch("{}")) == "sqs"
    assert event_shape(load("s3_object_created.json")) == "s3"
    assert event_shape(load("eventbridge_object_created.json")) == "eventbridge"
    with pytest.raises(UnsupportedEvent, match="expected an SQS batch"):
        event_shape({"hello": "world"})
    with pytest.raises(UnsupportedEvent, match="not JSON"):
        changes_from_sqs_body("this is not json")


@pytest.mark.parametrize(
    ("key", "tenant", "project"),
    [
        ("projects/acme/meetings/2026-11-02.txt", "default", "acme"),
        ("projects/acme/file.md", "default", "acme"),
        ("projects/Team_1.x/a/b/c/notes.vtt", "default", "Team_1.x"),
        ("tenants/globex/projects/acme/meetings/2026-11-02.txt", "globex", "acme"),
        ("tenants/t-1/projects/p.2/notes.vtt", "t-1", "p.2"),
    ],
)
def test_tenant_and_project_come_from_the_key(key, tenant, project):
    location = location_from_key(key, "default")
    assert (location.tenant_id, location.project_id) == (tenant, project)


@pytest.mark.parametrize(
    "key",
    [
        "meetings/2026-11-02.txt", "projects/acme/", "projects/file.txt", "projects/bad id/x.txt", "x",
        "tenants/globex/notes.txt", "tenants/globex/projects/acme/", "tenants/bad id/projects/acme/x.txt",
        "tenants//projects/acme/x.txt", "tenants/globex/meetings/projects/acme/x.txt",
    ],
)  # fmt: skip
def test_keys_outside_projects_are_rejected_not_guessed(key):
    with pytest.raises(InvalidObjectKey, match="not ingested"):
        location_from_key(key, "default")


def test_a_key_holding_a_nul_is_rejected():
    # S3 keys are any UTF-8; a NUL cannot be stored in the database, so the object is not ingested.
    with pytest.raises(InvalidObjectKey, match=r"NUL character.*not ingested"):
        location_from_key("projects/acme/a\x00b.txt", "default")

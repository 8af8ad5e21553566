"""The query API's corpus (tests/api/conftest.py): the example transcripts for tenant acme, one meeting for globex."""

from tests.api.conftest import corpus, knowledge  # noqa: F401 - fixtures shared with the API tests

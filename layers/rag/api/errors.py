"""The API's answer to a database that fails it: the library's mapping (``rag.store.failures``)."""

from rag.store.failures import DatabaseFailure, database_failure

__all__ = ["DatabaseFailure", "database_failure"]

"""Local, account-free services and the ``rag`` CLI (never bundled into the Lambda layer)."""

"""The test suite: a package, so its helpers import absolutely (tests.backfill.conftest) as the same modules pytest loads."""

"""A speaker filter's names joined with the other names of the same people in the searched projects.

Rows are filtered on folded keys (sql/0011: no case, no trailing "(PM)"). A partial name is the
project's one person of that name: in a project whose meetings have "Dana" and "Dana Kim" speak,
a filter "Dana" or "Dana Kim" finds both; with a "Dana Lee" as well, "Dana" stays "Dana". The
people are the documents' folded speakers and participants (``documents.speaker_keys``, sql/0012),
one row per document, and the names resolve as task owners do (``rag.people.People``).
Without projects in the scope, the tenant's people are the ones a partial name must single out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

    from rag.search.engine import SearchScope

# At most this many names of the scope take part (a tenant-wide filter over a very large tenant).
MAX_PEOPLE = 5_000


def joined_names(names: Sequence[str], people: Iterable[str]) -> tuple[str, ...]:
    """``names`` and every name of ``people`` that is the same person as one of them (folded keys)."""
    from rag.people import People

    known = tuple(people)
    resolver = People.of((), known)
    joined = dict.fromkeys(names)
    for name in names:
        person = resolver.canonical(name)
        if person is None:
            continue
        words = set(_words(person))
        # Only a name whose words are all the person's can refer to them (first name, surname, the full name).
        candidates = (key for key in known if set(_words(key)) <= words)
        joined.update(dict.fromkeys(key for key in candidates if _same(resolver.canonical(key), person)))
    return tuple(joined)


def with_people_joined(conn: psycopg.Connection, scope: SearchScope) -> SearchScope:
    """``scope`` whose speakers also hold the other names of the people they name (one query)."""
    if not scope.speakers:
        return scope
    where = ["tenant_id = %(tenant)s", "speaker_keys <> '{}'"]
    params: dict[str, Any] = {"tenant": scope.tenant_id, "limit": MAX_PEOPLE}
    if scope.project_ids:
        where.append("project_id = ANY(%(projects)s)")
        params["projects"] = list(scope.project_ids)
    statement = f"""SELECT DISTINCT key FROM documents, unnest(speaker_keys) AS key
                    WHERE {" AND ".join(where)} ORDER BY key LIMIT %(limit)s"""
    people = [key for (key,) in conn.execute(statement, params, prepare=False).fetchall()]
    return replace(scope, speakers=joined_names(scope.speakers, people))


def _words(name: str) -> list[str]:
    return name.casefold().replace(".", "").split()


def _same(a: str | None, b: str) -> bool:
    return a is not None and _words(a) == _words(b)

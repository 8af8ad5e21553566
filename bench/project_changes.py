"""Latency of ``changes_between`` and ``project_brief`` on a tenant with many projects and meetings.

Builds, in a throw-away database, one tenant with ``--projects`` projects of ``--meetings``
dated meetings each (a meeting a week); every meeting has 5 decisions (two of them superseding
decisions of the meeting before), 3 risks, 6 tasks and 3 later statements about tasks and risks
(done, handed over, closed). Then times, per call, the median and p95 over ``--runs`` calls on
one project: the changes of a 30-day window, of the whole history, and the brief.

    .venv/bin/python bench/project_changes.py --projects 20 --meetings 100
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import date, timedelta
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import bench_database  # noqa: E402
from rag.config import Settings  # noqa: E402
from rag.search.brief import project_brief  # noqa: E402
from rag.search.changes import changes_between  # noqa: E402
from rag.store.migrations import migrate_database  # noqa: E402

TENANT = "bench"
FIRST = date(2024, 1, 1)


def populate(conn: psycopg.Connection, projects: int, meetings: int) -> None:
    for p in range(projects):
        project = f"p{p}"
        previous: list[int] = []
        for m in range(meetings):
            day = FIRST + timedelta(weeks=m)
            [document] = conn.execute(
                """INSERT INTO documents (tenant_id, project_id, bucket, object_key, kind, format, title, meeting_date,
                                          body, status)
                   VALUES (%s, %s, 'bench', %s, 'transcript', 'text', %s, %s, %s, 'extracted') RETURNING id""",
                (TENANT, project, f"{project}/{m}.txt", f"meeting {m}", day, "x" * 2000),
            ).fetchone()
            place = "%s, %s, %s, %s, %s, %s, %s, 'rules'"
            row = (document, TENANT, project, 0, 1, 0, 100)
            columns = "document_id, tenant_id, project_id, start_turn, end_turn, start_char, end_char, method"
            decisions = [
                conn.execute(
                    f"INSERT INTO decisions ({columns}, description, evidence) VALUES ({place}, %s, %s) RETURNING id",
                    (*row, f"decision {i} of meeting {m}", f"we decided {i}"),
                ).fetchone()[0]
                for i in range(5)
            ]
            for earlier, later in zip(previous[:2], decisions[:2]):
                conn.execute("UPDATE decisions SET status = 'superseded', superseded_by = %s WHERE id = %s", (later, earlier))
            previous = decisions
            risks = [
                conn.execute(
                    f"INSERT INTO risks ({columns}, description) VALUES ({place}, %s) RETURNING id",
                    (*row, f"risk {i} of meeting {m}"),
                ).fetchone()[0]
                for i in range(3)
            ]
            tasks = [
                conn.execute(
                    f"INSERT INTO tasks ({columns}, description, assignee, due_date) VALUES ({place}, %s, %s, %s) RETURNING id",
                    (*row, f"task {i} of meeting {m}", f"person {i % 3}", day + timedelta(days=10)),
                ).fetchone()[0]
                for i in range(6)
            ]
            for change, kind, target in (
                ("done", "task", tasks[0]),
                ("reassigned", "task", tasks[1]),
                ("closed", "risk", risks[0]),
            ):
                conn.execute(
                    f"""INSERT INTO knowledge_changes ({columns}, evidence, change, target_kind, target_id)
                        VALUES ({place}, %s, %s, %s, %s)""",
                    (*row, f"{change} in meeting {m}", change, kind, target),
                )
        conn.commit()
    conn.execute("ANALYZE")


def timed(call, runs: int) -> tuple[float, float]:
    took = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        took.append((time.perf_counter() - start) * 1000)
    took.sort()
    return statistics.median(took), took[max(0, int(len(took) * 0.95) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--projects", type=int, default=20)
    parser.add_argument("--meetings", type=int, default=100, help="per project, one a week")
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with bench_database() as url:
        migrate_database(Settings(), url)
        with psycopg.connect(url) as conn:
            start = time.perf_counter()
            populate(conn, args.projects, args.meetings)
            print(f"{args.projects} projects x {args.meetings} meetings written in {time.perf_counter() - start:.1f} s")
            counts = {
                t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("decisions", "risks", "tasks", "knowledge_changes")
            }  # noqa: S608
            print(", ".join(f"{n} {t}" for t, n in counts.items()))
            last = FIRST + timedelta(weeks=args.meetings - 1)
            cases = {
                "changes, last 30 days": lambda: changes_between(conn, TENANT, "p0", since=last - timedelta(days=30), until=last),
                "changes, whole history (50 per list)": lambda: changes_between(conn, TENANT, "p0", since=FIRST),
                "brief (14 days)": lambda: project_brief(conn, TENANT, "p0", today=last, days=14),
            }
            for name, call in cases.items():
                median, p95 = timed(call, args.runs)
                print(f"{name:<40} median {median:6.1f} ms   p95 {p95:6.1f} ms")


if __name__ == "__main__":
    main()

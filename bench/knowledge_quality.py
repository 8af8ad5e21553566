"""Knowledge extraction quality: the offline backfill on a labelled multi-meeting project, scored against its labels.

    .venv/bin/python bench/knowledge_quality.py bench/projects/desk-lamp-launch [more projects] [--json]

Each project folder holds the meetings (``YYYY-MM-DD-*.txt|.vtt|.srt|.json|.md``, the date in the
name is the meeting's date) and ``labels.jsonl``: one decision, risk, opportunity or task per line,
as a careful note-taker would record it. Each label names its ``meeting`` (file name), where it was
said (``turns: [first, last]``, 0-based and inclusive, for transcripts; ``line`` (1-based) for
Markdown notes) and a ``quote`` of those words; decisions carry ``superseded_by`` (the id of the
later decision that replaced it, or null), risks ``status`` (open/closed), tasks ``owner`` and
``due`` (after every meeting: a handover changes the owner, a new date the due date; null when no
date was said) and ``status`` (open/done/cancelled). ``updates`` lists the later places where the
item is restated, reported done, handed over or closed.

The meetings of every project given are ingested as the ingest Lambda does (parse, chunk, embed,
write; the folder's name is the project) into a database of the script's own on DATABASE_URL's server or the embedded one of ``rag up`` (created, migrated and
dropped), the backfill's stages run to completion with no chat model (unless ``--llm``), and the
extracted decisions, risks, opportunities and tasks are read back and scored, per project and, for
several projects, over all of them. A meeting is named ``<project>/<file name>``.

Matching (``match``): an extracted item matches a label when both are of the same kind, come from
the same meeting and their places overlap: the item's turn range ``[start_turn, end_turn]`` meets
the label's ``turns``, or, in Markdown notes, the lines the item's characters span include the
label's ``line``. Each label matches at most one item and each item at most one label; among
overlapping pairs the narrowest item is taken first, then the one starting nearest the label, then
one whose description holds the label's quote (two items of one turn). A label no item overlaps
matches an item at one of its ``updates`` in its own meeting: the same item said again there, as
notes list under "Decisions" what their prose says. An item left unmatched that overlaps one of a
same-kind label's ``updates`` (a restatement, a "done") is neither right nor wrong; every other
unmatched item is a false positive, duplicates included.

Figures (``score``): precision = matched items / (items - neutral ones) and recall = matched labels
/ labels, per kind; over the matched tasks, the share whose assignee is the label's owner (case and
spacing ignored), whose due date is the label's (no date for no date counts as right), whose status
is the label's final status (``done`` and ``cancelled``/``canceled`` as such, any other status is
open), and the same status share over the labels changed in a later meeting; over the matched
risks, the share whose stored status (open / closed) is the label's; superseded decisions
recognised: of the labels with ``superseded_by``, those whose matched item is marked superseded
(``status = 'superseded'`` or a ``superseded_by`` link, which when present must point to the item
matched to the replacing label, or to an item at one of that label's ``updates`` in its own meeting: the
same decision said again there, as notes list under "Decisions" what their prose says).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

KINDS = ("decision", "risk", "opportunity", "task")
TABLES = {"decision": "decisions", "risk": "risks", "opportunity": "opportunities", "task": "tasks"}
MEETING_SUFFIXES = {".txt", ".vtt", ".srt", ".json", ".md"}


@dataclass(frozen=True)
class Place:
    """Where something was said: a meeting and an inclusive range of turns (transcripts) or lines (Markdown)."""

    meeting: str
    first: int
    last: int

    def overlaps(self, other: Place) -> bool:
        return self.meeting == other.meeting and self.first <= other.last and other.first <= self.last


@dataclass(frozen=True)
class Label:
    id: str
    kind: str
    place: Place
    quote: str
    owner: str | None = None
    due: date | None = None
    status: str | None = None  # tasks: open | done | cancelled; risks: open | closed
    superseded_by: str | None = None
    updates: tuple[Place, ...] = ()
    update_quotes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Extracted:
    id: int
    kind: str
    place: Place
    description: str = ""
    assignee: str | None = None
    due: date | None = None
    status: str | None = None
    superseded_by: int | None = None


@dataclass
class Matching:
    pairs: dict[str, Extracted] = field(default_factory=dict)  # label id -> its item
    neutral: list[Extracted] = field(default_factory=list)  # unmatched items on a label's later mention
    false_positives: list[Extracted] = field(default_factory=list)


def _place(meeting: str, entry: dict[str, Any]) -> Place:
    if "turns" in entry:
        first, last = entry["turns"]
        return Place(meeting, int(first), int(last))
    return Place(meeting, int(entry["line"]), int(entry["line"]))


def parse_label(entry: dict[str, Any]) -> Label:
    """One line of labels.jsonl as a Label (ValueError naming the label when a field is wrong)."""
    if entry.get("kind") not in KINDS:
        raise ValueError(f"label {entry.get('id')!r}: kind must be one of {', '.join(KINDS)}, got {entry.get('kind')!r}")
    try:
        return Label(
            id=entry["id"],
            kind=entry["kind"],
            place=_place(entry["meeting"], entry),
            quote=entry["quote"],
            owner=entry.get("owner"),
            due=date.fromisoformat(entry["due"]) if entry.get("due") else None,
            status=entry.get("status"),
            superseded_by=entry.get("superseded_by"),
            updates=tuple(_place(u["meeting"], u) for u in entry.get("updates", [])),
            update_quotes=tuple(u["quote"] for u in entry.get("updates", [])),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"label {entry.get('id')!r}: {type(exc).__name__}: {exc}") from exc


def load_labels(path: Path) -> list[Label]:
    """A project's labels.jsonl, its meetings named ``<project>/<file name>`` and its ids ``<project>/<id>``
    (the project: the file's folder; projects may use the same ids)."""
    entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    project = path.parent.name
    for entry in entries:
        entry["id"] = f"{project}/{entry.get('id')}"
        if entry.get("superseded_by"):
            entry["superseded_by"] = f"{project}/{entry['superseded_by']}"
        for place in (entry, *entry.get("updates", [])):
            if "meeting" in place:
                place["meeting"] = f"{path.parent.name}/{place['meeting']}"
    labels = [parse_label(entry) for entry in entries]
    ids = [label.id for label in labels]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: label ids repeat")
    unknown = {label.superseded_by for label in labels if label.superseded_by} - set(ids)
    if unknown:
        raise ValueError(f"{path}: superseded_by names no label: {sorted(unknown)}")
    return labels


def line_range(body: str, start_char: int, end_char: int) -> tuple[int, int]:
    """The 1-based lines ``body[start_char:end_char]`` spans (an empty span: the line it sits on)."""
    first = body.count("\n", 0, start_char) + 1
    return first, body.count("\n", 0, max(end_char - 1, start_char)) + 1


def match(labels: Sequence[Label], extracted: Sequence[Extracted]) -> Matching:
    """Pair labels with extracted items (the rule is in the module docstring)."""
    candidates = [
        (
            item.place.last - item.place.first,
            abs(item.place.first - label.place.first),
            not _quotes(item, label),
            label.id,
            item.id,
            label,
            item,
        )
        for label in labels
        for item in extracted
        if item.kind == label.kind and item.place.overlaps(label.place)
    ]
    matching = Matching()
    taken: set[tuple[str, int]] = set()  # (kind, id): each knowledge table numbers its own rows
    for *_, label, item in sorted(candidates, key=lambda c: c[:5]):
        if label.id not in matching.pairs and (item.kind, item.id) not in taken:
            matching.pairs[label.id] = item
            taken.add((item.kind, item.id))
    for label in labels:  # none where it sits: the same item said again in its own meeting (notes' prose, list)
        again = [u for u in label.updates if u.meeting == label.place.meeting]
        item = next((i for i in extracted if i.kind == label.kind and (i.kind, i.id) not in taken
                     and any(i.place.overlaps(u) for u in again)), None) if label.id not in matching.pairs else None  # fmt: skip
        if item is not None:
            matching.pairs[label.id] = item
            taken.add((item.kind, item.id))
    for item in extracted:
        if (item.kind, item.id) in taken:
            continue
        later_mention = any(
            label.kind == item.kind and any(item.place.overlaps(update) for update in label.updates) for label in labels
        )
        (matching.neutral if later_mention else matching.false_positives).append(item)
    return matching


def _quotes(item: Extracted, label: Label) -> bool:
    """Whether the item's description holds the label's quote (two items said in one turn: the one it quotes)."""
    return _folded(label.quote) in _folded(item.description)


def _folded(text: str) -> str:
    return " ".join("".join(c if c.isalnum() else " " for c in text).split()).casefold()


def _ratio(numerator: int, denominator: int) -> dict[str, Any]:
    return {"value": round(numerator / denominator, 3) if denominator else None, "n": numerator, "of": denominator}


def _same_person(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def task_status(status: str | None) -> str:
    """A stored task status as open / done / cancelled."""
    status = (status or "open").casefold()
    return {"done": "done", "cancelled": "cancelled", "canceled": "cancelled"}.get(status, "open")


def score(labels: Sequence[Label], extracted: Sequence[Extracted], matching: Matching) -> dict[str, Any]:
    """Every figure of the report, each as ``{"value", "n", "of"}`` (value None when there is nothing to count)."""
    figures: dict[str, Any] = {}
    neutral = {(item.kind, item.id) for item in matching.neutral}
    for kind in KINDS:
        kind_labels = [label for label in labels if label.kind == kind]
        kind_items = [item for item in extracted if item.kind == kind and (kind, item.id) not in neutral]
        found = [label for label in kind_labels if label.id in matching.pairs]
        figures[f"{kind}_precision"] = _ratio(len(found), len(kind_items))
        figures[f"{kind}_recall"] = _ratio(len(found), len(kind_labels))
    tasks = [(label, matching.pairs[label.id]) for label in labels if label.kind == "task" and label.id in matching.pairs]
    figures["task_owner_right"] = _ratio(sum(_same_person(item.assignee, label.owner) for label, item in tasks), len(tasks))
    figures["task_due_right"] = _ratio(sum(item.due == label.due for label, item in tasks), len(tasks))
    figures["task_status_right"] = _ratio(sum(task_status(item.status) == label.status for label, item in tasks), len(tasks))
    changed = [(label, item) for label, item in tasks if label.status != "open"]
    figures["task_status_right_changed_later"] = _ratio(
        sum(task_status(item.status) == label.status for label, item in changed), len(changed)
    )
    risks = [(label, matching.pairs[label.id]) for label in labels if label.kind == "risk" and label.id in matching.pairs]
    figures["risk_status_right"] = _ratio(
        sum((item.status or "open") == (label.status or "open") for label, item in risks), len(risks)
    )
    superseded = [label for label in labels if label.kind == "decision" and label.superseded_by]
    by_id = {label.id: label for label in labels}
    figures["superseded_recognised"] = _ratio(sum(_recognised(label, matching, by_id) for label in superseded), len(superseded))
    figures["counts"] = {
        "labels": {kind: sum(label.kind == kind for label in labels) for kind in KINDS},
        "extracted": {kind: sum(item.kind == kind for item in extracted) for kind in KINDS},
        "neutral": len(matching.neutral),
    }
    return figures


def _recognised(label: Label, matching: Matching, by_id: dict[str, Label]) -> bool:
    item = matching.pairs.get(label.id)
    if item is None or not (item.status == "superseded" or item.superseded_by is not None):
        return False
    if item.superseded_by is None:
        return True
    successor = by_id.get(label.superseded_by or "")
    if successor is None:
        return False
    if (matched := matching.pairs.get(successor.id)) is not None and matched.id == item.superseded_by:
        return True
    # the same decision said again in the replacing decision's meeting (notes list what their prose says)
    said_again = [u for u in successor.updates if u.meeting == successor.place.meeting]
    return any(
        other.kind == "decision" and other.id == item.superseded_by and any(other.place.overlaps(u) for u in said_again)
        for other in [*matching.neutral, *matching.false_positives]
    )


def wrong_over_time(labels: Sequence[Label], matching: Matching) -> list[str]:
    """Matched tasks whose final status, owner or due date differ from the label's; superseded decisions not recognised."""
    lines = []
    by_id = {label.id: label for label in labels}
    for label in labels:
        item = matching.pairs.get(label.id)
        if item is None:
            continue
        if label.kind == "task":
            wrong = [
                f"{name} {got!r}, labelled {want!r}"
                for name, got, want in (
                    ("status", task_status(item.status), label.status),
                    ("owner", item.assignee, label.owner),
                    ("due", item.due, label.due),
                )
                if not (got == want or name == "owner" and _same_person(got, want))
            ]
            if wrong:
                lines.append(f"{label.id} task: {'; '.join(wrong)}: {item.description[:70]}")
        elif label.kind == "decision" and label.superseded_by and not _recognised(label, matching, by_id):
            successor = matching.pairs.get(label.superseded_by)
            lines.append(
                f"{label.id} decision: superseded by {label.superseded_by} "
                f"({'not extracted' if successor is None else f'item {successor.id}'}), "
                f"stored {item.status!r} superseded_by {item.superseded_by}: {item.description[:60]}"
            )
        elif label.kind == "risk" and (item.status or "open") != (label.status or "open"):
            lines.append(f"{label.id} risk: stored {item.status!r}, labelled {label.status!r}: {item.description[:60]}")
        elif label.kind == "decision" and not label.superseded_by and item.status == "superseded":
            lines.append(f"{label.id} decision: current, stored superseded by {item.superseded_by}: {item.description[:60]}")
    return lines


TABLE_ROWS = (
    ("decisions precision / recall", ("decision_precision", "decision_recall")),
    ("risks precision / recall", ("risk_precision", "risk_recall")),
    ("opportunities precision / recall", ("opportunity_precision", "opportunity_recall")),
    ("tasks precision / recall", ("task_precision", "task_recall")),
    ("task owner right", ("task_owner_right",)),
    ("task due date right", ("task_due_right",)),
    ("task status right", ("task_status_right",)),
    ("task status right (changed in a later meeting)", ("task_status_right_changed_later",)),
    ("superseded decisions recognised", ("superseded_recognised",)),
    ("risk status right (open / closed)", ("risk_status_right",)),
)


def format_table(figures: dict[str, Any]) -> list[str]:
    """The report as Markdown table rows: each figure with the counts behind it."""

    def cell(f: dict[str, Any]) -> str:
        value = "-" if f["value"] is None else f"{f['value']:.2f}"
        return f"{value} ({f['n']}/{f['of']})"

    lines = ["| figure | measured |", "|---|---|"]
    for title, keys in TABLE_ROWS:
        if keys == ("superseded_recognised",):
            f = figures[keys[0]]
            lines.append(f"| {title} | {f['n']} of {f['of']} |")
        else:
            lines.append(f"| {title} | {' / '.join(cell(figures[k]) for k in keys)} |")
    return lines


def check_quotes(labels: Iterable[Label], places: dict[str, list[str]]) -> list[str]:
    """Labels (and later mentions) whose quote is not in the text of their place.

    ``places``: meeting -> the text of each turn (transcripts) or line (Markdown notes).
    """
    wrong = []
    for label in labels:
        quoted = [(label.id, label.place, label.quote)]
        quoted += [(f"{label.id} update {i}", *pq) for i, pq in enumerate(zip(label.updates, label.update_quotes))]
        for name, place, quote in quoted:
            texts = places.get(place.meeting)
            if texts is None:
                wrong.append(f"{name}: no meeting {place.meeting!r}")
                continue
            markdown = place.meeting.endswith(".md")
            first, last = (place.first - 1, place.last) if markdown else (place.first, place.last + 1)
            said = " ".join(texts[max(first, 0) : last])
            if " ".join(quote.split()).casefold() not in " ".join(said.split()).casefold():
                wrong.append(f"{name}: {quote!r} is not in {place}")
    return wrong


# ---- the database side: ingest, backfill, read back --------------------------------------------


def meeting_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix in MEETING_SUFFIXES and p.name[:4].isdigit())


def ingest(conn: Any, settings: Any, embedder: Any, folder: Path, tenant: str) -> dict[str, list[str]]:
    """Each meeting as the ingest Lambda writes it; returns meeting -> text of each turn (or line, for notes)."""
    from rag.chunking import chunk_document
    from rag.meeting_fields import document_fields
    from rag.parsing import parse_document
    from rag.store import documents as repo

    places: dict[str, list[str]] = {}
    for path in meeting_files(folder):
        meeting = f"{folder.name}/{path.name}"
        key = f"projects/{meeting}"
        parsed = parse_document(path.read_bytes(), path.name)
        fields = document_fields(key, {})
        fields = repo.DocumentFields(
            title=parsed.title or path.stem,
            meeting_date=fields.meeting_date or parsed.meeting_date,
            participants=parsed.participants or list(dict.fromkeys(t.speaker for t in parsed.turns)),
        )
        max_tokens = min(settings.ingest.chunk_tokens, embedder.max_input_tokens)
        chunks = chunk_document(parsed, embedder.count_tokens, max_tokens, settings.ingest.chunk_overlap_tokens)
        vectors = embedder.embed([c.text for c in chunks])
        source = repo.SourceObject(tenant_id=tenant, project_id=folder.name, bucket="bench", key=key)
        repo.replace_document(conn, source, fields, parsed, chunks, vectors, embedder.model_id)
        places[meeting] = [t.text for t in parsed.turns] if parsed.turns else parsed.text.split("\n")
        print(f"  ingested {meeting}: {parsed.format}, {len(parsed.turns)} turns, {len(chunks)} chunks", flush=True)
    return places


def run_backfill(conn: Any, settings: Any, embedder: Any, batch_size: int = 10, extract_settings: Any = None) -> None:
    """Every stage in order, batch after batch, until none is left (failures are reported, not fatal).

    ``extract_settings``: the extract stage's own (the oracle's chat model), the others run with ``settings``.
    """
    from rag.backfill.stages import run_named_stage
    from rag.store.backfill_queue import STAGES

    for stage in STAGES:
        processed = failed = 0
        stage_settings = extract_settings if stage == "extract" and extract_settings is not None else settings
        while True:
            result = run_named_stage(conn, stage_settings, stage, batch_size, embedder=embedder)
            processed, failed = processed + result.processed, failed + result.failed
            if result.remaining == 0 or result.processed + result.failed == 0:
                break
        print(f"  backfill {stage:<8} {processed} processed, {failed} failed", flush=True)
    errors = conn.execute("SELECT object_key, backfill_error FROM documents WHERE backfill_error IS NOT NULL").fetchall()
    for key, error in errors:
        print(f"  backfill error in {key}: {error}", file=sys.stderr)


def read_extracted(conn: Any, tenant: str) -> list[Extracted]:
    """The four knowledge tables' rows, placed by meeting and turn range (lines for Markdown notes)."""
    items: list[Extracted] = []
    for kind, table in TABLES.items():
        columns = {
            row[0] for row in conn.execute("SELECT column_name FROM information_schema.columns WHERE table_name = %s", (table,))
        }
        wanted = ["assignee", "due_date", "status", "superseded_by"]
        extra = ", ".join(f"k.{c}" if c in columns else f"NULL AS {c}" for c in wanted)
        rows = conn.execute(
            f"SELECT k.id, d.object_key, d.format, d.body, k.start_turn, k.end_turn, k.start_char, k.end_char,"
            f" k.description, {extra} FROM {table} k JOIN documents d ON d.id = k.document_id"
            " WHERE k.tenant_id = %s ORDER BY k.id",
            (tenant,),
        ).fetchall()
        for (id_, key, fmt, body, start_turn, end_turn, start_char, end_char, description,
             assignee, due, status, superseded_by) in rows:  # fmt: skip
            meeting = key.split("/", 1)[1]  # projects/<project>/<file name>
            if start_turn is not None and fmt != "markdown":
                place = Place(meeting, start_turn, end_turn if end_turn is not None else start_turn)
            else:
                place = Place(meeting, *line_range(body, start_char, end_char))
            items.append(
                Extracted(
                    id=id_, kind=kind, place=place, description=description, assignee=assignee, due=due,
                    status=status, superseded_by=superseded_by,
                )
            )  # fmt: skip
    return items


def measure(
    folders: Sequence[Path], *, keep_llm: bool, batch_size: int, oracle: bool = False, oracle_via: str = "openai"
) -> tuple[list[Label], list[Extracted]]:
    """Every project's meetings into one new database, the backfill to completion, the items read back.

    ``oracle``: the extract stage asks ``bench/oracle_model.py``'s scripted model (answers from the labels)
    through an OpenAI-compatible server on localhost, or with ``oracle_via`` "bedrock" through Bedrock's Converse
    API (a Bedrock Runtime endpoint on localhost); segmentation stays offline.
    """
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    if oracle:
        with _oracle_server(folders, oracle_via) as extract_settings_of:
            return _measure(folders, keep_llm=keep_llm, batch_size=batch_size, extract_settings_of=extract_settings_of)
    return _measure(folders, keep_llm=keep_llm, batch_size=batch_size)


@contextmanager
def _oracle_server(folders: Sequence[Path], via: str) -> Iterator[Callable[[Any], Any]]:
    import os

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: tests.embedding.fake_openai
    from oracle_model import OracleModel

    from tests.artifact.fake_bedrock import FakeBedrock
    from tests.embedding.fake_openai import FakeOpenAI

    oracle = OracleModel([folder / "labels.jsonl" for folder in folders])
    if via == "bedrock":
        from rag.llm_bedrock import _client

        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            os.environ.setdefault(name, "oracle-not-a-real-key")
        with FakeBedrock() as bedrock:
            bedrock.converse_responder = oracle.converse
            os.environ["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"] = bedrock.url
            _client.cache_clear()
            yield lambda settings: settings.with_values(llm_provider="bedrock", bedrock_chat_model="oracle")
    else:
        os.environ.setdefault("OPENAI_API_KEY", "sk-oracle-not-a-real-key")
        with FakeOpenAI() as server:
            server.chat_responder = oracle
            yield lambda settings: settings.with_values(
                llm_provider="openai", openai_base_url=server.base_url, llm_model="oracle"
            )
    meetings = sum(len(meeting_files(folder)) for folder in folders)
    print(
        f"  oracle answered {oracle.answered} extraction requests through {via}: {oracle.prompt_tokens:,} prompt and"
        f" {oracle.answer_tokens:,} answer tokens (cl100k), {oracle.prompt_tokens // max(meetings, 1):,} and"
        f" {oracle.answer_tokens // max(meetings, 1):,} a meeting",
        flush=True,
    )
    if not oracle.answered:  # the extract stage ran without the model: its figures would be offline ones
        raise SystemExit("the oracle model was never asked: the extract stage did not get its chat model settings")


def _measure(
    folders: Sequence[Path], *, keep_llm: bool, batch_size: int, extract_settings_of: Callable[[Any], Any] | None = None
) -> tuple[list[Label], list[Extracted]]:
    from common import bench_database
    from rag.config import Settings
    from rag.embedding import get_embedder
    from rag.store.connection import connect
    from rag.store.migrations import migrate_database
    from rag_local.backfill import quiet_powertools

    quiet_powertools()
    labels = [label for folder in folders for label in load_labels(folder / "labels.jsonl")]
    tenant = "bench"
    with bench_database() as url:
        settings = Settings(database_url=url) if keep_llm else Settings(database_url=url, llm_provider="none")
        print(f"database ready; embedding with {settings.embedding.model_id}, chat model: {settings.llm.provider}", flush=True)
        migrate_database(settings, url)
        embedder = get_embedder(settings)
        with connect(url) as conn:
            places: dict[str, list[str]] = {}
            for folder in folders:
                places |= ingest(conn, settings, embedder, folder, tenant)
            wrong = check_quotes(labels, places)
            if wrong:
                raise SystemExit("labels that do not quote their place:\n  " + "\n  ".join(wrong))
            extract_settings = extract_settings_of(settings) if extract_settings_of else None
            run_backfill(conn, settings, embedder, batch_size, extract_settings)
            extracted = read_extracted(conn, tenant)
    return labels, extracted


def of_project(project: str, labels: Sequence[Label], extracted: Sequence[Extracted]) -> tuple[list[Label], list[Extracted]]:
    def mine(place: Place) -> bool:
        return place.meeting.startswith(f"{project}/")

    return [label for label in labels if mine(label.place)], [item for item in extracted if mine(item.place)]


def print_details(labels: Sequence[Label], matching: Matching) -> None:
    """The missed labels, the false positives and what is wrong over time (``--show``)."""
    print("missed:")
    for label in labels:
        if label.id not in matching.pairs:
            print(f"  {label.id} {label.kind} {label.place.meeting}@{label.place.first}: {label.quote}")
    print("false positives:")
    for item in matching.false_positives:
        print(f"  {item.kind} {item.place.meeting}@{item.place.first}-{item.place.last}: {item.description[:100]}")
    print("wrong over time:")
    for line in wrong_over_time(labels, matching):
        print(f"  {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("projects", type=Path, nargs="+", help="folders of meetings, each with labels.jsonl")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON (progress goes to stderr)")
    parser.add_argument("--llm", action="store_true", help="keep the configured chat model (default: the offline backfill)")
    parser.add_argument(
        "--oracle",
        action="store_true",
        help="extract with a scripted chat model that answers from the labels "
        "(bench/oracle_model.py): what the LLM path keeps of right answers",
    )
    parser.add_argument(
        "--oracle-via",
        choices=("openai", "bedrock"),
        default="openai",
        help="the API the oracle answers through: OpenAI-compatible chat (structured output) or Bedrock's Converse "
        "(the tool the model must call)",
    )
    parser.add_argument("--batch-size", type=int, default=10)
    parser.add_argument("--show", action="store_true", help="also list the missed labels and the false positives")
    args = parser.parse_args()
    missing = [str(folder) for folder in args.projects if not (folder / "labels.jsonl").is_file()]
    if missing:
        print(f"no labels.jsonl in {', '.join(missing)}", file=sys.stderr)
        return 1
    if len({folder.name for folder in args.projects}) != len(args.projects):
        print("two projects have the same folder name", file=sys.stderr)
        return 1
    if args.json:
        sys.stdout = sys.stderr  # progress lines; the JSON goes to the real stdout below
    labels, extracted = measure(
        args.projects, keep_llm=args.llm, batch_size=args.batch_size, oracle=args.oracle, oracle_via=args.oracle_via
    )
    scopes = [(folder.name, *of_project(folder.name, labels, extracted)) for folder in args.projects]
    if len(scopes) > 1:
        scopes.append(("all", labels, extracted))
    report = {}
    for name, scope_labels, scope_items in scopes:
        matching = match(scope_labels, scope_items)
        report[name] = score(scope_labels, scope_items, matching)
        if args.json:
            continue
        print(
            f"\n{name}: {len(scope_labels)} labels, {len(scope_items)} extracted items, {len(matching.neutral)} on later mentions"
        )
        print("\n".join(format_table(report[name])))
        if args.show and name != "all":
            print_details(scope_labels, matching)
    if args.json:
        sys.stdout = sys.__stdout__
        print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

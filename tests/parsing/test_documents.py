"""PDF and .docx files: their text (headings kept) read by the text parsers, Teams .docx transcripts as turns,
and files no parser reads refused with an error that names what they are."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from datetime import date

import pytest

from rag.errors import ParseError
from rag.parsing import ParsedDocument, Section, Turn, parse_document

NOTES_DOCX_TEXT = """# Launch review

Notes of the review on 2 November.

## Decisions

- Rechargeable battery on both models.
- Backlight only on the premium model.

### Battery

A rechargeable pack adds two dollars forty per unit.

| Task | Owner | Due |
| --- | --- | --- |
| Confirm USB-C volumes | Priya | 2026-11-20 |

## Next steps

Jonas sends the updated bill of materials
before Friday."""

NOTES_PDF_TEXT = """# Launch review
## Decisions
We ship the remote with a rechargeable battery.
The backlight stays on the premium model only.

## Risks
The USB-C supplier has not confirmed the November volumes.
Owner: Priya Raman, due 2026-11-20."""


def section_texts(doc: ParsedDocument) -> list[tuple[tuple[str, ...], str]]:
    return [(s.heading_path, doc.text[s.start_char : s.end_char]) for s in doc.sections]


def test_docx_headings_become_markdown_headings_and_its_sections(parse_fixture: Callable[..., ParsedDocument]) -> None:
    doc = parse_fixture("notes.docx")

    assert (doc.kind, doc.format, doc.title) == ("document", "docx", "Launch review")
    assert doc.text == NOTES_DOCX_TEXT
    assert [s.heading_path for s in doc.sections] == [
        ("Launch review",),
        ("Launch review", "Decisions"),
        ("Launch review", "Decisions", "Battery"),
        ("Launch review", "Next steps"),
    ]
    assert section_texts(doc)[2][1].startswith("### Battery\n\nA rechargeable pack")
    assert doc.sections[-1] == Section(("Launch review", "Next steps"), NOTES_DOCX_TEXT.index("## Next"), len(NOTES_DOCX_TEXT))


def test_pdf_text_is_read_page_by_page_with_its_bookmarks_as_headings(parse_fixture: Callable[..., ParsedDocument]) -> None:
    doc = parse_fixture("notes.pdf")

    assert (doc.kind, doc.format, doc.title) == ("document", "pdf", "Launch review")
    assert doc.text == NOTES_PDF_TEXT
    assert section_texts(doc) == [
        (("Launch review",), "# Launch review\n"),
        (("Launch review", "Decisions"), NOTES_PDF_TEXT[NOTES_PDF_TEXT.index("## Decisions") : NOTES_PDF_TEXT.index("## Risks")]),
        (("Launch review", "Risks"), NOTES_PDF_TEXT[NOTES_PDF_TEXT.index("## Risks") :]),
    ]


def test_a_pdf_is_recognised_by_its_bytes_whatever_its_name(parse_fixture: Callable[..., ParsedDocument]) -> None:
    assert parse_fixture("notes.pdf", "launch-review").text == NOTES_PDF_TEXT
    assert parse_fixture("notes.docx", "launch-review.bin").text == NOTES_DOCX_TEXT


def test_a_pdf_without_bookmarks_is_plain_text_titled_by_its_metadata() -> None:
    from tests.fixtures.parsing.make_documents import build_pdf, text_content

    pdf = build_pdf([text_content([(12, "Standup notes"), (12, "Ana ships the fix on Monday.")])], title="Weekly standup")

    doc = parse_document(pdf, "standup.pdf")

    assert (doc.format, doc.title, doc.text) == ("pdf", "Weekly standup", "Standup notes\nAna ships the fix on Monday.")
    assert doc.sections == [Section((), 0, len(doc.text))]


def test_a_pdf_of_speaker_lines_is_a_transcript() -> None:
    from tests.fixtures.parsing.make_documents import build_pdf, text_content

    pdf = build_pdf([text_content([(12, "Ana: The cutover is on Monday."), (12, "Ben: Monday works for me.")])])

    doc = parse_document(pdf, "cutover.pdf")

    assert (doc.kind, doc.format) == ("transcript", "pdf")
    assert [(t.speaker, t.text) for t in doc.turns] == [("Ana", "The cutover is on Monday."), ("Ben", "Monday works for me.")]


def test_teams_docx_transcript_becomes_turns_with_speakers_times_and_the_meeting(
    parse_fixture: Callable[..., ParsedDocument],
) -> None:
    doc = parse_fixture("teams_transcript.docx")

    lines = [
        "Maya Chen: We need to settle the battery question today.",
        "Jonas Weber: The prototype runs on two AAA cells. It lasts about four months.",
        "Maya Chen: Then we go rechargeable on both models.",
        "Priya Raman: I will confirm the USB-C volumes by the 20th.",
    ]
    assert (doc.kind, doc.format, doc.title, doc.meeting_date) == ("transcript", "teams-docx", "Launch review", date(2026, 11, 2))
    assert doc.text == "\n".join(lines)
    starts = [doc.text.index(line) for line in lines]
    assert doc.turns == [
        Turn(0, "Maya Chen", "We need to settle the battery question today.", starts[0], starts[0] + len(lines[0]), 3.0),
        Turn(1, "Jonas Weber", "The prototype runs on two AAA cells. It lasts about four months.", starts[1], starts[1] + len(lines[1]), 15.0),
        Turn(2, "Maya Chen", "Then we go rechargeable on both models.", starts[2], starts[2] + len(lines[2]), 62.0),
        Turn(3, "Priya Raman", "I will confirm the USB-C volumes by the 20th.", starts[3], starts[3] + len(lines[3]), 4065.0),
    ]  # fmt: skip
    assert doc.participants == ["Maya Chen", "Jonas Weber", "Priya Raman"]


def test_older_teams_docx_transcript_with_cue_times_merges_a_speakers_cues(parse_fixture: Callable[..., ParsedDocument]) -> None:
    doc = parse_fixture("teams_classic.docx")

    first = "Maya Chen: We need to settle the battery question today. Jonas, what does the prototype run on?"
    second = "Jonas Weber: Two AAA cells, about four months."
    assert (doc.kind, doc.format) == ("transcript", "teams-docx")
    assert doc.text == f"{first}\n{second}"
    assert doc.turns == [
        Turn(0, "Maya Chen", first.removeprefix("Maya Chen: "), 0, len(first), 0.0, 7.1),
        Turn(1, "Jonas Weber", "Two AAA cells, about four months.", len(first) + 1, len(doc.text), 7.1, 11.3),
    ]


def docx_of(*paragraphs: str) -> bytes:
    import docx

    document = docx.Document()
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_teams_docx_with_one_space_before_the_time_and_turns_in_one_paragraph() -> None:
    # No line with a wider gap: a single space is the layout; the speaker line and words may share a paragraph.
    data = docx_of(
        "Weekly sync", "Ana Lopez 0:02\nWe moved the cutover to Friday.", "Ben Okoro 0:09\nFriday works, see you at 10:30"
    )

    doc = parse_document(data, "sync.docx")

    assert (doc.format, doc.title) == ("teams-docx", "Weekly sync")
    assert [(t.speaker, t.text, t.start_time) for t in doc.turns] == [
        ("Ana Lopez", "We moved the cutover to Friday.", 2.0),
        ("Ben Okoro", "Friday works, see you at 10:30", 9.0),
    ]


def test_teams_docx_with_the_speaker_and_cue_times_on_one_line() -> None:
    data = docx_of(
        "Ana Lopez  0:00:01.500 --> 0:00:04.000", "We moved the cutover.", "Ben Okoro  0:00:04.000 --> 0:00:06.250", "Good."
    )

    doc = parse_document(data, "sync.docx")

    assert [(t.speaker, t.text, t.start_time, t.end_time) for t in doc.turns] == [
        ("Ana Lopez", "We moved the cutover.", 1.5, 4.0),
        ("Ben Okoro", "Good.", 4.0, 6.25),
    ]


def test_in_the_cue_layout_words_ending_with_a_time_stay_words() -> None:
    data = docx_of("0:0:0.0 --> 0:0:3.0", "Ana Lopez", "See you at 10:30", "0:0:3.0 --> 0:0:5.0", "Ben Okoro", "Fine.")

    doc = parse_document(data, "sync.docx")

    assert [(t.speaker, t.text) for t in doc.turns] == [("Ana Lopez", "See you at 10:30"), ("Ben Okoro", "Fine.")]


def test_notes_with_a_few_times_at_line_ends_are_no_transcript() -> None:
    data = docx_of(
        "Plan", "Standup at 9:30", "Review at 14:00", *(f"Item {i} is on track and owned by the team." for i in range(10))
    )

    assert parse_document(data, "plan.docx").format == "docx"


def test_a_docx_of_speaker_lines_is_a_transcript() -> None:
    import docx

    document = docx.Document()
    for line in ["Standup", "Ana: The cutover is on Monday.", "Ben: Monday works for me."]:
        document.add_paragraph(line)
    out = io.BytesIO()
    document.save(out)

    doc = parse_document(out.getvalue(), "standup.docx")

    assert (doc.kind, doc.format, doc.title) == ("transcript", "docx", "Standup")
    assert [(t.speaker, t.text) for t in doc.turns] == [("Ana", "The cutover is on Monday."), ("Ben", "Monday works for me.")]
    assert doc.text[doc.turns[1].start_char : doc.turns[1].end_char] == "Ben: Monday works for me."


def test_a_pdf_slower_to_read_than_its_time_budget_fails_saying_so(
    fixture_bytes: Callable[[str], bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    from rag.parsing import pdf

    monkeypatch.setattr(pdf, "MAX_EXTRACT_SECONDS", 0.0)
    with pytest.raises(ParseError) as raised:
        parse_document(fixture_bytes("notes.pdf"), "notes.pdf")
    assert str(raised.value) == "notes.pdf: reading the PDF's text took more than 0 s (1 of 2 pages read); split it into parts"


def test_a_pdf_with_more_pages_than_the_limit_is_refused_before_reading_them(
    fixture_bytes: Callable[[str], bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    from rag.parsing import pdf

    monkeypatch.setattr(pdf, "MAX_PAGES", 1)
    monkeypatch.setattr(pdf, "_page_texts", lambda *_: pytest.fail("pages read"))
    with pytest.raises(ParseError, match=r"^notes\.pdf: the PDF has 2 pages; the limit is 1: split it into parts$"):
        parse_document(fixture_bytes("notes.pdf"), "notes.pdf")


def test_a_pdf_with_more_text_than_ingest_takes_is_refused(
    fixture_bytes: Callable[[str], bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    from rag.parsing import pdf

    monkeypatch.setattr(pdf, "MAX_TEXT_CHARS", 200)
    with pytest.raises(ParseError, match=r"^notes\.pdf: the PDF holds more than 200 characters of text; split it into parts$"):
        parse_document(fixture_bytes("notes.pdf"), "notes.pdf")


def test_a_scanned_pdf_says_it_has_no_text_layer_and_needs_ocr(fixture_bytes: Callable[[str], bytes]) -> None:
    with pytest.raises(ParseError) as raised:
        parse_document(fixture_bytes("scanned.pdf"), "scanned.pdf")
    assert str(raised.value) == (
        "scanned.pdf: the PDF has no text layer (its 2 pages are images, as a scan is); run OCR on it first"
        " and upload the searchable PDF or its text"
    )


def test_a_password_protected_pdf_says_so(fixture_bytes: Callable[[str], bytes]) -> None:
    with pytest.raises(ParseError, match=r"^encrypted\.pdf: the PDF is password-protected; upload it without the password$"):
        parse_document(fixture_bytes("encrypted.pdf"), "encrypted.pdf")


def test_a_pdf_encrypted_without_a_user_password_is_read() -> None:
    # Restrictions only (no password to open): what many exporters write; every reader opens it.
    from tests.fixtures.parsing.make_documents import encrypted, notes_pdf

    assert parse_document(encrypted(notes_pdf(), ""), "restricted.pdf").text == NOTES_PDF_TEXT


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog",
            r"^broken\.pdf: a damaged PDF that cannot be read \(.+\); export or save it again$",
        ),
        (b"%PDF-1.7\n%%EOF\n", r"^broken\.pdf: a damaged PDF that cannot be read \(.+\); export or save it again$"),
    ],
)
def test_a_damaged_pdf_fails_clearly(data: bytes, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_document(data, "broken.pdf")


def zip_of(*names: str, mimetype: str | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        if mimetype is not None:
            archive.writestr("mimetype", mimetype)
        for name in names:
            archive.writestr(name, "<x/>")
    return out.getvalue()


def test_a_broken_docx_fails_clearly(fixture_bytes: Callable[[str], bytes]) -> None:
    truncated = fixture_bytes("notes.docx")[:5000]
    with pytest.raises(ParseError, match=r"^notes\.docx: a damaged \.docx file \(not a readable ZIP archive\); save it again$"):
        parse_document(truncated, "notes.docx")
    no_content_types = zip_of("word/document.xml")
    with pytest.raises(ParseError, match=r"^notes\.docx: a damaged \.docx file \(.+\); save it again$"):
        parse_document(no_content_types, "notes.docx")


def test_a_docx_too_large_once_unzipped_is_refused_before_it_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    from rag.parsing import word

    monkeypatch.setattr(word, "MAX_UNZIPPED_BYTES", 100_000)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<x/>")
        archive.writestr("word/document.xml", b" " * 200_000)  # a few hundred bytes zipped
    with pytest.raises(ParseError, match=r"^bomb\.docx: the \.docx unzips to 200004 bytes; the limit is 100000 bytes$"):
        parse_document(out.getvalue(), "bomb.docx")


MP4_HEADER = b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2"


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("call.mp3", b"ID3\x04\x00\x00\x00\x00\x00\x00" + bytes(64), "call.mp3: an audio file (MP3); transcribe it first and upload the transcript"),
        ("call.mp3", b"\xff\xfb\x90\x64" + bytes(64), "call.mp3: an audio file (MP3); transcribe it first and upload the transcript"),
        ("call.wav", b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(32), "call.wav: an audio file (WAV); transcribe it first and upload the transcript"),
        ("call.m4a", b"\x00\x00\x00\x20ftypM4A \x00\x00\x00\x00", "call.m4a: an audio file (M4A); transcribe it first and upload the transcript"),
        ("call.mp4", MP4_HEADER, "call.mp4: a video file (MP4); transcribe it first and upload the transcript"),
        ("call.webm", b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82\x84webm", "call.webm: a video file (WebM / Matroska); transcribe it first and upload the transcript"),
        ("board.png", b"\x89PNG\r\n\x1a\n" + bytes(16), "board.png: an image (PNG); run OCR on it first and upload the text"),
        ("board.jpg", b"\xff\xd8\xff\xe0\x00\x10JFIF", "board.jpg: an image (JPEG); run OCR on it first and upload the text"),
        ("deck.pptx", zip_of("[Content_Types].xml", "ppt/presentation.xml"), "deck.pptx: a PowerPoint presentation (.pptx), which is not supported; export it as PDF"),
        ("plan.xlsx", zip_of("[Content_Types].xml", "xl/workbook.xml"), "plan.xlsx: an Excel workbook (.xlsx), which is not supported; save the sheet as CSV or export it as PDF"),
        ("notes.odt", zip_of("content.xml", mimetype="application/vnd.oasis.opendocument.text"), "notes.odt: an OpenDocument file (.odt), which is not supported; save it as .docx or PDF"),
        ("notes.doc", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(64), "notes.doc: a Word 97-2003 document (.doc), which is not supported; save it as .docx or PDF"),
        ("notes.docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(64), "notes.docx: a password-protected Word document; save it without the password and upload it again"),
        ("notes.bin", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(64), "notes.bin: a legacy Office file (.doc, .xls, .ppt) or a password-protected Office document, which is not supported; save it as .docx or PDF without a password"),
        ("export.zip", zip_of("a.txt", "b.txt"), "export.zip: a ZIP archive; upload the files it holds one by one"),
        ("notes.rtf", b"{\\rtf1\\ansi Hello}", "notes.rtf: an RTF document, which is not supported; save it as .docx or PDF"),
    ],
)  # fmt: skip
def test_a_format_no_parser_reads_fails_with_its_name(name: str, data: bytes, message: str) -> None:
    with pytest.raises(ParseError) as raised:
        parse_document(data, name)
    assert str(raised.value) == message


def test_text_that_quotes_a_pdf_header_is_still_text() -> None:
    doc = parse_document(b"# PDF notes\n\nA PDF file starts with %PDF-1.7 and ends with %%EOF.\n", "pdf-notes.md")
    assert (doc.format, doc.title) == ("markdown", "PDF notes")


def test_junk_before_the_header_of_a_file_named_pdf_is_tolerated(fixture_bytes: Callable[[str], bytes]) -> None:
    assert parse_document(b"\x00\x01junk\r\n" + fixture_bytes("notes.pdf"), "notes.pdf").text == NOTES_PDF_TEXT


def test_text_starting_like_a_magic_number_is_still_text() -> None:
    doc = parse_document(b"ID3 tags hold the artist and title of an MP3.\n", "id3.txt")
    assert (doc.format, doc.text) == ("text", "ID3 tags hold the artist and title of an MP3.\n")


def test_a_file_named_pdf_that_is_not_one_says_so() -> None:
    with pytest.raises(ParseError, match=r"^scan\.pdf: not a PDF file \(it does not start with %PDF-\)$"):
        parse_document(b"\x00\x01\x02garbage\xff" * 10, "scan.pdf")

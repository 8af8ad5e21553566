"""The transcription services' and meeting tools' own formats, in the shapes they document.

Each is recognised from its content (also under a neutral name such as ``meeting.txt``) and
read into turns with speakers, times where the format has them, and offsets into the text.
"""

from __future__ import annotations

import copy
import json
from datetime import date
from pathlib import Path

import pytest

from rag.errors import ParseError
from rag.parsing import ParsedDocument, detect_format, parse_document

SERVICES = Path(__file__).resolve().parents[1] / "fixtures" / "services"
SAID = [
    "Let's lock the launch date. Is March third still realistic?",
    "Yes, if QA gets the build by Friday.",
    "Good. Liam owns the release notes.",
]


def parse_service(name: str, as_name: str | None = None) -> ParsedDocument:
    return parse_document((SERVICES / name).read_bytes(), as_name or name)


def rows(doc: ParsedDocument) -> list[tuple]:
    return [(t.index, t.speaker, t.text, t.start_char, t.end_char, t.start_time, t.end_time) for t in doc.turns]


def assert_rendered(doc: ParsedDocument) -> None:
    """A JSON transcript is stored as ``Speaker: text`` lines, each turn's span its own line."""
    assert [doc.text[t.start_char : t.end_char] for t in doc.turns] == doc.text.split("\n")
    assert doc.text.split("\n") == [f"{t.speaker}: {t.text}" for t in doc.turns]


@pytest.mark.parametrize(
    ("fixture", "fmt"),
    [
        ("amazon_transcribe.json", "amazon-transcribe"),
        ("whisper.json", "whisper"),
        ("whisperx.json", "whisper"),
        ("assemblyai.json", "assemblyai"),
        ("deepgram_utterances.json", "deepgram"),
        ("deepgram_paragraphs.json", "deepgram"),
        ("otter.txt", "otter"),
        ("google_meet.txt", "google-meet"),
        ("google_meet_gemini.txt", "google-meet"),
        ("zoom_chat.txt", "zoom-chat"),
        ("zoom_chat_cloud.txt", "zoom-chat"),
        ("zoom.vtt", "vtt"),
        ("teams.vtt", "vtt"),
    ],
)
@pytest.mark.parametrize("as_name", [None, "meeting.txt", "meeting"])
def test_each_format_is_recognised_from_its_content(fixture, fmt, as_name):
    doc = parse_service(fixture, as_name)
    assert (doc.kind, doc.format) == ("transcript", fmt)
    expected_family = {"vtt": "vtt", "amazon-transcribe": "json", "whisper": "json", "assemblyai": "json", "deepgram": "json"}
    assert detect_format((SERVICES / fixture).read_text(), as_name or fixture) == expected_family.get(fmt, "transcript-txt")


def test_amazon_transcribe_words_of_one_speaker_form_a_turn():
    doc = parse_service("amazon_transcribe.json")
    assert rows(doc) == [
        (0, "spk_0", SAID[0], 0, 66, 0.52, 3.97),
        (1, "spk_1", SAID[1], 67, 110, 4.82, 7.57),
        (2, "spk_0", SAID[2], 111, 152, 8.42, 10.47),
    ]
    assert_rendered(doc)
    assert doc.participants == ["spk_0", "spk_1"]


def test_a_long_monologue_is_cut_at_a_sentence_end_past_the_merge_limit():
    value = json.loads((SERVICES / "amazon_transcribe.json").read_text())
    sentence = [  # "Ship it on time." said by spk_0, 100 times over
        {"type": "pronunciation", "alternatives": [{"content": word}], "start_time": "1.0", "speaker_label": "spk_0"}
        for word in ("Ship", "it", "on", "time")
    ] + [{"type": "punctuation", "alternatives": [{"content": "."}], "speaker_label": "spk_0"}]
    value["results"]["items"] = sentence * 100
    doc = parse_document(json.dumps(value).encode(), "job.json")
    assert [len(t.text) for t in doc.turns] == [1002, 696]  # 59 sentences (past 1,000 characters), then the other 41
    assert {t.speaker for t in doc.turns} == {"spk_0"}
    assert doc.turns[0].text.endswith("time.") and doc.turns[1].text.startswith("Ship")


def test_amazon_transcribe_older_output_labels_speakers_only_in_segments():
    value = json.loads((SERVICES / "amazon_transcribe.json").read_text())
    for item in value["results"]["items"]:
        del item["speaker_label"]
    doc = parse_document(json.dumps(value).encode(), "job.json")
    assert [(t.speaker, t.text, t.start_time) for t in doc.turns] == [
        ("spk_0", SAID[0], 0.52),
        ("spk_1", SAID[1], 4.82),
        ("spk_0", SAID[2], 8.42),
    ]


def test_amazon_transcribe_channel_identification_names_the_channels():
    # A call transcribed with ChannelIdentification: channel labels, no speaker labels.
    value = json.loads((SERVICES / "amazon_transcribe.json").read_text())
    del value["results"]["speaker_labels"], value["results"]["audio_segments"]
    for item in value["results"]["items"]:
        item["channel_label"] = item.pop("speaker_label").replace("spk_", "ch_")
    doc = parse_document(json.dumps(value).encode(), "call.json")
    assert [(t.speaker, t.text) for t in doc.turns] == [("ch_0", SAID[0]), ("ch_1", SAID[1]), ("ch_0", SAID[2])]


def test_amazon_transcribe_audio_segments_alone_and_no_speakers():
    value = json.loads((SERVICES / "amazon_transcribe.json").read_text())
    segments_only = copy.deepcopy(value)
    del segments_only["results"]["items"]
    doc = parse_document(json.dumps(segments_only).encode(), "job.json")
    assert [(t.speaker, t.text, t.start_time, t.end_time) for t in doc.turns] == [
        ("spk_0", SAID[0], 0.52, 3.97),
        ("spk_1", SAID[1], 4.82, 7.57),
        ("spk_0", SAID[2], 8.42, 10.47),
    ]
    # Without speaker labels the words are cut into sentences, none with a speaker.
    unlabelled = copy.deepcopy(value)
    for key in ("speaker_labels", "audio_segments"):
        del unlabelled["results"][key]
    for item in unlabelled["results"]["items"]:
        del item["speaker_label"]
    doc = parse_document(json.dumps(unlabelled).encode(), "job.json")
    assert [(t.speaker, t.text) for t in doc.turns] == [
        ("Unknown", "Let's lock the launch date."),
        ("Unknown", "Is March third still realistic?"),
        ("Unknown", "Yes, if QA gets the build by Friday."),
        ("Unknown", "Good."),
        ("Unknown", "Liam owns the release notes."),
    ]
    assert doc.participants == []


def test_whisper_segments_without_speakers_are_turns_of_their_own():
    doc = parse_service("whisper.json")
    assert rows(doc) == [
        (0, "Unknown", "Let's lock the launch date.", 0, 36, 0.52, 2.22),
        (1, "Unknown", "Is March third still realistic?", 37, 77, 2.27, 3.97),
        (2, "Unknown", "Yes, if QA gets the build by Friday.", 78, 123, 4.82, 7.57),
        (3, "Unknown", "Good.", 124, 138, 8.42, 8.72),
        (4, "Unknown", "Liam owns the release notes.", 139, 176, 8.77, 10.47),
    ]
    assert_rendered(doc)
    assert doc.participants == []


def test_whisperx_segments_of_one_speaker_are_one_turn():
    doc = parse_service("whisperx.json")
    assert rows(doc) == [
        (0, "SPEAKER_00", SAID[0], 0, 71, 0.52, 3.97),
        (1, "SPEAKER_01", SAID[1], 72, 120, 4.82, 7.57),
        (2, "SPEAKER_00", SAID[2], 121, 167, 8.42, 10.47),
    ]
    assert_rendered(doc)


def test_assemblyai_utterances_in_milliseconds():
    doc = parse_service("assemblyai.json")
    assert rows(doc) == [
        (0, "Speaker A", SAID[0], 0, 70, 0.52, 3.97),
        (1, "Speaker B", SAID[1], 71, 118, 4.82, 7.57),
        (2, "Speaker A", SAID[2], 119, 164, 8.42, 10.47),
    ]
    assert_rendered(doc)
    assert doc.participants == ["Speaker A", "Speaker B"]


def test_assemblyai_without_speaker_labels_reads_the_words():
    value = json.loads((SERVICES / "assemblyai.json").read_text())
    value["utterances"] = None
    for word in value["words"]:
        word["speaker"] = None
    doc = parse_document(json.dumps(value).encode(), "transcript.txt")
    assert doc.format == "assemblyai"
    assert [(t.speaker, t.text, t.start_time) for t in doc.turns][:2] == [
        ("Unknown", "Let's lock the launch date.", 0.52),
        ("Unknown", "Is March third still realistic?", 2.27),
    ]


@pytest.mark.parametrize("fixture", ["deepgram_utterances.json", "deepgram_paragraphs.json"])
def test_deepgram_utterances_or_paragraphs(fixture):
    doc = parse_service(fixture)
    assert rows(doc) == [
        (0, "Speaker 0", SAID[0], 0, 70, 0.52, 3.97),
        (1, "Speaker 1", SAID[1], 71, 118, 4.82, 7.57),
        (2, "Speaker 0", SAID[2], 119, 164, 8.42, 10.47),
    ]
    assert_rendered(doc)


def test_deepgram_words_with_speakers_when_nothing_else_is_there():
    value = json.loads((SERVICES / "deepgram_paragraphs.json").read_text())
    del value["results"]["channels"][0]["alternatives"][0]["paragraphs"]
    doc = parse_document(json.dumps(value).encode(), "listen.json")
    assert [(t.speaker, t.text, t.start_time, t.end_time) for t in doc.turns] == [
        ("Speaker 0", SAID[0], 0.52, 3.97),
        ("Speaker 1", SAID[1], 4.82, 7.57),
        ("Speaker 0", SAID[2], 8.42, 10.47),
    ]


def test_deepgram_multichannel_without_diarization_names_each_channel():
    # A call with multichannel=true: each side is a channel; paragraphs carry no speaker.
    value = json.loads((SERVICES / "deepgram_paragraphs.json").read_text())
    alternative = value["results"]["channels"][0]["alternatives"][0]
    del alternative["words"]
    paragraphs = alternative["paragraphs"]["paragraphs"]
    for paragraph in paragraphs:
        side = paragraph.pop("speaker")
        paragraph["channel"] = side
    sides = [copy.deepcopy(alternative) for _ in range(2)]
    for side, alt in enumerate(sides):
        alt["paragraphs"]["paragraphs"] = [p for p in paragraphs if p["channel"] == side]
    value["results"]["channels"] = [{"alternatives": [alt]} for alt in sides]
    doc = parse_document(json.dumps(value).encode(), "call.json")
    expected = [("Channel 0", SAID[0], 0.52), ("Channel 1", SAID[1], 4.82), ("Channel 0", SAID[2], 8.42)]
    assert [(t.speaker, t.text, t.start_time) for t in doc.turns] == expected
    # The same call with utterances=true: each utterance names its channel.
    utterances = json.loads((SERVICES / "deepgram_utterances.json").read_text())["results"]["utterances"]
    for utterance in utterances:
        utterance["channel"] = utterance.pop("speaker")
    value["results"]["utterances"] = utterances
    doc = parse_document(json.dumps(value).encode(), "call.json")
    assert [(t.speaker, t.text, t.start_time) for t in doc.turns] == expected


def test_otter_name_and_time_then_the_words():
    doc = parse_service("otter.txt")
    text = (SERVICES / "otter.txt").read_text()
    assert doc.text == text  # offsets point into the export itself
    assert rows(doc) == [
        (0, "Sofia Ruiz", SAID[0], 0, 76, 0.0, None),
        (1, "Liam Chen", "Yes, if QA gets the build by Friday. I'll send the checklist today.", 78, 161, 6.0, None),
        (2, "Priya Nair", "The store listing is ready for review.", 163, 221, 3725.0, None),
    ]
    assert text[0:76] == f"Sofia Ruiz  0:00\n{SAID[0]}"
    assert text[163:221] == "Priya Nair  1:02:05\nThe store listing is ready for review."
    assert "otter.ai" not in " ".join(t.text for t in doc.turns)  # the export's footer is no turn
    assert doc.participants == ["Sofia Ruiz", "Liam Chen", "Priya Nair"]


def test_google_meet_header_timestamps_and_turns():
    doc = parse_service("google_meet.txt")
    assert (doc.title, doc.meeting_date) == ("Launch sync", date(2026, 11, 2))
    assert doc.participants == ["Liam Chen", "Priya Nair", "Sofia Ruiz"]  # the Attendees line
    assert rows(doc) == [
        (0, "Sofia Ruiz", SAID[0], 247, 318, 0.0, None),
        (1, "Liam Chen", SAID[1], 319, 366, None, None),
        (2, "Priya Nair", "The store listing is ready for review.", 377, 427, 300.0, None),
        (3, "Sofia Ruiz", SAID[2], 428, 474, None, None),
    ]
    assert [doc.text[t.start_char : t.end_char] for t in doc.turns] == [f"{t.speaker}: {t.text}" for t in doc.turns]


def test_google_meet_with_gemini_notes_reads_turns_only_after_the_transcript_heading():
    doc = parse_service("google_meet_gemini.txt")
    text = (SERVICES / "google_meet_gemini.txt").read_text()
    assert (doc.title, doc.meeting_date) == ("Launch sync", date(2026, 11, 2))  # the date line Gemini writes
    assert rows(doc) == [
        (0, "Sofia Ruiz", SAID[0], 262, 333, 0.0, None),
        (1, "Liam Chen", SAID[1], 334, 381, None, None),
        (2, "Priya Nair", "The store listing is ready for review.", 392, 442, 300.0, None),
        (3, "Sofia Ruiz", SAID[2], 443, 489, None, None),
    ]
    # The notes' "Launch date: ..." and "Liam Chen: Write ..." lines are no turns, yet stay in the text.
    assert doc.text == text and "Liam Chen: Write the release notes." in text[: doc.turns[0].start_char]
    assert doc.participants == ["Sofia Ruiz", "Liam Chen", "Priya Nair"]


def test_zoom_chat_saved_from_the_meeting():
    doc = parse_service("zoom_chat.txt")
    assert rows(doc) == [
        (0, "Sofia Ruiz", "Deck for today: https://example.com/launch-deck", 0, 86, None, None),
        (1, "Liam Chen", "QA checklist is in the channel. Two items still open.", 87, 179, None, None),
        (2, "Priya Nair", "Can we move the store listing review to Thursday?", 180, 286, None, None),
    ]
    assert doc.text[87:179] == "10:02:41 From Liam Chen to Everyone:\n\tQA checklist is in the channel.\n\tTwo items still open."


def test_zoom_chat_of_a_cloud_recording_is_timed_from_its_start():
    doc = parse_service("zoom_chat_cloud.txt")
    assert rows(doc) == [
        (0, "Sofia Ruiz", "Deck for today: https://example.com/launch-deck", 0, 68, 72.0, None),
        (1, "Liam Chen", "QA checklist is in the channel.", 69, 120, 98.0, None),
        (2, "Priya Nair", "Store listing review moves to Thursday.", 121, 181, 122.0, None),
    ]


def test_zoom_chat_of_older_clients_on_one_line():
    chat = "10:02:15\t From  Sofia Ruiz  to  Everyone : Deck for today: see the channel\n10:02:41\t From  Liam Chen : Thanks\n"
    doc = parse_document(chat.encode(), "meeting_saved_chat.txt")
    assert [(t.speaker, t.text, t.start_char, t.end_char) for t in doc.turns] == [
        ("Sofia Ruiz", "Deck for today: see the channel", 0, 74),
        ("Liam Chen", "Thanks", 75, 109),
    ]


def test_zoom_vtt_speakers_come_from_the_cue_text():
    doc = parse_service("zoom.vtt")
    assert rows(doc) == [
        (0, "Sofia Ruiz", SAID[0], 0, 71, 0.52, 3.97),
        (1, "Liam Chen", "Yes, if QA gets the build by Friday. I'll send the checklist today.", 72, 150, 4.77, 9.1),
        (2, "Sofia Ruiz", SAID[2], 151, 197, 10.02, 12.47),
    ]
    assert_rendered(doc)


def test_teams_vtt_speakers_come_from_voice_tags():
    doc = parse_service("teams.vtt")
    assert rows(doc) == [
        (0, "Sofia Ruiz", SAID[0], 0, 71, 0.52, 3.97),
        (1, "Liam Chen", SAID[1], 72, 119, 4.77, 7.57),
        (2, "Sofia Ruiz", SAID[2], 120, 166, 10.02, 12.47),
    ]
    assert_rendered(doc)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"results": {"items": [{"type": "pronunciation", "alternatives": [], "start_time": "1.0"}]}},
            "job.json: expected Amazon Transcribe's JSON output; results.items[0].alternatives: List should have at least 1 item",
        ),
        (
            {"segments": [{"start": 0.0, "end": "soon", "text": " Hi."}]},
            "job.json: expected Whisper / WhisperX's JSON output; segments[0].end: Input should be a valid number",
        ),
        (
            {"utterances": [{"speaker": "A", "start": 0, "end": 900}]},
            "job.json: expected AssemblyAI's JSON output; utterances[0].text: Field required",
        ),
        (
            {"results": {"channels": [{"alternatives": [{"words": [{"start": 0.1}]}]}]}},
            "job.json: expected Deepgram's JSON output; results.channels[0].alternatives[0].words[0].word: Field required",
        ),
    ],
)
def test_a_service_file_in_a_wrong_shape_names_the_service_and_where(data, message):
    with pytest.raises(ParseError) as raised:
        parse_document(json.dumps(data).encode(), "job.json")
    assert str(raised.value).startswith(message)


def test_an_unknown_json_object_names_every_accepted_shape():
    with pytest.raises(ParseError) as raised:
        parse_document(b'{"transcript": "hello", "speakers": 2}', "export.json")
    assert str(raised.value) == (
        'export.json: expected a list of {"speaker", "text", "start"?, "end"?} turns or {"turns": [...]}, '
        'or the JSON output of Amazon Transcribe ({"results": {"transcripts", "items"}}), '
        'Deepgram ({"results": {"channels": [...], "utterances"?}}), '
        'AssemblyAI ({"utterances": [{"speaker", "text", "start", "end"}]}), '
        'Whisper / WhisperX ({"segments": [{"start", "end", "text", "speaker"?}]}); field "turns": Field required'
    )


@pytest.mark.parametrize(
    "data",
    [
        {"results": {"transcripts": [{"transcript": ""}], "items": []}},
        {"segments": []},
        {"utterances": [], "text": ""},
    ],
)
def test_a_service_file_without_speech_is_an_error(data):
    with pytest.raises(ParseError, match=r"^job.json: no speech found$"):
        parse_document(json.dumps(data).encode(), "job.json")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Agenda  10:00\nShip the beta.\n", "text"),  # one Otter-like line is a document's, not an export
        ("Notes - Transcript\nAlice: hi\nBob: hello\n", "transcript-txt"),  # no Meet timestamps: plain turns
        ("Alice: We ship in March.\n00:05:00\nBob: QA needs a week.\n", "transcript-txt"),
    ],
)
def test_near_misses_keep_their_old_formats(text, expected):
    doc = parse_document(text.encode(), "notes.txt")
    assert doc.format == expected

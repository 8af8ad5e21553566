"""The text that goes into the indexes: a transcript's words without its markers.

Transcripts mark non-speech events inline: ``{disfmarker}``, ``{vocalsound}``, ``{gap}``
(AMI and ICSI style), ``[laughter]``, ``[inaudible]``, ``(crosstalk)`` (subtitle and
transcription-service style). They are not words anyone said: in an embedding they pull
every chunk of a transcript towards every other, in BM25 they lengthen chunks, and they
count against the model's token budget. The stored text keeps them (offsets and quotes
stay exact); what is embedded, the token count that sizes chunks, and the keyword
tsvector leave them out. ``sql/0004_index_text_without_transcript_markers.sql`` defines
the same pattern as the SQL function ``index_text`` for the tsvector columns; a test
checks that both agree.
"""

from __future__ import annotations

import re

# Bracketed non-speech events; a bracket with anything else in it (a citation, a link) is content.
NON_SPEECH_EVENTS = (
    "applause", "background noise", "blank_audio", "coughs?", "coughing", "crosstalk", "cross-talk",
    "inaudible", "indiscernible", "laughs?", "laughing", "laughter", "music", "noise", "pause",
    "silence", "sighs?", "unintelligible",
)  # fmt: skip
MARKER_PATTERN = r"\{[a-z_]+\}|[\[(](?:" + "|".join(NON_SPEECH_EVENTS) + r")[\])]"
_MARKER = re.compile(MARKER_PATTERN, re.IGNORECASE)
_SPACES = re.compile(r"[ \t]{2,}")


def index_text(text: str) -> str:
    """``text`` with each transcript marker replaced by a space (runs of spaces collapsed)."""
    if "{" not in text and "[" not in text and "(" not in text:
        return text  # the common case of a document, at no cost
    return _SPACES.sub(" ", _MARKER.sub(" ", text))

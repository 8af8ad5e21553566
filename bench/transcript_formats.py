"""How fast the transcription services' and meeting tools' exports are recognised and parsed.

    .venv/bin/python bench/transcript_formats.py [--repeat 400] [--runs 3]

Each fixture of tests/fixtures/services is repeated ``--repeat`` times (400: over an hour of
meeting, 9,200 words in the word-level JSON) with its JSON times shifted, then goes through
``rag.parsing.parse_document`` under a neutral name (``meeting.txt``: the content decides) as the
ingest runs it; the median of ``--runs`` wall times is reported with the size and turn count. Two
files that are none of these formats (10 MB of prose; one 1 MB line that starts like a Zoom chat
message) show what recognising them costs every other file.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rag.parsing import parse_document

SERVICES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "services"
SHIFT_SECONDS = 20.0


def shifted(value: Any, offset: float) -> Any:
    """A copy of a JSON fixture with every time shifted by ``offset`` seconds (milliseconds for AssemblyAI)."""
    value = copy.deepcopy(value)
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            for key, inner in item.items():
                if key in ("start", "end", "start_time", "end_time") and isinstance(inner, (int, float, str)):
                    scale = 1000 if isinstance(inner, int) else 1
                    item[key] = f"{float(inner) + offset:.3f}" if isinstance(inner, str) else inner + offset * scale
                else:
                    pending.append(inner)
        elif isinstance(item, list):
            pending.extend(item)
    return value


def repeated_json(name: str, repeat: int) -> bytes:
    base = json.loads((SERVICES / name).read_text())
    copies = [shifted(base, i * SHIFT_SECONDS) for i in range(repeat)]
    merged = copies[0]

    def extend(path: list[str | int]) -> None:
        target = merged
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = [x for c in copies for x in _get(c, path)]

    for path in LISTS[name]:
        extend(path)
    return json.dumps(merged).encode()


def _get(value: Any, path: list[str | int]) -> Any:
    for part in path:
        value = value[part]
    return value


LISTS: dict[str, list[list[str | int]]] = {
    "amazon_transcribe.json": [["results", "items"], ["results", "audio_segments"]],
    "whisperx.json": [["segments"]],
    "assemblyai.json": [["utterances"], ["words"]],
    "deepgram_utterances.json": [["results", "utterances"]],
    "deepgram_paragraphs.json": [["results", "channels", 0, "alternatives", 0, "paragraphs", "paragraphs"]],
}
TEXT_EXPORTS = ["otter.txt", "google_meet.txt", "zoom_chat.txt", "zoom.vtt", "teams.vtt"]


def timed(make: Callable[[], bytes], runs: int) -> tuple[int, int, str, float]:
    data = make()
    times, doc = [], None
    for _ in range(runs):
        start = time.perf_counter()
        doc = parse_document(data, "meeting.txt")
        times.append(time.perf_counter() - start)
    assert doc is not None
    return len(data), len(doc.turns), doc.format, statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=400)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    cases: list[tuple[str, Callable[[], bytes]]] = [(n, lambda n=n: repeated_json(n, args.repeat)) for n in LISTS]
    cases += [(n, lambda n=n: _repeated_text(n, args.repeat)) for n in TEXT_EXPORTS]
    cases += [
        (
            "prose (not a transcript)",
            lambda: ("The launch keeps March third; QA needs the build by Friday.\n" * 160_000).encode(),
        ),
        ("one long line like a chat message", lambda: ("10:02:15 From " + "a to b " * 150_000 + "\nSofia: hi\n").encode()),
    ]
    print(f"{'file':36} {'MB':>6} {'turns':>6} {'format':18} {'seconds':>8}")
    for name, make in cases:
        size, turns, fmt, seconds = timed(make, args.runs)
        print(f"{name:36} {size / 1e6:6.2f} {turns:6d} {fmt:18} {seconds:8.3f}")


def _repeated_text(name: str, repeat: int) -> bytes:
    text = (SERVICES / name).read_text()
    if name.endswith(".vtt"):
        header, _, cues = text.partition("\n\n")
        return (header + "\n\n" + (cues.rstrip("\n") + "\n\n") * repeat).encode()
    return ((text.rstrip("\n") + "\n") * repeat).encode()


if __name__ == "__main__":
    main()

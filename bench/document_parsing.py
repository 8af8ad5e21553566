"""How fast PDF and .docx files are turned into text: what bounds the page limit of rag.parsing.pdf.

    .venv/bin/python bench/document_parsing.py [--pages 50,200,500] [--runs 3]

For each size, a synthetic PDF (Helvetica text pages of 45 lines, about 3,000 characters each, written
by tests/fixtures/parsing/make_documents.py) and a .docx of the same text (a Heading 1 per "page", one
paragraph per line) go through ``rag.parsing.parse_document`` as the ingest runs it; the median of
``--runs`` wall times is reported with pages (or paragraphs) per second. The first import of pypdf and
python-docx is timed apart (what the first such file of a cold Lambda pays).
"""

from __future__ import annotations

import argparse
import io
import random
import statistics
import subprocess
import sys
import time

from rag.config import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT))

from tests.fixtures.parsing.make_documents import build_pdf, text_content  # noqa: E402

WORDS = (
    "battery launch supplier volume decision owner review budget schedule prototype risk cutover "
    "customer release feature estimate testing vendor contract quality deadline hand-over team"
).split()
LINES_PER_PAGE = 45


def page_lines(rng: random.Random) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(10)).capitalize() + "." for _ in range(LINES_PER_PAGE)]


def make_pdf(pages: list[list[str]]) -> bytes:
    return build_pdf([text_content([(10, line) for line in lines]) for lines in pages])


def make_docx(pages: list[list[str]]) -> bytes:
    import docx

    document = docx.Document()
    for number, lines in enumerate(pages, start=1):
        document.add_heading(f"Part {number}", level=1)
        for line in lines:
            document.add_paragraph(line)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def timed(data: bytes, name: str, runs: int) -> float:
    from rag.parsing import parse_document

    times = []
    for _ in range(runs):
        start = time.perf_counter()
        parse_document(data, name)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def import_ms(module: str) -> float:
    probe = f"import time; t = time.perf_counter(); import {module}; print((time.perf_counter() - t) * 1000)"
    return float(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", default="50,200,500")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"first import: pypdf {import_ms('pypdf'):.0f} ms, python-docx {import_ms('docx'):.0f} ms")
    print("| pages | PDF bytes | PDF parse | pages/s | .docx bytes | .docx parse | pages/s |")
    print("|---|---|---|---|---|---|---|")
    rng = random.Random(7)
    for count in (int(n) for n in args.pages.split(",")):
        pages = [page_lines(rng) for _ in range(count)]
        pdf, docx_bytes = make_pdf(pages), make_docx(pages)
        pdf_s = timed(pdf, "bench.pdf", args.runs)
        docx_s = timed(docx_bytes, "bench.docx", args.runs)
        print(
            f"| {count} | {len(pdf):,} | {pdf_s:.2f} s | {count / pdf_s:.0f} | {len(docx_bytes):,} | {docx_s:.2f} s"
            f" | {count / docx_s:.0f} |"
        )


if __name__ == "__main__":
    main()

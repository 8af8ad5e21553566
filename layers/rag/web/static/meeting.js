// The meeting view: a document's text by turn (speaker, time), its segments as a table of contents, the items
// extracted from it beside the turns they came from, and the cited range highlighted and scrolled to.
import { api } from "./auth.js";
import { clock, day, el, placeHref, screen, sourceName, status } from "./dom.js";

const WINDOW = 200000; // characters of the body per request (the route's default)
const contents = new Map(); // document + offset -> the content response (table-of-contents clicks re-render)

function intParam(params, name) {
  const value = params.get(name);
  return value !== null && /^\d+$/.test(value) ? Number(value) : null;
}

export async function meetingScreen(ctx) {
  const id = ctx.documentId;
  const turn = intParam(ctx.params, "turn");
  const start = intParam(ctx.params, "start");
  const end = intParam(ctx.params, "end");
  // The window holds the cited place: from the start unless the place lies beyond the first window.
  let offset = intParam(ctx.params, "offset");
  if (offset === null) offset = start !== null && start >= WINDOW ? Math.max(0, start - 2000) : 0;
  const key = `${id}@${offset}`;
  if (!contents.has(key)) {
    screen("Meeting", status("Loading the meeting…"));
    contents.set(key, await api(`/v1/documents/${encodeURIComponent(id)}/content?offset=${offset}&limit=${WINDOW}`));
  }
  if (!ctx.isCurrent()) return;
  const doc = contents.get(key);
  ctx.setProject(doc.project_id);
  const range = start !== null && end !== null && end > start ? { start, end } : null;
  const title = doc.title || sourceName(doc.source) || "Meeting";
  const body = doc.turns.length ? turnsView(doc, range) : documentView(doc, range);
  screen(
    title,
    facts(doc),
    el("div", { class: `meeting${doc.segments.length ? " with-toc" : ""}` }, doc.segments.length ? contentsNav(doc) : null, el("div", { class: "body" }, windowLinks(doc, "before"), body, windowLinks(doc, "after"))),
  );
  const target = (turn !== null && document.getElementById(`turn-${turn}`)) || document.querySelector("mark.cited");
  if (target) {
    target.classList.add("target");
    target.scrollIntoView({ block: "center" });
    target.focus({ preventScroll: true });
  }
}

function facts(doc) {
  const items = [
    doc.meeting_date ? ["Date", day(doc.meeting_date)] : null,
    doc.participants?.length ? ["Participants", doc.participants.join(", ")] : null,
    ["Source", doc.source?.uri || ""],
    ["Status", doc.status],
  ].filter(Boolean);
  return el("dl", { class: "facts" }, items.map(([name, value]) => [el("dt", { text: name }), el("dd", { text: value })]));
}

function contentsNav(doc) {
  return el(
    "nav",
    { class: "toc", "aria-label": "Topics" },
    el("h2", { text: "Topics" }),
    el(
      "ol",
      {},
      doc.segments.map((segment) =>
        el("li", {}, el("a", { href: placeHref(doc.document_id, { turn: segment.start_turn, start: segment.start_char, end: segment.start_char }), text: segment.title || `Part ${segment.index + 1}` })),
      ),
    ),
  );
}

function windowLinks(doc, side) {
  if (side === "before" && doc.offset > 0) {
    return el("p", {}, el("a", { href: `#/doc/${encodeURIComponent(doc.document_id)}?offset=${Math.max(0, doc.offset - WINDOW)}`, text: "Show the earlier part" }));
  }
  if (side === "after" && doc.truncated) {
    return el("p", {}, el("a", { href: `#/doc/${encodeURIComponent(doc.document_id)}?offset=${doc.offset + doc.text.length}`, text: "Show the later part" }));
  }
  return null;
}

/** Body text from absolute char positions, with the part inside the cited range in <mark class="cited">. */
function rangeText(doc, from, to, range) {
  const text = doc.text.slice(Math.max(0, from - doc.offset), Math.max(0, to - doc.offset));
  if (!range || range.end <= from || range.start >= to) return [text];
  const a = Math.max(range.start, from) - from;
  const b = Math.min(range.end, to) - from;
  return [text.slice(0, a), el("mark", { class: "cited", tabindex: "-1", text: text.slice(a, b) }), text.slice(b)];
}

/** Where a turn's words begin: after a "Speaker:" label the body repeats (shown once, above the words). */
function spokenFrom(doc, turn) {
  const head = doc.text.slice(Math.max(0, turn.start_char - doc.offset), Math.max(0, turn.start_char - doc.offset) + 300);
  const label = turn.speaker ? head.match(/^[^\n:]{1,200}:[ \t]*/) : null;
  return label && label[0].startsWith(turn.speaker) ? turn.start_char + label[0].length : turn.start_char;
}

function itemsFrom(doc, turnIndex) {
  return doc.items.filter((item) => item.start_turn === turnIndex);
}

function turnsView(doc, range) {
  const segmentAt = new Map(doc.segments.map((s) => [s.start_turn, s]));
  const list = el("ol", { class: "turns" });
  for (const turn of doc.turns) {
    const segment = segmentAt.get(turn.index);
    if (segment) list.append(el("li", { class: "segment", id: `segment-${segment.index}` }, el("h2", { text: segment.title || `Part ${segment.index + 1}` }), segment.summary ? el("p", { class: "muted", text: segment.summary }) : null));
    const items = itemsFrom(doc, turn.index);
    list.append(
      el(
        "li",
        { class: "turn", id: `turn-${turn.index}`, tabindex: "-1" },
        el("p", { class: "who" }, el("strong", { text: turn.speaker || "Unknown" }), turn.start_s !== null && turn.start_s !== undefined ? el("time", { text: clock(turn.start_s) }) : null),
        el("p", { class: "said" }, rangeText(doc, spokenFrom(doc, turn), turn.end_char, range)),
        items.length ? el("ul", { class: "items", "aria-label": "Extracted here" }, items.map((item) => itemView(doc, item))) : null,
      ),
    );
  }
  return list;
}

/** A document (no turns): its lines, Markdown headings as headings, the cited range highlighted; items listed after. */
function documentView(doc, range) {
  const out = el("div", { class: "document" });
  let position = doc.offset;
  let paragraph = null;
  for (const line of doc.text.split("\n")) {
    const from = position;
    const to = position + line.length;
    position = to + 1;
    const heading = line.match(/^(#{1,6})\s+/);
    if (!line.trim()) {
      paragraph = null;
    } else if (heading) {
      paragraph = null;
      const level = Math.min(6, heading[1].length + 1);
      out.append(el(`h${level}`, {}, rangeText(doc, from + heading[0].length, to, range)));
    } else {
      if (!paragraph) out.append((paragraph = el("p", {})));
      else paragraph.append("\n");
      paragraph.append(...rangeText(doc, from, to, range).map((part) => (typeof part === "string" ? document.createTextNode(part) : part)));
    }
  }
  if (doc.items.length) {
    out.append(el("h2", { text: "Extracted items" }), el("ul", { class: "items" }, doc.items.map((item) => itemView(doc, item))));
  }
  return out;
}

function itemView(doc, item) {
  const details = [
    item.assignee ? `owner ${item.assignee}` : null,
    item.due_date ? `due ${day(item.due_date)}` : null,
    item.status && item.status !== "open" ? item.status : null,
    item.superseded_by ? "superseded" : null,
  ].filter(Boolean);
  return el(
    "li",
    { class: `item ${item.kind}` },
    el("span", { class: `badge ${item.kind}`, text: item.kind }),
    el("a", { href: placeHref(doc.document_id, { turn: item.start_turn, start: item.start_char, end: item.end_char }), text: item.description }),
    details.length ? el("span", { class: "muted", text: ` · ${details.join(" · ")}` }) : null,
  );
}

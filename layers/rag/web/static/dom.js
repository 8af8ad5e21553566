// DOM helpers. Server text only ever becomes text nodes (textContent), never markup.

/** An element with attributes and children (strings become text nodes; null/false are skipped). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (value === true) node.setAttribute(name, "");
    else node.setAttribute(name, String(value));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Replace a node's children. */
export function fill(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

const STOP_WORDS = new Set(
  "a about an and are as at be by did do does for from had has have how i in is it its of on or our so that the their them then there these they this to was we were what when where which who whom why will with would you".split(
    " ",
  ),
);

/** The words of a query worth highlighting: letters or digits, two or more, no stop words. */
export function queryWords(query) {
  const words = (query.toLowerCase().match(/[\p{L}\p{N}]{2,}/gu) || []).filter((w) => !STOP_WORDS.has(w));
  return [...new Set(words)];
}

function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** A pattern matching whole words that begin like a query word (keyword search stems: "decide" finds "decision"). */
export function wordPattern(words) {
  if (!words.length) return null;
  const stems = words.map((w) => escapeRegExp(w.length > 5 ? w.slice(0, w.length - 2) : w));
  return new RegExp(`(?<![\\p{L}\\p{N}])(?:${stems.join("|")})[\\p{L}\\p{N}]*`, "giu");
}

/** Text with the pattern's matches in <mark> elements, as nodes. */
export function highlighted(text, pattern) {
  if (!pattern) return [document.createTextNode(text)];
  const nodes = [];
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > last) nodes.push(document.createTextNode(text.slice(last, match.index)));
    nodes.push(el("mark", { text: match[0] }));
    last = match.index + match[0].length;
  }
  if (last < text.length) nodes.push(document.createTextNode(text.slice(last)));
  return nodes;
}

/** Seconds as m:ss or h:mm:ss. */
export function clock(seconds) {
  if (seconds === null || seconds === undefined) return "";
  const s = Math.floor(seconds);
  const hh = Math.floor(s / 3600);
  const mm = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, "0");
  return hh ? `${hh}:${String(mm).padStart(2, "0")}:${ss}` : `${mm}:${ss}`;
}

/** A YYYY-MM-DD date as the reader's locale writes it (the date itself, no time zone shift). */
export function day(value) {
  if (!value) return "";
  const [y, m, d] = value.slice(0, 10).split("-").map(Number);
  if (!y || !m || !d) return value;
  return new Date(Date.UTC(y, m - 1, d)).toLocaleDateString(undefined, {
    year: "numeric",
    month: "short",
    day: "numeric",
    timeZone: "UTC",
  });
}

/** A timestamp as the reader's local date and time. */
export function moment(value) {
  if (!value) return "";
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** The name a source is shown by: its title, else the last part of its key. */
export function sourceName(source) {
  if (!source) return "";
  if (source.title) return source.title;
  const parts = (source.uri || "").split("/");
  return decodeURIComponent(parts[parts.length - 1] || source.uri || "");
}

/** The hash of the meeting view at a place: a turn and a range of characters. */
export function placeHref(documentId, { turn = null, start = null, end = null } = {}) {
  const params = new URLSearchParams();
  if (turn !== null && turn !== undefined) params.set("turn", String(turn));
  if (start !== null && start !== undefined) params.set("start", String(start));
  if (end !== null && end !== undefined) params.set("end", String(end));
  const query = params.toString();
  return `#/doc/${encodeURIComponent(documentId)}${query ? `?${query}` : ""}`;
}

/** The meeting view's hash for something said (a result, a citation, a brief item). */
export function saidHref(said) {
  return placeHref(said.document_id, { turn: said.start_turn, start: said.start_char, end: said.end_char });
}

/** A status line (polite live region) or an error (alert). */
export function status(text) {
  return el("p", { class: "status", role: "status", text });
}

export function alertBox(text) {
  return el("p", { class: "error", role: "alert", text });
}

/** The hash of a project's screen. */
export function projectHref(project, name, params = null) {
  const query = params ? params.toString() : "";
  return `#/p/${encodeURIComponent(project)}/${name}${query ? `?${query}` : ""}`;
}

/** A fresh screen in <main>: a heading that takes focus (a screen reader says where it is), then the content. */
export function screen(title, ...children) {
  const main = document.getElementById("main");
  const h1 = el("h1", { tabindex: "-1", text: title });
  fill(main, h1, ...children);
  document.title = `${title} · Meeting knowledge`;
  if (!main.contains(document.activeElement) || document.activeElement === main) h1.focus({ preventScroll: true });
  return h1;
}

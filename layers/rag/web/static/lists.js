// The project's brief (decisions, risks, tasks by owner, recent changes) and its ingest status with upload.
import { ApiError, api, currentConfig } from "./auth.js";
import { day, el, fill, moment, placeHref, projectHref, saidHref, screen, sourceName, status } from "./dom.js";

// --- brief -----------------------------------------------------------------------------------------------

const CHANGE_LISTS = [
  ["decisions_made", "Decisions made"],
  ["decisions_superseded", "Decisions superseded"],
  ["risks_raised", "Risks raised"],
  ["risks_closed", "Risks closed"],
  ["tasks_assigned", "Tasks assigned"],
  ["tasks_done", "Tasks done"],
  ["tasks_cancelled", "Tasks cancelled"],
  ["tasks_handed_over", "Tasks handed over"],
  ["tasks_rescheduled", "Tasks rescheduled"],
];

const BRIEF_DAYS = [7, 14, 30, 90];

export async function briefScreen(ctx) {
  const days = BRIEF_DAYS.includes(Number(ctx.params.get("days"))) ? Number(ctx.params.get("days")) : 14;
  screen(`Brief: ${ctx.project}`, status("Loading the brief…"));
  const brief = await api(`/v1/projects/${encodeURIComponent(ctx.project)}/brief?days=${days}`);
  if (!ctx.isCurrent()) return;
  const owners = brief.tasks_by_owner;
  const openTasks = owners.reduce((n, group) => n + group.tasks.length, 0);
  screen(
    `Brief: ${ctx.project}`,
    el("p", {
      class: "summary",
      text: `${brief.decisions.length} current decisions · ${brief.risks.length} open risks · ${openTasks} open tasks${brief.overdue_tasks ? ` (${brief.overdue_tasks} overdue)` : ""} · as of ${day(brief.today)}`,
    }),
    section("Current decisions", brief.decisions, (item) => [item.owner ? `owner ${item.owner}` : null]),
    section("Open risks", brief.risks, (item) => [item.likelihood ? `likelihood ${item.likelihood}` : null, item.impact ? `impact ${item.impact}` : null, item.mitigation ? `mitigation: ${item.mitigation}` : null]),
    el(
      "section",
      { "aria-labelledby": "tasks-heading" },
      el("h2", { id: "tasks-heading", text: "Open tasks by owner" }),
      owners.length ? null : el("p", { class: "muted", text: "No open tasks." }),
      owners.map((group) =>
        el(
          "div",
          { class: "owner" },
          el("h3", { text: group.owner || "Nobody named" }),
          el("ul", { class: "lines" }, group.tasks.map((task) => line(task, [task.due_date ? `due ${day(task.due_date)}` : "no due date"], task.overdue))),
        ),
      ),
    ),
    changesSection(brief, ctx, days),
  );
}

function daysPicker(ctx, days) {
  const select = el("select", { id: "days", name: "days" }, BRIEF_DAYS.map((n) => el("option", { value: String(n), selected: n === days, text: `${n} days` })));
  select.addEventListener("change", () => {
    location.hash = projectHref(ctx.project, "brief", new URLSearchParams({ days: select.value }));
  });
  return el("p", { class: "row" }, el("label", { for: "days", text: "Changes of the last" }), select);
}

function section(title, items, details) {
  return el(
    "section",
    {},
    el("h2", { text: title }),
    items.length ? el("ul", { class: "lines" }, items.map((item) => line(item, details(item)))) : el("p", { class: "muted", text: "None." }),
  );
}

/** One line of the brief: what was said (a link to where), when and by whom, and its details. */
function line(item, details, overdue = false) {
  const said = [item.meeting_date ? day(item.meeting_date) : null, item.speakers?.length ? item.speakers.join(", ") : null, ...details].filter(Boolean);
  return el(
    "li",
    { class: overdue ? "overdue" : null },
    overdue ? el("span", { class: "badge failed", text: "overdue" }) : null,
    el("a", { href: saidHref(item), text: item.description }),
    said.length ? el("span", { class: "muted", text: ` · ${said.join(" · ")}` }) : null,
  );
}

function changesSection(brief, ctx, days) {
  const lists = CHANGE_LISTS.filter(([name]) => brief.changes[name]?.length);
  return el(
    "section",
    {},
    el("h2", { text: `What changed since ${day(brief.since)}` }),
    daysPicker(ctx, days),
    lists.length ? null : el("p", { class: "muted", text: "Nothing changed in that time." }),
    lists.map(([name, title]) =>
      el(
        "div",
        {},
        el("h3", { text: title }),
        el("ul", { class: "lines" }, brief.changes[name].map((item) => line(item, [item.new_value ? `now ${item.new_value}` : null, item.assignee ? `owner ${item.assignee}` : null]))),
      ),
    ),
  );
}

// --- ingest ----------------------------------------------------------------------------------------------

const STATUSES = ["raw_ingested", "segmented", "embedded", "extracted", "failed"];
const STATUS_NAMES = { raw_ingested: "received", segmented: "segmented", embedded: "searchable", extracted: "extracted", failed: "failed" };
const DONE = new Set(["embedded", "extracted", "failed"]);
const POLL_MS = 1500;
const POLL_LIMIT_MS = 5 * 60 * 1000;

function documentsPath(project, only = null) {
  return `/v1/documents?project_id=${encodeURIComponent(project)}&limit=200${only ? `&status=${only}` : ""}`;
}

export async function ingestScreen(ctx) {
  const listing = el("section", { id: "documents", "aria-label": "Documents" }, status("Loading the documents…"));
  screen(`Ingest: ${ctx.project}`, currentConfig().upload ? uploadForm(ctx, listing) : el("p", { class: "muted", text: "Uploads are not configured here: drop files into the documents bucket instead." }), listing);
  const only = STATUSES.includes(ctx.params.get("status")) ? ctx.params.get("status") : null;
  const data = await api(documentsPath(ctx.project, only));
  if (ctx.isCurrent()) showDocuments(listing, data, ctx, only);
}

function showDocuments(listing, data, ctx, only = null) {
  const rows = data.documents.map((doc) => {
    const name = doc.title || sourceName(doc.source);
    const problem = doc.error || doc.backfill_error;
    return el(
      "li",
      { class: `doc ${doc.status}` },
      el("p", { class: "meta" }, el("span", { class: `badge ${doc.status}`, text: STATUS_NAMES[doc.status] || doc.status }), doc.status === "failed" ? el("span", { text: name }) : el("a", { href: placeHref(doc.document_id), text: name })),
      el("p", { class: "muted", text: [doc.meeting_date ? day(doc.meeting_date) : null, doc.kind, `${doc.chunk_count} chunk${doc.chunk_count === 1 ? "" : "s"}`, `updated ${moment(doc.updated_at)}`].filter(Boolean).join(" · ") }),
      problem ? el("p", { class: "error-text", text: problem }) : null,
    );
  });
  fill(
    listing,
    el("h2", { text: "Documents" }),
    el(
      "ul",
      { class: "counts", "aria-label": "Documents by status (each shows only those)" },
      STATUSES.map((name) => {
        const params = only === name ? null : new URLSearchParams({ status: name });
        const link = el("a", { href: projectHref(ctx.project, "ingest", params), "aria-current": only === name ? "true" : null, text: `${STATUS_NAMES[name]}: ${data.counts[name] ?? 0}` });
        return el("li", { class: `badge ${name}` }, link);
      }),
    ),
    only ? el("p", {}, `Only the ${STATUS_NAMES[only]} documents: `, el("a", { href: projectHref(ctx.project, "ingest"), text: "show all" })) : null,
    rows.length ? el("ul", { class: "docs" }, rows) : el("p", { class: "muted", text: only ? "None." : "Nothing ingested yet." }),
  );
}

function uploadForm(ctx, listing) {
  const files = el("input", { id: "files", name: "files", type: "file", multiple: true, required: true });
  const progress = el("ul", { class: "progress", "aria-live": "polite" });
  const form = el(
    "form",
    { class: "stack", id: "upload-form" },
    el("label", { for: "files", text: "Upload transcripts or documents (.vtt, .srt, .txt, .json, .docx, .pdf, .md)" }),
    files,
    el("button", { type: "submit", text: "Upload" }),
    progress,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const chosen = [...files.files];
    if (!chosen.length) return;
    const before = await api(documentsPath(ctx.project));
    const seen = new Map(before.documents.map((doc) => [doc.source.uri, doc.updated_at]));
    await Promise.all(chosen.map((file) => uploadOne(ctx, file, progress, seen, listing)));
    form.reset();
  });
  return el("section", { "aria-label": "Upload" }, form);
}

async function uploadOne(ctx, file, progress, seen, listing) {
  const row = el("li", {}, el("strong", { text: file.name }), " ");
  const state = el("span", { text: "asking for an upload address…" });
  row.append(state);
  progress.append(row);
  try {
    const ticket = await api("/v1/uploads", { method: "POST", body: { project_id: ctx.project, filename: file.name, content_type: file.type || undefined, size: file.size } });
    state.textContent = "uploading…";
    const put = await fetch(ticket.url, { method: ticket.method || "PUT", headers: ticket.headers || {}, body: file, credentials: "omit" });
    if (!put.ok) throw new ApiError(put.status, "upload_failed", `the upload was refused (${put.status})`);
    state.textContent = "uploaded; waiting for ingest…";
    const doc = await ingested(ctx, ticket.key, seen, listing, state);
    state.textContent = doc.status === "failed" ? `failed: ${doc.error || doc.backfill_error || "no reason given"}` : `ingested (${STATUS_NAMES[doc.status]})`;
    row.className = doc.status === "failed" ? "failed" : "done";
  } catch (error) {
    row.className = "failed";
    state.textContent = `failed: ${error.message}`;
    if (error.name === "AuthRequired") throw error;
  }
}

/** Poll the documents until the uploaded key shows as a new or changed row that is searchable (or failed). */
async function ingested(ctx, key, seen, listing, state) {
  const deadline = Date.now() + POLL_LIMIT_MS;
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    const data = await api(documentsPath(ctx.project));
    if (ctx.isCurrent()) showDocuments(listing, data, ctx);
    const doc = data.documents.find((d) => (d.source.uri === key || d.source.uri.endsWith(`/${key}`)) && seen.get(d.source.uri) !== d.updated_at);
    if (doc && DONE.has(doc.status)) return doc;
    if (doc) state.textContent = `uploaded; ${STATUS_NAMES[doc.status] || doc.status}…`;
  }
  throw new Error("not ingested after 5 minutes; it may still arrive: reload this screen later");
}

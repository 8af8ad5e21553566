// The page: a hash router over the screens (projects, search, ask, brief, ingest, meeting view) and sign-in.
import { AuthRequired, api, completeSignIn, currentConfig, loadConfig, saveKey, signIn, signOut, signedIn } from "./auth.js";
import {
  alertBox,
  day,
  el,
  fill,
  highlighted,
  moment,
  projectHref,
  queryWords,
  saidHref,
  screen,
  sourceName,
  status,
  wordPattern,
} from "./dom.js";
import { briefScreen, ingestScreen } from "./lists.js";
import { meetingScreen } from "./meeting.js";

const main = document.getElementById("main");
const SEARCH_TYPES = ["chunk", "segment", "decision", "risk", "opportunity", "task"];
const TYPE_NAMES = { chunk: "Passages", segment: "Topics", decision: "Decisions", risk: "Risks", opportunity: "Opportunities", task: "Tasks" };
const MODES = ["hybrid", "semantic", "keyword"];
const PROJECT_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const answers = new Map(); // project + question -> the answer, so going back to the ask screen does not ask again
const searches = new Map(); // request -> results, for back and forward
let rendering = 0; // the current render; an older one's late results are dropped
let signInMessage = "";

// --- routing ---------------------------------------------------------------------------------------------

function parseHash() {
  const raw = location.hash.slice(1) || "/";
  const at = raw.indexOf("?");
  const path = at < 0 ? raw : raw.slice(0, at);
  return { path: path || "/", params: new URLSearchParams(at < 0 ? "" : raw.slice(at + 1)) };
}

function route() {
  const { path, params } = parseHash();
  let match = path.match(/^\/p\/([^/]+)\/(search|ask|brief|ingest)$/);
  if (match) {
    const project = decodeURIComponent(match[1]);
    sessionStorage.setItem("rag.project", project);
    const screens = { search: searchScreen, ask: askScreen, brief: briefScreen, ingest: ingestScreen };
    return { key: `${match[2]}:${project}`, tab: match[2], project, params, screen: screens[match[2]] };
  }
  match = path.match(/^\/doc\/([^/]+)$/);
  if (match) {
    const project = sessionStorage.getItem("rag.project");
    return { key: "doc", tab: null, project, params, documentId: decodeURIComponent(match[1]), screen: meetingScreen };
  }
  return { key: "projects", tab: null, project: null, params, screen: projectsScreen };
}

function showTabs(current) {
  const tabs = document.getElementById("tabs");
  const project = current.project;
  tabs.hidden = !project;
  if (!project) return;
  document.getElementById("project-name").textContent = project;
  for (const name of ["search", "ask", "brief", "ingest"]) {
    const link = document.getElementById(`tab-${name}`);
    link.href = projectHref(project, name);
    if (current.tab === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

async function render() {
  const current = route();
  const mine = ++rendering;
  const setProject = (project) => {
    sessionStorage.setItem("rag.project", project);
    showTabs({ project, tab: null });
  };
  const ctx = { ...current, main, setProject, isCurrent: () => mine === rendering };
  const config = currentConfig();
  document.getElementById("sign-out").hidden = !(config.auth.mode !== "off" && signedIn());
  if (config.auth.mode === "off") return showOff(config.auth.reason);
  if (!signedIn()) return showSignIn(signInMessage);
  showTabs(current);
  const reuse = main.dataset.screen === current.key; // same screen, new parameters: keep the form (and its focus)
  main.dataset.screen = current.key;
  try {
    await current.screen(ctx, reuse);
  } catch (error) {
    if (!ctx.isCurrent()) return;
    if (error instanceof AuthRequired) {
      signInMessage = error.message;
      return render();
    }
    const busy = main.querySelector("[aria-busy=true]"); // the error where the results were awaited, the form kept
    if (busy) {
      busy.removeAttribute("aria-busy");
      fill(busy, alertBox(error.message || String(error)));
    } else {
      main.dataset.screen = "";
      main.append(alertBox(error.message || String(error)));
    }
  }
}

// --- sign-in ---------------------------------------------------------------------------------------------

function showSignIn(message) {
  main.dataset.screen = "sign-in";
  document.getElementById("tabs").hidden = true;
  document.getElementById("sign-out").hidden = true;
  if (currentConfig().auth.mode === "oidc") {
    const button = el("button", { type: "button", onclick: () => signIn(), text: "Sign in" });
    screen("Sign in", message ? alertBox(message) : null, el("p", { text: "Sign in to search your team's meetings." }), button);
    button.focus();
    return;
  }
  const input = el("input", { id: "api-key", name: "api-key", type: "password", autocomplete: "off", required: true, spellcheck: "false" });
  const form = el(
    "form",
    { class: "stack", id: "key-form" },
    el("label", { for: "api-key", text: "API key" }),
    input,
    el("p", { class: "muted", text: "Kept for this tab only (locally the default key is dev-local-key)." }),
    el("button", { type: "submit", text: "Continue" }),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!input.value.trim()) return;
    saveKey(input.value);
    signInMessage = "";
    main.dataset.screen = "";
    render();
  });
  screen("Enter your API key", message ? alertBox(message) : null, form);
  input.focus();
}

function showOff(reason) {
  document.getElementById("tabs").hidden = true;
  screen("The page is off", el("p", { text: reason || "This deployment does not serve the page." }));
}

// --- projects --------------------------------------------------------------------------------------------

async function projectsScreen(ctx) {
  const list = el("ul", { class: "cards", "aria-busy": "true" });
  const name = el("input", { id: "new-project", name: "project", pattern: PROJECT_PATTERN.source, required: true, autocomplete: "off" });
  const open = el(
    "form",
    { class: "inline" },
    el("label", { for: "new-project", text: "Open a project by name (to upload into a new one)" }),
    name,
    el("button", { type: "submit", text: "Open" }),
  );
  open.addEventListener("submit", (event) => {
    event.preventDefault();
    if (PROJECT_PATTERN.test(name.value.trim())) location.hash = projectHref(name.value.trim(), "ingest");
  });
  screen("Projects", list, open);
  const data = await api("/v1/projects");
  if (!ctx.isCurrent()) return;
  list.removeAttribute("aria-busy");
  if (!data.projects.length) list.replaceWith(el("p", { text: "No projects yet: open one by name below and upload its first files." }));
  for (const project of data.projects) {
    list.append(
      el(
        "li",
        { class: "card" },
        el("a", { class: "title", href: projectHref(project.id, "search"), text: project.id }),
        el("p", {
          class: "muted",
          text: `${project.meeting_count} meetings · ${project.document_count} documents${project.last_activity ? ` · last ${moment(project.last_activity)}` : ""}`,
        }),
        el(
          "p",
          { class: "links" },
          el("a", { href: projectHref(project.id, "ask"), text: "Ask" }),
          el("a", { href: projectHref(project.id, "brief"), text: "Brief" }),
          el("a", { href: projectHref(project.id, "ingest"), text: "Ingest" }),
        ),
      ),
    );
  }
}

// --- search ----------------------------------------------------------------------------------------------

function searchForm(ctx) {
  const query = el("input", { id: "q", name: "q", type: "search", required: true, maxlength: "2000", autocomplete: "off", enterkeyhint: "search" });
  const mode = el("select", { id: "mode", name: "mode" }, ...MODES.map((m) => el("option", { value: m, text: m })));
  const types = el("fieldset", { class: "types" }, el("legend", { text: "Look in" }));
  for (const type of SEARCH_TYPES) {
    const id = `type-${type}`;
    types.append(el("span", { class: "check" }, el("input", { type: "checkbox", id, name: "types", value: type }), el("label", { for: id, text: TYPE_NAMES[type] })));
  }
  const form = el(
    "form",
    { role: "search", class: "search", id: "search-form" },
    el("label", { for: "q", class: "wide", text: "Search the meetings (press / to come back here)" }),
    el("span", { class: "row" }, query, el("button", { type: "submit", text: "Search" })),
    el("span", { class: "row" }, el("label", { for: "mode", text: "Mode" }), mode),
    types,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = query.value.trim();
    if (!text) return;
    const chosen = [...form.querySelectorAll("input[name=types]:checked")].map((box) => box.value);
    const params = new URLSearchParams({ q: text, mode: mode.value });
    if (chosen.length) params.set("types", chosen.join(","));
    const target = projectHref(ctx.project, "search", params);
    if (location.hash === target) render();
    else location.hash = target;
  });
  return form;
}

async function searchScreen(ctx, reuse) {
  const q = ctx.params.get("q") || "";
  const mode = MODES.includes(ctx.params.get("mode")) ? ctx.params.get("mode") : "hybrid";
  const types = (ctx.params.get("types") || "chunk,decision,risk,task").split(",").filter((t) => SEARCH_TYPES.includes(t));
  if (!reuse || !document.getElementById("search-form")) {
    screen(`Search ${ctx.project}`, searchForm(ctx), el("section", { id: "results", "aria-label": "Results" }));
  }
  const form = document.getElementById("search-form");
  form.elements.q.value = q;
  form.elements.mode.value = mode;
  for (const box of form.querySelectorAll("input[name=types]")) box.checked = types.includes(box.value);
  const results = document.getElementById("results");
  if (focusSearchNext) {
    focusSearchNext = false;
    form.elements.q.focus();
  }
  if (!q) return fill(results, el("p", { class: "muted", text: "Search by meaning and by words. Results open the meeting at the turn they came from." }));
  const body = { query: q, project_ids: [ctx.project], types: types.length ? types : ["chunk"], mode, top_k: 20 };
  const key = JSON.stringify(body);
  fill(results, status("Searching…"));
  results.setAttribute("aria-busy", "true");
  const data = searches.get(key) || (await api("/v1/search", { method: "POST", body }));
  searches.set(key, data);
  if (!ctx.isCurrent()) return;
  results.removeAttribute("aria-busy");
  const pattern = wordPattern(queryWords(q));
  const count = data.results.length;
  fill(
    results,
    status(count ? `${count} result${count === 1 ? "" : "s"} (${Math.round(data.took_ms)} ms)` : "Nothing found. Try other words, or the semantic mode."),
    el("ol", { class: "results" }, data.results.map((hit) => resultItem(hit, pattern))),
  );
}

function resultItem(hit, pattern) {
  const date = hit.metadata?.meeting_date;
  const where = hit.start_turn === null || hit.start_turn === undefined ? "" : hit.end_turn > hit.start_turn ? `turns ${hit.start_turn + 1}–${hit.end_turn + 1}` : `turn ${hit.start_turn + 1}`;
  return el(
    "li",
    { class: "result" },
    el(
      "p",
      { class: "meta" },
      el("span", { class: `badge ${hit.type}`, text: hit.type }),
      el("a", { class: "source", href: saidHref(hit), text: sourceName(hit.source) }),
      date ? el("span", { text: day(date) }) : null,
      hit.speakers?.length ? el("span", { class: "speakers", text: hit.speakers.join(", ") }) : null,
      where ? el("span", { class: "muted", text: where }) : null,
    ),
    el("p", { class: "content" }, highlighted(hit.content, pattern)),
  );
}

// --- ask -------------------------------------------------------------------------------------------------

async function askScreen(ctx, reuse) {
  const q = ctx.params.get("q") || "";
  if (!reuse || !document.getElementById("ask-form")) {
    const question = el("textarea", { id: "question", name: "question", rows: "3", maxlength: "4000", required: true, enterkeyhint: "send" });
    const form = el(
      "form",
      { class: "stack", id: "ask-form" },
      el("label", { for: "question", text: "Ask a question about this project's meetings" }),
      question,
      el("span", { class: "row" }, el("button", { type: "submit", text: "Ask" }), el("span", { class: "muted", text: "Enter asks, Shift+Enter starts a new line" })),
    );
    question.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const text = question.value.trim();
      if (!text) return;
      const target = projectHref(ctx.project, "ask", new URLSearchParams({ q: text }));
      if (location.hash === target) answers.delete(`${ctx.project}\n${text}`);
      if (location.hash === target) render();
      else location.hash = target;
    });
    screen(`Ask ${ctx.project}`, form, el("section", { id: "answer", "aria-label": "Answer" }));
  }
  const question = document.getElementById("question");
  question.value = q;
  const out = document.getElementById("answer");
  if (!q) return fill(out, el("p", { class: "muted", text: "The answer cites its sources: each [n] opens the meeting at the cited turn." }));
  const key = `${ctx.project}\n${q}`;
  fill(out, status("Thinking…"));
  out.setAttribute("aria-busy", "true");
  const data = answers.get(key) || (await api("/v1/ask", { method: "POST", body: { question: q, project_ids: [ctx.project] } }));
  answers.set(key, data);
  if (!ctx.isCurrent()) return;
  out.removeAttribute("aria-busy");
  fill(out, answerView(data));
}

function answerView(data) {
  const byNumber = new Map(data.citations.map((c) => [c.n, c]));
  const paragraphs = data.answer.split(/\n{2,}/).filter((p) => p.trim());
  const text = el("div", { class: "answer-text" });
  for (const paragraph of paragraphs) {
    let list = null; // consecutive "- " lines form one list; other lines a paragraph each
    for (const line of paragraph.split("\n").filter((l) => l.trim())) {
      const bullet = line.match(/^\s*(?:[-*]|\d+[.)])\s+/);
      if (bullet) {
        if (!list) text.append((list = el("ul")));
        list.append(el("li", {}, citedText(line.slice(bullet[0].length), byNumber)));
      } else {
        list = null;
        text.append(el("p", {}, citedText(line, byNumber)));
      }
    }
  }
  const note =
    data.mode === "extractive"
      ? el("p", { class: "muted", text: data.degraded ? `The passages found, quoted (the model did not answer: ${data.degraded}).` : "The passages found, quoted (no language model is configured)." })
      : null;
  return [
    text,
    note,
    data.citations.length ? el("h2", { text: "Sources" }) : null,
    el(
      "ol",
      { class: "citations" },
      data.citations.map((c) =>
        el(
          "li",
          { value: String(c.n), id: `cite-${c.n}` },
          el("a", { href: saidHref(c), text: sourceName(c.source) }),
          c.meeting_date ? el("span", { text: ` · ${day(c.meeting_date)}` }) : null,
          c.speakers?.length ? el("span", { class: "speakers", text: ` · ${c.speakers.join(", ")}` }) : null,
          el("span", { class: "muted", text: ` · ${c.type}` }),
        ),
      ),
    ),
  ];
}

/** Text whose [n] (and [n, m]) markers become links to the cited places. */
function citedText(text, byNumber) {
  const nodes = [];
  let last = 0;
  for (const match of text.matchAll(/\[(\d+(?:\s*,\s*\d+)*)\]/g)) {
    if (match.index > last) nodes.push(text.slice(last, match.index));
    const numbers = match[1].split(",").map((n) => Number(n.trim()));
    if (!numbers.every((n) => byNumber.has(n))) {
      nodes.push(match[0]);
    } else {
      numbers.forEach((n, i) => {
        const c = byNumber.get(n);
        nodes.push(el("a", { class: "cite", href: saidHref(c), "aria-label": `source ${n}: ${sourceName(c.source)}`, text: `[${n}]` }));
        if (i < numbers.length - 1) nodes.push(" ");
      });
    }
    last = match.index + match[0].length;
  }
  if (last < text.length) nodes.push(text.slice(last));
  return nodes;
}

// --- start -----------------------------------------------------------------------------------------------

let focusSearchNext = false;

function onKey(event) {
  if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  if (target.closest?.("input, textarea, select, [contenteditable]")) return;
  event.preventDefault();
  const box = document.getElementById("q");
  if (box) return box.focus();
  const project = route().project || sessionStorage.getItem("rag.project");
  if (!project) return;
  focusSearchNext = true;
  location.hash = projectHref(project, "search");
}

async function start() {
  try {
    await loadConfig();
  } catch (error) {
    fill(main, alertBox(error.message));
    return;
  }
  if (currentConfig().auth.mode === "oidc") {
    try {
      const back = await completeSignIn();
      if (back) signInMessage = "";
    } catch (error) {
      signInMessage = error.message;
    }
  }
  document.getElementById("sign-out").addEventListener("click", () => {
    signOut();
    signInMessage = "Signed out.";
    main.dataset.screen = "";
    render();
  });
  document.querySelector(".skip").addEventListener("click", (event) => {
    event.preventDefault(); // the address's hash is the route: the skip link moves the focus only
    main.focus();
  });
  document.addEventListener("keydown", onKey);
  window.addEventListener("hashchange", render);
  render();
}

start();

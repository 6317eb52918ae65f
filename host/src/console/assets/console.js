// The Switchboard console: one page, hash routes, no framework.
//
// Every page is built on the public /api/v1 operations (and the console's
// own /console/api routes for the session, API keys and agent testing),
// called with the session cookie the server set at login. State-changing
// requests carry the session's CSRF token. The page never holds an API key
// beyond the one answer that creates it, and never a provider token.
// Text from the server is always set with textContent (never as HTML).
"use strict";

const state = { me: null };

// ---- small DOM helpers ----------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function main() { return document.getElementById("main"); }

// The children worth adding: null, undefined and false are "nothing here"
// (as in h()), never the text "null".
function kids(nodes) {
  return nodes.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false)
    .map((c) => (c instanceof Node ? c : document.createTextNode(String(c))));
}

// el.append(...) that skips nothing-children.
function add(el, ...nodes) {
  el.append(...kids(nodes));
  return el;
}

// A page drawn again after an action (a save, a poll) reads the address it
// started on; if the reader has moved on meanwhile, it draws nothing.
function showOn(here, ...nodes) {
  if (location.hash === here) show(...nodes);
}

function show(...nodes) {
  const m = main();
  m.replaceChildren(...kids(nodes));
  const title = m.querySelector("h1");
  document.title = (title ? title.textContent + " · " : "") + "Switchboard console";
}

function toast(text) {
  const t = document.getElementById("toast");
  t.textContent = text;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.textContent = ""; }, 5000);
}

function when(iso) {
  if (!iso) return "never";
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toLocaleString();
}

// A random Idempotency-Key (crypto.randomUUID needs a secure context;
// getRandomValues does not).
function idemKey() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const x = [...b].map((v) => v.toString(16).padStart(2, "0")).join("");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

// ---- the API ----------------------------------------------------------------

class ApiError extends Error {
  constructor(status, error) {
    super(error && error.message ? error.message : `request failed (${status})`);
    this.status = status;
    this.error = error || {};
  }
}

// `sub` is the form submission (or click) the call belongs to: every
// call of one submission to one operation carries the same Idempotency-Key,
// so a repeated submission is answered once.
async function api(method, path, body, sub) {
  const headers = { Accept: "application/json" };
  if (method !== "GET") {
    if (state.me) headers["X-CSRF-Token"] = state.me.csrfToken;
    if (path.startsWith("/api/v1/")) headers["Idempotency-Key"] = sub ? sub.key(method, path) : idemKey();
  }
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const r = await fetch(path, {
    method, headers, credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let payload = null;
  try { payload = await r.json(); } catch (_) { /* not JSON */ }
  if (!r.ok || !payload || payload.ok !== true) {
    const err = new ApiError(r.status, payload && payload.error);
    if (r.status === 401 && path !== "/console/api/session") {
      state.me = null;
      renderLogin("Your session has ended; log in again.");
    }
    throw err;
  }
  return payload.data;
}

function q(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") u.set(k, v);
  return u.toString();
}

// One submission: its keys, one per operation it calls.
function submission() {
  const keys = new Map();
  return {
    key(method, path) {
      const op = method + " " + path.split("?")[0];
      if (!keys.has(op)) keys.set(op, idemKey());
      return keys.get(op);
    },
  };
}

// A form's submit handler that runs once at a time: the form's buttons are
// disabled while `run(sub)` works and a second submit (a double click, Enter
// twice) is dropped; its errors are cleared first.
function onSubmit(form, run) {
  let busy = false;
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (busy) return;
    busy = true;
    const buttons = [...form.querySelectorAll("button")].filter((b) => !b.disabled);
    buttons.forEach((b) => { b.disabled = true; });
    clearErrors(form);
    try { await run(submission()); } catch (err) { showError(form, err); } finally {
      busy = false;
      // A button the page holds disabled (a reply pending) stays so.
      buttons.forEach((b) => { if (b.isConnected && !b.dataset.hold) b.disabled = false; });
    }
  });
}

// A button's click handler that runs once at a time (the button is
// disabled meanwhile); errors become a toast.
function once(run) {
  let busy = false;
  return async (e) => {
    const b = e.currentTarget;
    if (busy) return;
    busy = true;
    b.disabled = true;
    try { await run(submission()); } catch (err) { toast(err.message); } finally { busy = false; b.disabled = false; }
  };
}

function biz() { return state.me.businessId; }
function canWrite(scope) { return state.me.scopes.includes(scope); }

// A form without errors: no message above it, no field marked.
function clearErrors(form) {
  form.querySelectorAll(".field-error").forEach((e) => e.remove());
  form.querySelectorAll("[aria-invalid]").forEach((e) => {
    e.removeAttribute("aria-invalid");
    e.removeAttribute("aria-describedby");
  });
  const box = form.querySelector(".form-error");
  if (box) box.replaceChildren();
}

// Rules a pattern stands for, in words (the server's messages name the
// regular expression; a person is told what to type): by the pattern the
// OpenAPI document uses, else by the field.
const PATTERN_WORDS = {
  "\\S": "must contain more than spaces",
  // What the served document writes for \S (gateway NON_BLANK_PATTERN) and
  // for any other text (NO_NUL_PATTERN).
  "^[^\\x00]*[^\\x00\\t\\n\\x0B\\f\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^\\x00]*$": "must contain more than spaces (and no NUL character)",
  "^[^\\x00]*$": "must not contain a NUL character",
  "^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$": "must be a language tag such as en or pt-BR",
  "^([01][0-9]|2[0-3]):[0-5][0-9]$": "must be a time of day as HH:MM, 00:00 to 23:59",
  "^[a-zA-Z][a-zA-Z0-9_]{0,63}$": "must be a letter, then up to 63 letters, digits or underscores",
  "^[0-9a-f]{64}$": "must be 64 lowercase hexadecimal characters",
  "^[a-z]+-[a-z]+-[a-z0-9]+$": "must be lowercase words joined by dashes",
};
const FIELD_WORDS = {
  search: "must be a name, or a mobile number: digits, optionally after a leading +",
  to: "must be a mobile number in international form: + and the country code, then the number",
  mobile: "must be a mobile number in international form: + and the country code, then the number",
  languageCode: "must be a language tag such as en or pt-BR",
};

// A validation message as a person reads it: never a regular expression.
function plain(detail) {
  const msg = String(detail.message || "");
  const at = msg.indexOf(" must match the pattern ");
  if (at < 0) return msg;
  const pattern = msg.slice(at + " must match the pattern ".length);
  const field = String(detail.field || "").split(/[.[]/).pop() || (msg.match(/`([^`]+)`/) || [])[1] || "";
  return `${msg.slice(0, at)} ${PATTERN_WORDS[pattern] || FIELD_WORDS[field] || "must be in the expected format"}`;
}

// An error in the spec's envelope: each problem next to the field it names
// when the form has that field; the others listed above the form, so every
// problem the server found is shown.
function showError(form, err) {
  clearErrors(form);
  const box = form.querySelector(".form-error");
  const details = (err.error && Array.isArray(err.error.details)) ? err.error.details : [];
  const unplaced = [];
  for (const f of details) {
    // The field as the form names it: the whole path ("voiceSettings.firstGreeting"), else its first part.
    const path = String(f.field || "");
    const find = (n) => n && form.querySelector(`[name="${CSS.escape(n)}"]`);
    const input = find(path) || find(path.split(/[.[]/)[0]);
    if (!input) { unplaced.push(plain(f)); continue; }
    const id = `err-${input.name.replace(/[^A-Za-z0-9_-]/g, "-")}`;
    const existing = document.getElementById(id);
    if (existing) { existing.textContent += `; ${plain(f)}`; continue; }
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", id);
    input.after(h("span", { class: "field-error", id, text: plain(f) }));
  }
  if (box) {
    const placed = details.length - unplaced.length;
    if (!details.length) box.textContent = plain({ message: err.message });
    else {
      if (placed) box.append(`Check the field${placed === 1 ? "" : "s"} marked below.`);
      if (unplaced.length === 1 && !placed) box.append(unplaced[0]);
      else if (unplaced.length) box.append(h("ul", {}, unplaced.map((m) => h("li", { text: m }))));
    }
  }
  const first = form.querySelector("[aria-invalid]");
  if (first) first.focus();
}

function formData(form) {
  return Object.fromEntries(new FormData(form).entries());
}

// ---- session ------------------------------------------------------------------

async function loadSession() {
  try {
    state.me = await api("GET", "/console/api/session");
  } catch (_) {
    state.me = null;
  }
  frame();
}

function frame() {
  const nav = document.getElementById("nav");
  const who = document.getElementById("who");
  const out = document.getElementById("logout");
  const menu = document.getElementById("menu");
  nav.hidden = !state.me;
  out.hidden = !state.me;
  menu.hidden = !state.me;
  // Compact: the role and the address (cut short if need be); the business is the overview's title
  // (and the tooltip here).
  who.textContent = state.me ? `${state.me.role} · ${state.me.email}` : "";
  who.title = state.me ? `${state.me.email} · ${state.me.businessName} (${state.me.role})` : "";
  setMenu(false);
}

// Under 700 px the sections fold behind the Menu button (CSS shows the
// button and hides the closed nav there).
function setMenu(open) {
  const menu = document.getElementById("menu");
  menu.setAttribute("aria-expanded", open ? "true" : "false");
  document.querySelector(".top").classList.toggle("open", open);
}

function renderLogin(message) {
  frame();
  const form = h("form", { class: "card narrow", novalidate: true },
    h("h1", { text: "Log in" }),
    message ? h("p", { class: "notice", text: message }) : null,
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "email", text: "Email" }),
    h("input", { id: "email", name: "email", type: "email", autocomplete: "username", required: true }),
    h("label", { for: "password", text: "Password" }),
    h("input", { id: "password", name: "password", type: "password", autocomplete: "current-password", required: true }),
    h("button", { type: "submit", text: "Log in" }));
  onSubmit(form, async () => {
    const d = formData(form);
    state.me = await api("POST", "/console/api/session", { email: d.email, password: d.password });
    frame();
    if (location.hash === "" || location.hash === "#/") route(); else location.hash = "#/";
  });
  show(form);
  form.querySelector("#email").focus();
}

function renderSetup(token) {
  const form = h("form", { class: "card narrow", novalidate: true },
    h("h1", { text: "Choose your password" }),
    h("p", { class: "muted", text: "At least 10 characters. This link works once." }),
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "password", text: "New password" }),
    h("input", { id: "password", name: "password", type: "password", autocomplete: "new-password", minlength: 10, required: true }),
    h("button", { type: "submit", text: "Set password" }));
  onSubmit(form, async () => {
    await api("POST", "/console/api/password", { token, password: formData(form).password });
    history.replaceState(null, "", "#/");
    renderLogin("Your password is set. Log in with it.");
  });
  show(form);
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("menu").addEventListener("click", () => {
    setMenu(document.getElementById("menu").getAttribute("aria-expanded") !== "true");
  });
  document.getElementById("logout").addEventListener("click", async () => {
    try { await api("DELETE", "/console/api/session"); } catch (_) { /* ended anyway */ }
    state.me = null;
    location.hash = "#/";
    renderLogin("You are logged out.");
  });
  window.addEventListener("hashchange", route);
  const setup = location.hash.match(/^#setup=([0-9a-f]{64})$/);
  if (setup) {
    // The token leaves the address bar at once (history, screenshots).
    history.replaceState(null, "", "#/setup");
    renderSetup(setup[1]);
    return;
  }
  loadSession().then(route);
});

// ---- routing ---------------------------------------------------------------------

const routes = [
  [/^#?\/?$/, overview],
  [/^#\/keys$/, keysPage],
  [/^#\/contacts$/, contactsPage],
  [/^#\/contacts\/([0-9a-f-]{36})$/, contactPage],
  [/^#\/agents$/, agentsPage],
  [/^#\/agents\/([0-9a-f-]{36})\/test$/, agentTestPage],
  [/^#\/agents\/new$/, () => agentForm(null)],
  [/^#\/agents\/([0-9a-f-]{36})$/, (id) => agentForm(id)],
  [/^#\/data-sources$/, dataSourcesPage],
  [/^#\/data-sources\/([0-9a-f-]{36})$/, (id) => dataSourcePage(id, null)],
  [/^#\/data-sources\/([0-9a-f-]{36})\/ingestions\/([0-9a-f-]{36})$/, dataSourcePage],
  [/^#\/messages$/, messagesPage],
  [/^#\/channels$/, channelsPage],
  [/^#\/webhooks$/, webhooksPage],
  [/^#\/webhooks\/([0-9a-f-]{36})$/, deliveriesPage],
  [/^#\/credits$/, creditsPage],
  [/^#\/calls$/, callsPage],
  [/^#\/calls\/([0-9a-f-]{36})$/, callPage],
  [/^#\/campaigns$/, campaignsPage],
  [/^#\/campaigns\/([0-9a-f-]{36})$/, campaignPage],
];

// Everything a page polls; a navigation stops it all.
const pollers = new Set();
let routed = false;

async function route() {
  setMenu(false);
  for (const stop of pollers) stop();
  pollers.clear();
  if (location.hash === "#/setup") return;
  if (!state.me) { renderLogin(); return; }
  for (const [re, page] of routes) {
    const m = location.hash.match(re);
    if (m) {
      document.querySelectorAll("#nav a").forEach((a) => {
        const here = location.hash.startsWith(a.getAttribute("href")) && a.getAttribute("href") !== "#/" || a.getAttribute("href") === (location.hash || "#/");
        if (here) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
      });
      try { await page(...m.slice(1)); } catch (err) {
        if (state.me) show(h("h1", { text: "Something went wrong" }), h("p", { class: "form-error", text: err.message }));
      }
      // After a navigation, reading starts at the new page (not on the
      // first load, where the first Tab reaches the skip link).
      if (routed) main().focus();
      routed = true;
      return;
    }
  }
  show(h("h1", { text: "Not found" }), h("p", {}, h("a", { href: "#/", text: "Back to the overview" })));
}

// ---- overview ------------------------------------------------------------------------

async function overview() {
  const me = state.me;
  show(
    h("h1", { text: me.businessName }),
    h("dl", { class: "facts" },
      h("dt", { text: "Signed in as" }), h("dd", { text: me.email }),
      h("dt", { text: "Role" }), h("dd", { text: me.role }),
      h("dt", { text: "Business id" }), h("dd", {}, h("code", { text: me.businessId })),
      h("dt", { text: "Session ends" }), h("dd", { text: when(me.expiresAt) })),
    h("p", { class: "muted", text: "Every page here uses the same public API an integration uses with an API key." }));
}

// ---- API keys -------------------------------------------------------------------------

async function keysPage() {
  const here = location.hash;
  const data = await api("GET", "/console/api/keys");
  const owner = state.me.role === "owner";
  const rows = data.keys.map((k) => h("tr", {},
    h("td", {}, h("code", { text: k.display })),
    h("td", { text: k.scopes.join(", ") }),
    h("td", { text: when(k.createdAt) }),
    h("td", { text: k.revokedAt ? "revoked " + when(k.revokedAt) : when(k.lastUsedAt) }),
    h("td", {}, owner && !k.revokedAt ? h("button", {
      type: "button", class: "danger", "aria-label": `Revoke key ${k.display}`, text: "Revoke",
      onclick: once(async () => {
        if (!confirm(`Revoke ${k.display}? Integrations using it stop working at once.`)) return;
        await api("DELETE", `/console/api/keys/${k.keyId}`); toast("Key revoked."); keysPage();
      }),
    }) : null)));
  const table = h("table", {},
    h("caption", { text: "Keys of this business" }),
    h("thead", {}, h("tr", {}, ["Key", "Scopes", "Created", "Last used", ""].map((t) => h("th", { scope: "col", text: t })))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 5, text: "No keys yet." }))));
  const nodes = [h("h1", { text: "API keys" }), table];
  if (owner) nodes.push(createKeyForm(data.scopes));
  else nodes.push(h("p", { class: "muted", text: "Only an owner can create or revoke keys." }));
  showOn(here, ...nodes);
}

function createKeyForm(scopes) {
  const form = h("form", { class: "card", novalidate: true },
    h("h2", { text: "Create a key" }),
    h("p", { class: "form-error", role: "alert" }),
    h("fieldset", {}, h("legend", { text: "Scopes" }),
      scopes.map((s) => h("label", { class: "check" },
        h("input", { type: "checkbox", name: "scopes", value: s, checked: s.endsWith(":read") }), " ", s))),
    h("button", { type: "submit", text: "Create key" }));
  onSubmit(form, async () => {
    const chosen = [...form.querySelectorAll("input[name=scopes]:checked")].map((i) => i.value);
    const k = await api("POST", "/console/api/keys", { scopes: chosen });
    await keysPage();
    shownOnce("new-key-value", "Your new key", "Copy it now: it is not shown again.", k.apiKey);
  });
  return form;
}

// ---- contacts ---------------------------------------------------------------------------

async function contactsPage() {
  const list = h("div", { id: "contact-list" });
  const search = h("form", { class: "inline", role: "search" },
    h("label", { for: "search", text: "Search by name or mobile" }),
    h("input", { id: "search", name: "search", type: "search", maxlength: 64 }),
    h("button", { type: "submit", text: "Search" }));
  onSubmit(search, () => loadContacts(list, search.search.value.trim()));
  const nodes = [h("h1", { text: "Contacts" }), search, list];
  if (canWrite("contacts:write")) nodes.push(await importForm());
  show(...nodes);
  await loadContacts(list, "");
}

// What the list operation's `search` takes: a mobile number or its digits.
const MOBILE_SEARCH = /^[ .()-]*(?:\+?[ .()-]*[0-9][0-9 .()-]*)?$/;
// A name search reads at most this many pages of 200 contacts.
const NAME_SEARCH_PAGES = 10;

// The operation searches mobiles only; a name is looked for in the pages
// of the list (the first 2,000 contacts), case- and accent-insensitively.
function loadContacts(list, search) {
  const row = (c) => h("tr", {},
    h("td", {}, h("a", { href: `#/contacts/${c.id}`, text: c.name || c.mobile })),
    h("td", { text: c.mobile }),
    h("td", { text: c.categories.map((x) => x.name).join(", ") }),
    h("td", { text: c.communicationBlocked ? "blocked" : "" }));
  const headers = ["Name", "Mobile", "Categories", ""];
  if (!search || MOBILE_SEARCH.test(search)) {
    const load = (cursor) => api("GET", "/api/v1/contacts?" + q({ businessId: biz(), search, cursor, limit: 50 }))
      .then((page) => ({ nextCursor: page.nextCursor, rows: page.contacts.map(row) }));
    return paged(list, headers, search ? "No contact's mobile matches." : "No contacts.", load, null);
  }
  const fold = (t) => String(t || "").normalize("NFD").replace(/[\u0300-\u036f]/g, "").toLowerCase();
  const want = fold(search);
  const load = async () => {
    const found = [];
    let cursor = null;
    let pages = 0;
    do {
      const page = await api("GET", "/api/v1/contacts?" + q({ businessId: biz(), cursor, limit: 200 }));
      found.push(...page.contacts.filter((c) => fold(c.name).includes(want)));
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor && pages < NAME_SEARCH_PAGES);
    const rows = found.map(row);
    if (cursor) rows.push(h("tr", {}, h("td", { colspan: 4, class: "muted", text: `Searched the first ${pages * 200} contacts by name.` })));
    return { nextCursor: null, rows };
  };
  return paged(list, headers, "No contact's name matches.", load, null);
}

async function categoryOptions(select, chosen) {
  const cats = await api("GET", "/api/v1/contacts/categories?" + q({ businessId: biz(), limit: 200 }));
  select.replaceChildren(...(cats.categories || []).map((c) => h("option", { value: c.id, text: c.name, selected: c.id === chosen })));
}

async function importForm() {
  const select = h("select", { id: "category", name: "categoryIds" });
  await categoryOptions(select, null);
  const form = h("form", { class: "card", novalidate: true },
    h("h2", { text: "Import a CSV" }),
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "category", text: "Into category" }),
    select,
    h("label", { for: "newCategory", text: "…or a new category named" }),
    h("input", { id: "newCategory", name: "newCategory", maxlength: 100 }),
    h("label", { for: "csv", text: "CSV file (a header row; a mobile column)" }),
    h("input", { id: "csv", name: "csv", type: "file", accept: ".csv,text/csv", required: true }),
    h("progress", { id: "import-progress", max: 100, value: 0, hidden: true, "aria-label": "Import progress" }),
    h("output", { id: "import-result" }),
    h("button", { type: "submit", text: "Import" }));
  onSubmit(form, async (sub) => {
    const file = form.csv.files[0];
    const bar = form.querySelector("progress");
    const out = form.querySelector("output");
    out.replaceChildren();
    if (!file) throw new ApiError(400, { message: "Choose a CSV file.", details: [{ field: "csv", message: "Choose a CSV file." }] });
    try {
      bar.hidden = false; bar.value = 10;
      let category = form.categoryIds.value;
      const name = form.newCategory.value.trim();
      if (name) {
        category = (await api("POST", "/api/v1/contacts/categories", { businessId: biz(), name }, sub)).category.id;
        // The new category is a choice from now on (and the one chosen).
        await categoryOptions(select, category);
        form.newCategory.value = "";
      }
      if (!category) throw new ApiError(400, { message: "Choose a category or name a new one." });
      bar.value = 30;
      const text = await file.text();
      bar.value = 50;
      const r = await api("POST", "/api/v1/contacts/imports", { businessId: biz(), categoryIds: [category], csv: text }, sub);
      bar.value = 100;
      out.textContent = `Import finished: ${r.totalRows} rows, ${r.created} created, ${r.merged} merged, ${r.failed} failed.`;
      if (r.errors && r.errors.length) {
        out.append(h("ul", {}, r.errors.slice(0, 20).map((x) => h("li", { text: `row ${x.row}${x.column ? ", " + x.column : ""}: ${x.message}` }))));
      }
      loadContacts(document.getElementById("contact-list"), "");
    } catch (err) { bar.hidden = true; throw err; }
  });
  return form;
}

async function contactPage(id) {
  const c = (await api("GET", `/api/v1/contacts/${id}?` + q({ businessId: biz() }))).contact;
  const fields = Object.entries(c.fields || {});
  const timeline = h("div", { id: "timeline" });
  await drawTimeline(id, timeline);
  show(
    h("p", {}, h("a", { href: "#/contacts", text: "← Contacts" })),
    h("h1", { text: c.name || c.mobile }),
    h("dl", { class: "facts" },
      h("dt", { text: "Mobile" }), h("dd", { text: c.mobile }),
      h("dt", { text: "Categories" }), h("dd", { text: c.categories.map((x) => x.name).join(", ") }),
      h("dt", { text: "Blocked" }), h("dd", { text: c.communicationBlocked ? "yes" : "no" }),
      fields.map(([k, v]) => [h("dt", { text: k }), h("dd", { text: String(v) })])),
    h("h2", { text: "Conversation" }),
    timeline,
    canWrite("communications:write") && !c.communicationBlocked ? await sendForm(c.mobile, () => drawTimeline(id, timeline)) : null);
}

// The contact's timeline as a conversation: oldest at the top, newest at
// the bottom; what the contact sent on the left, what the business sent on
// the right.
async function drawTimeline(id, box) {
  const t = await api("GET", `/api/v1/contacts/${id}/timeline?` + q({ businessId: biz(), limit: 50 }));
  const entries = [...t.entries].sort((a, b) => String(a.occurredAt).localeCompare(String(b.occurredAt)));
  box.replaceChildren(entries.length ? h("ol", { class: "chat timeline", "aria-label": "Conversation with this contact" },
    entries.map((x) => h("li", { class: `turn ${x.direction === "inbound" ? "inbound" : "outbound"}`, "data-direction": x.direction || "" },
      h("span", { class: "speaker" }, `${x.direction === "inbound" ? "Contact" : "Business"} · ${[x.channel, x.kind].filter(Boolean).join(" ")} · `,
        h("time", { datetime: x.occurredAt, text: when(x.occurredAt) })),
      h("p", { text: summaryText(x.summary) })))) : h("p", { class: "muted", text: "Nothing yet." }));
}

function summaryText(s) {
  if (!s) return "";
  if (typeof s.text === "string") return s.text;
  return Object.entries(s).filter(([, v]) => v !== null && typeof v !== "object").map(([k, v]) => `${k}: ${v}`).join(", ");
}

// ---- agents and agent testing -----------------------------------------------------------------

async function agentsPage() {
  const page = await api("GET", "/api/v1/agents?" + q({ businessId: biz(), limit: 100 }));
  const rows = page.agents.map((a) => h("tr", {},
    h("td", { text: a.name }),
    h("td", { text: a.channel }),
    h("td", { text: a.status || (a.archivedAt ? "archived" : "active") }),
    h("td", {}, h("a", { href: `#/agents/${a.id}/test`, text: "Test", "aria-label": `Test ${a.name}` }), " ",
      canWrite("agents:write") ? h("a", { href: `#/agents/${a.id}`, text: "Edit", "aria-label": `Edit ${a.name}` }) : null)));
  show(h("h1", { text: "Agents" }),
    canWrite("agents:write") ? h("p", {}, h("a", { href: "#/agents/new", text: "New agent" })) : null,
    h("table", {},
      h("thead", {}, h("tr", {}, ["Name", "Channel", "Status", ""].map((t) => h("th", { scope: "col", text: t })))),
      h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 4, text: "No agents yet." })))));
}

async function agentTestPage(agentId) {
  const base = `/console/api/agents/${agentId}/test`;
  let conv = await api("GET", base + "?" + q({ businessId: biz() }));
  const log = h("ol", { class: "chat", "aria-live": "polite", "aria-label": "Test conversation" });
  // Sending and resetting take agents:write; a viewer reads the conversation only.
  const write = canWrite("agents:write");
  const form = !write ? h("p", { class: "muted", text: "Testing an agent takes an owner; you can read the test conversation." }) : h("form", { class: "chat-form", novalidate: true },
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "say", text: "Say something as the customer would" }),
    h("textarea", { id: "say", name: "text", rows: 2, maxlength: 4096, required: true }),
    h("details", {}, h("summary", { text: "Test variables (JSON object)" }),
      h("label", { for: "vars", text: "testVariables" }),
      h("textarea", { id: "vars", name: "testVariables", rows: 3, text: JSON.stringify(conv.testVariables || {}) })),
    h("button", { type: "submit", text: "Send" }),
    h("button", { type: "button", class: "secondary", text: "Reset conversation", onclick: once(async () => {
      conv = await api("DELETE", base + "?" + q({ businessId: biz() })); draw(); toast("Conversation reset.");
    }) }));
  function draw() {
    log.replaceChildren(...conv.messages.map((m) => h("li", { class: `turn ${m.role} ${m.status}` },
      h("span", { class: "speaker", text: m.role === "user" ? "You" : conv.agentName }),
      h("p", { text: m.status === "pending" ? "…" : m.status === "failed" ? `(no reply: ${m.error || "failed"})` : m.text }),
      m.grounding && m.grounding.passages && m.grounding.passages.length ? h("small", { class: "muted", text: `drew on ${m.grounding.passages.length} passage(s)` }) : null)));
    if (!write) return;
    const send = form.querySelector("button[type=submit]");
    send.disabled = conv.pending;
    send.dataset.hold = conv.pending ? "pending" : "";
  }
  if (write) {
    onSubmit(form, async () => {
      const text = form.text.value.trim();
      let vars = {};
      try { vars = JSON.parse(form.testVariables.value || "{}"); } catch (_) {
        throw new ApiError(400, { message: "testVariables must be a JSON object.", details: [{ field: "testVariables", message: "testVariables must be a JSON object." }] });
      }
      const body = { businessId: biz(), text };
      if (vars && Object.keys(vars).length) body.testVariables = vars;
      conv = await api("POST", base + "/messages", body);
      form.text.value = "";
      draw();
      follow();
    });
  }
  // While a reply is pending (sending waits for it), the page reads the
  // conversation again.
  function follow() {
    if (!conv.pending) return;
    keepPolling(async () => {
      conv = await api("GET", base + "?" + q({ businessId: biz() }));
      draw();
      return !conv.pending;
    }, 700);
  }
  show(h("p", {}, h("a", { href: "#/agents", text: "← Agents" })),
    h("h1", { text: `Test ${conv.agentName}` }),
    h("p", { class: "muted", text: `A ${conv.channel} agent. Test turns never reach a customer, a webhook or a contact's timeline; the agent sees your last 20 messages.` }),
    log, form);
  draw();
  follow();
}

// A secret in the one answer that made it (an API key, a signing secret):
// it lives only in this element until the page changes.
function shownOnce(id, title, hint, secret) {
  const box = h("section", { class: "card secret", "aria-labelledby": `${id}-title` },
    h("h2", { id: `${id}-title`, text: title }),
    h("p", { text: hint }),
    h("output", { id, class: "key", text: secret }),
    h("button", { type: "button", text: "Copy", onclick: () => navigator.clipboard && navigator.clipboard.writeText(secret).then(() => toast("Copied.")) }));
  main().prepend(box);
  box.querySelector("output").focus();
}

// ---- shared bits of the pages below ------------------------------------------------

function table(headers, rows, empty) {
  return h("table", {},
    h("thead", {}, h("tr", {}, headers.map((t) => h("th", { scope: "col", text: t })))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: headers.length, text: empty }))));
}

// Microcredits as credits (1 credit = 1,000,000 microcredits).
function credits(micro) {
  if (micro === null || micro === undefined) return "–";
  return `${(micro / 1e6).toLocaleString(undefined, { maximumFractionDigits: 6 })} credits`;
}

function seconds(n) {
  return n >= 60 ? `${Math.floor(n / 60)} min ${n % 60} s` : `${n} s`;
}

// A list with "Next page": `load(cursor)` answers {rows, nextCursor}.
async function paged(container, headers, empty, load, cursor) {
  let page;
  try { page = await load(cursor); } catch (err) { container.replaceChildren(h("p", { class: "form-error", text: plain({ message: err.message }) })); return; }
  container.replaceChildren(table(headers, page.rows, empty));
  if (page.nextCursor) container.append(h("button", { type: "button", class: "secondary", text: "Next page", onclick: () => paged(container, headers, empty, load, page.nextCursor) }));
}

// Polls `tick` (which answers true when done) every `ms` while the page is
// shown; several may run at once (one per message being followed, say).
function keepPolling(tick, ms) {
  let live = true;
  let timer = null;
  const stop = () => { live = false; clearTimeout(timer); pollers.delete(stop); };
  const again = async () => {
    if (!live) return;
    let done = false;
    try { done = await tick(); } catch (_) { /* next round */ }
    if (done) stop(); else if (live) timer = setTimeout(again, ms);
  };
  pollers.add(stop);
  timer = setTimeout(again, ms);
}

// ---- calls ---------------------------------------------------------------------------

const CALL_STATUSES = ["queued", "ringing", "answered", "cancelling", "completed", "no_answer", "busy", "failed", "cancelled"];

const CALL_ENDERS = ["customer", "agent", "operator", "system", "provider", "unknown"];

async function callsPage() {
  const list = h("div", { id: "call-list" });
  const agents = await api("GET", "/api/v1/agents?" + q({ businessId: biz(), limit: 200 }));
  const any = () => h("option", { value: "", text: "any" });
  const filters = h("form", { class: "inline", role: "search" },
    h("label", { for: "status", text: "Status" }),
    h("select", { id: "status", name: "status" }, any(), CALL_STATUSES.map((x) => h("option", { value: x, text: x.replace("_", " ") }))),
    h("label", { for: "ended-by", text: "Ended by" }),
    h("select", { id: "ended-by", name: "endedBy" }, any(), CALL_ENDERS.map((x) => h("option", { value: x, text: x }))),
    h("label", { for: "call-agent", text: "Agent" }),
    h("select", { id: "call-agent", name: "agentId" }, any(), agents.agents.filter((a) => a.channel === "voice").map((a) => h("option", { value: a.id, text: a.name }))),
    h("button", { type: "submit", text: "Filter" }));
  const load = (cursor) => api("GET", "/api/v1/voice/calls?" + q({ businessId: biz(), status: filters.status.value, endedBy: filters.endedBy.value,
    agentId: filters.agentId.value, cursor, limit: 50 })).then((page) => ({
    nextCursor: page.nextCursor,
    rows: page.calls.map((c) => h("tr", {},
      h("td", {}, h("a", { href: `#/calls/${c.id}`, text: c.contactName || c.calleeNumber })),
      h("td", { text: c.agentName || "" }),
      h("td", { text: c.status.replace("_", " ") }),
      h("td", { text: when(c.startedAt || c.createdAt) }),
      h("td", { text: seconds(c.durationSeconds) }),
      h("td", { text: credits(c.chargedMicrocredits) }))),
  }));
  const headers = ["Callee", "Agent", "Status", "Started", "Duration", "Charged"];
  filters.addEventListener("submit", (e) => { e.preventDefault(); paged(list, headers, "No calls.", load, null); });
  show(h("h1", { text: "Calls" }), filters, list);
  await paged(list, headers, "No calls.", load, null);
}

async function callPage(id) {
  const d = await api("GET", `/api/v1/voice/calls/${id}?` + q({ businessId: biz() }));
  const c = d.call;
  const nodes = [
    h("p", {}, h("a", { href: "#/calls", text: "← Calls" })),
    h("h1", { text: `Call to ${c.contactName || c.calleeNumber}` }),
    h("dl", { class: "facts" },
      h("dt", { text: "Number" }), h("dd", { text: c.calleeNumber }),
      h("dt", { text: "Agent" }), h("dd", { text: c.agentName || "" }),
      c.campaignName ? [h("dt", { text: "Campaign" }), h("dd", { text: c.campaignName })] : null,
      h("dt", { text: "Status" }), h("dd", { text: c.status.replace("_", " ") }),
      h("dt", { text: "Ended" }), h("dd", { text: c.endedAt ? `${when(c.endedAt)} by ${c.endedBy || "?"} (${c.endReason || ""})` : "not yet" }),
      h("dt", { text: "Duration" }), h("dd", { text: seconds(c.durationSeconds) }),
      h("dt", { text: "Charged" }), h("dd", { text: credits(c.chargedMicrocredits) })),
  ];
  if (d.recordingUrl) {
    // Signed links that expire five minutes after this read; no key needed.
    nodes.push(h("h2", { text: "Recording" }),
      h("audio", { id: "recording", controls: true, preload: "metadata", src: d.recordingUrl, "aria-label": "Call recording" }),
      h("p", {}, h("a", { href: d.recordingDownloadUrl, download: d.recordingFilename || true, text: "Download the recording" })));
  }
  nodes.push(h("h2", { text: "Transcript" }));
  if (d.transcript.length) {
    nodes.push(h("ol", { class: "timeline" }, d.transcript.map((t) => h("li", {}, h("strong", { text: `${t.speaker}: ` }), t.text))),
      h("p", {}, h("a", { href: `/api/v1/voice/calls/${id}/transcript?` + q({ businessId: biz() }), download: `transcript-${id}.txt`, text: "Download the transcript" })));
  } else nodes.push(h("p", { class: "muted", text: "No transcript." }));
  show(...nodes);
}

// ---- campaigns -----------------------------------------------------------------------

async function campaignsPage() {
  const list = h("div", {});
  const load = (cursor) => api("GET", "/api/v1/campaigns?" + q({ businessId: biz(), cursor, limit: 50 })).then((page) => ({
    nextCursor: page.nextCursor,
    rows: page.campaigns.map(({ campaign: c, currentIteration: it }) => h("tr", {},
      h("td", {}, h("a", { href: `#/campaigns/${c.id}`, text: c.name })),
      h("td", { text: c.objective }),
      h("td", { text: `${c.iterationCount} · current: ${it.channel}, ${it.status}` }),
      h("td", {}, iterationProgress(it)),
      h("td", { text: when(c.createdAt) }))),
  }));
  show(h("h1", { text: "Campaigns" }), list);
  await paged(list, ["Name", "Objective", "Iterations", "Progress", "Created"], "No campaigns.", load, null);
}

function iterationProgress(it) {
  const c = it.counts;
  const done = c.total - c.pending - c.in_progress;
  const outcomes = Object.entries(c).filter(([k, v]) => k !== "total" && v > 0).map(([k, v]) => `${k.replace("_", " ")} ${v}`).join(", ");
  return h("div", { class: "progress" },
    h("progress", { max: Math.max(c.total, 1), value: done, "aria-label": `Iteration ${it.sequence} progress` }),
    h("span", { text: ` ${done} of ${c.total} members done${outcomes ? " · " + outcomes : ""}` }));
}

async function campaignPage(id) {
  const here = location.hash;
  const base = `/api/v1/campaigns/${id}`;
  const d = await api("GET", `${base}?` + q({ businessId: biz() }));
  const its = await api("GET", `${base}/iterations?` + q({ businessId: biz(), limit: 200 }));
  const write = canWrite("campaigns:write");
  const cur = d.currentIteration;
  const act = (action) => once(async (sub) => {
    await api("PATCH", base, { businessId: biz(), action }, sub); toast({ start: "Iteration started.", pause: "Iteration paused.", cancel: "Iteration cancelled." }[action]); campaignPage(id);
  });
  const actions = write ? h("p", {},
    cur.status === "draft" || cur.status === "paused" ? h("button", { type: "button", text: cur.status === "draft" ? "Start" : "Resume", onclick: act("start") }) : null,
    cur.status === "running" ? h("button", { type: "button", class: "secondary", text: "Pause", onclick: act("pause") }) : null,
    ["draft", "running", "paused"].includes(cur.status) ? h("button", { type: "button", class: "secondary", text: "Cancel iteration", onclick: act("cancel") }) : null) : null;
  const iterationRows = its.iterations.map((it) => h("tr", {},
    h("td", { text: String(it.sequence) }),
    h("td", { text: it.channel }),
    h("td", { text: it.status + (it.pausedReason ? ` (${it.pausedReason.replace("_", " ")})` : "") }),
    h("td", {}, iterationProgress(it)),
    h("td", { text: credits(it.spentMicrocredits) })));
  const runs = h("div", { id: "summary-runs" });
  const followUp = write && ["completed", "cancelled"].includes(cur.status) ? await followUpForm(id) : null;
  if (location.hash !== here) return;
  show(
    h("p", {}, h("a", { href: "#/campaigns", text: "← Campaigns" })),
    h("h1", { text: d.campaign.name }),
    h("p", { text: d.campaign.objective }),
    actions,
    h("h2", { text: "Iterations" }),
    table(["#", "Channel", "Status", "Progress", "Spent"], iterationRows, "No iterations."),
    followUp,
    h("h2", { text: "AI summary runs" }),
    runs);
  await drawRuns(id, runs);
  if (its.iterations.some((it) => it.status === "running")) {
    keepPolling(async () => { await campaignPage(id); return true; }, 2000);
  }
}

async function drawRuns(campaignId, box) {
  const path = `/api/v1/campaigns/${campaignId}/summary-runs`;
  const list = await api("GET", `${path}?` + q({ businessId: biz(), limit: 50 }));
  const canRun = canWrite("campaigns:write");
  const rows = list.summaryRuns.map((r) => h("tr", {},
    h("td", { text: when(r.createdAt) }),
    h("td", { class: "run-status", text: r.status }),
    h("td", {}, r.status === "estimated" ? `${r.contactCount} contacts` :
      h("span", {}, h("progress", { max: Math.max(r.contactCount, 1), value: r.processedCount, "aria-label": "Summary run progress" }), ` ${r.processedCount} of ${r.contactCount}`)),
    h("td", { text: r.status === "estimated" ? `up to ${credits(r.maximumChargeMicrocredits)}` : credits(r.chargedMicrocredits) }),
    h("td", {},
      r.status === "estimated" && canRun && (!r.estimateExpiresAt || new Date(r.estimateExpiresAt) > new Date())
        ? h("button", { type: "button", text: `Confirm ${credits(r.maximumChargeMicrocredits)}`, onclick: once(async (sub) => {
          await api("POST", path, { businessId: biz(), action: "confirm", estimateId: r.id, confirmMaximumChargeMicrocredits: r.maximumChargeMicrocredits }, sub);
          toast("Summary run confirmed."); await drawRuns(campaignId, box);
        }) }) : null,
      ["completed", "partial"].includes(r.status)
        ? h("a", { href: `/api/v1/campaigns/${campaignId}/exports?` + q({ businessId: biz(), summaryRunId: r.id }), download: `campaign-${campaignId}-summary.csv`, text: "Export CSV" }) : null)));
  const estimate = canRun ? h("button", { type: "button", text: "Estimate a summary run", onclick: once(async (sub) => {
    await api("POST", path, { businessId: biz(), action: "estimate" }, sub); await drawRuns(campaignId, box);
  }) }) : null;
  box.replaceChildren(...kids([
    h("p", { class: "muted", text: "An estimate charges nothing; confirming it reserves its maximum, and each contact assessed is charged." }),
    estimate, table(["Created", "Status", "Contacts", "Charge", ""], rows, "No summary runs yet.")]));
  if (list.summaryRuns.some((r) => ["queued", "running"].includes(r.status))) {
    keepPolling(async () => { await drawRuns(campaignId, box); return true; }, 1500);
  }
}

// ---- agent create and edit -------------------------------------------------------------

async function findAgent(id) {
  let cursor = null;
  for (let i = 0; i < 50; i++) {
    const page = await api("GET", "/api/v1/agents?" + q({ businessId: biz(), cursor, limit: 200 }));
    const found = page.agents.find((a) => a.id === id);
    if (found || !page.nextCursor) return found || null;
    cursor = page.nextCursor;
  }
  return null;
}

// One form for both: the server's validation errors appear next to the
// field they name. An edit is a full replacement, so what the form does not
// show is sent back as it was.
async function agentForm(id) {
  const agent = id ? await findAgent(id) : null;
  if (id && !agent) { show(h("h1", { text: "No such agent" })); return; }
  const sources = await api("GET", "/api/v1/data-sources?" + q({ businessId: biz(), limit: 200 }));
  const chosen = new Set(agent ? agent.dataSourceIds || [] : []);
  const channel = agent ? agent.channel : "chatapp";
  const greeting = agent && agent.voiceSettings ? agent.voiceSettings.firstGreeting || "" : "";
  const form = h("form", { class: "card", novalidate: true },
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "a-channel", text: "Channel" }),
    h("select", { id: "a-channel", name: "channel", disabled: !!agent },
      ["chatapp", "photoapp", "voice", "other"].map((c) => h("option", { value: c, text: c, selected: c === channel }))),
    h("label", { for: "a-name", text: "Name" }),
    h("input", { id: "a-name", name: "name", value: agent ? agent.name : "", maxlength: 120, required: true }),
    h("label", { for: "a-instructions", text: "Instructions" }),
    h("textarea", { id: "a-instructions", name: "instructions", rows: 8, required: true, text: agent ? agent.instructions : "" }),
    h("label", { for: "a-language", text: "Language (a tag such as en or pt-BR)" }),
    h("input", { id: "a-language", name: "languageCode", value: agent ? agent.languageCode : "en", maxlength: 35 }),
    h("label", { for: "a-greeting", text: "First greeting (voice agents)" }),
    h("input", { id: "a-greeting", name: "voiceSettings.firstGreeting", value: greeting }),
    h("fieldset", {}, h("legend", { text: "Data sources it may use" }),
      sources.dataSources.length ? sources.dataSources.map((d) => h("label", { class: "check" },
        h("input", { type: "checkbox", name: "dataSourceIds", value: d.id, checked: chosen.has(d.id) }), " ", d.name))
        : h("p", { class: "muted", text: "No data sources yet." })),
    h("button", { type: "submit", text: agent ? "Save" : "Create agent" }));
  onSubmit(form, async (sub) => {
    const body = agent ? {
      businessId: biz(), agentId: agent.id, channel: agent.channel,
      contactCategoryIds: agent.contactCategoryIds, dataSourceVariables: agent.dataSourceVariables,
      voiceSettings: agent.voiceSettings, photoappCollectMobileEnabled: agent.photoappCollectMobileEnabled,
    } : { businessId: biz(), channel: form.channel.value };
    for (const [k, v] of Object.entries(body)) if (v === undefined || v === null) delete body[k];
    body.name = form.name.value;
    body.instructions = form.instructions.value;
    body.languageCode = form.languageCode.value;
    body.dataSourceIds = [...form.querySelectorAll("input[name=dataSourceIds]:checked")].map((i) => i.value);
    const g = form.querySelector("[name='voiceSettings.firstGreeting']").value;
    if ((agent ? agent.channel : form.channel.value) === "voice" && g) body.voiceSettings = { ...(body.voiceSettings || {}), firstGreeting: g };
    if (body.channel !== "voice") delete body.voiceSettings;
    const r = await api(agent ? "PATCH" : "POST", "/api/v1/agents", body, sub);
    toast(agent ? "Agent saved." : "Agent created.");
    location.hash = `#/agents/${r.agent.id}/test`;
  });
  show(h("p", {}, h("a", { href: "#/agents", text: "← Agents" })), h("h1", { text: agent ? `Edit ${agent.name}` : "New agent" }), form);
}

// ---- channels and assignments ------------------------------------------------------------

async function channelsPage() {
  const here = location.hash;
  const list = await api("GET", "/api/v1/channels?" + q({ businessId: biz() }));
  const write = canWrite("channels:write");
  const sections = [];
  for (const c of list.channels) {
    const rows = [];
    for (const conn of c.connections) {
      const a = await api("GET", "/api/v1/channels/assignments?" + q({ businessId: biz(), channel: c.key, phoneNumberId: conn.phoneNumberId }));
      const id = `assign-${c.key}-${conn.phoneNumberId || conn.providerAccountId}`.replace(/[^A-Za-z0-9_-]/g, "-");
      const form = h("form", { class: "inline", novalidate: true, "aria-label": `Assignment of ${conn.label || conn.phoneNumberId || conn.providerAccountId}` },
        h("p", { class: "form-error", role: "alert" }),
        h("label", { for: `${id}-agent`, text: "Agent" }),
        h("select", { id: `${id}-agent`, name: "aiAgentId", disabled: !write },
          h("option", { value: "", text: "none" }),
          a.assignableAgents.map((x) => h("option", { value: x.id, text: x.name, selected: x.id === a.aiAgentId }))),
        h("label", { class: "check" }, h("input", { type: "checkbox", name: "autoReplyEnabled", checked: a.autoReplyEnabled, disabled: !write }), " auto-reply"),
        h("label", { class: "check" }, h("input", { type: "checkbox", name: "humanHandoffActive", checked: a.humanHandoffActive, disabled: !write }), " a person has taken over"),
        write ? h("button", { type: "submit", text: "Save" }) : null);
      onSubmit(form, async (sub) => {
        const body = { businessId: biz(), channel: c.key, aiAgentId: form.aiAgentId.value || null,
          autoReplyEnabled: form.autoReplyEnabled.checked, humanHandoffActive: form.humanHandoffActive.checked };
        if (conn.phoneNumberId) body.phoneNumberId = conn.phoneNumberId;
        if (conn.providerAccountId) body.providerAccountId = conn.providerAccountId;
        await api("PATCH", "/api/v1/channels/assignments", body, sub); toast("Assignment saved.");
      });
      rows.push(h("li", {}, h("strong", { text: conn.label || conn.phoneNumberId || conn.providerAccountId }), form));
    }
    sections.push(h("section", { class: "card", "aria-labelledby": `ch-${c.key}` },
      h("h2", { id: `ch-${c.key}`, text: c.label }),
      h("p", { text: `${c.ready ? "Ready" : "Not ready"} · ${c.live ? "live" : "not live"} · agents assigned ${String(c.assignmentMode).replace(/_/g, " ")}` }),
      rows.length ? h("ul", { class: "plain" }, rows) : null));
  }
  sections.push(await providersSection());
  showOn(here, h("h1", { text: "Channels" }), ...sections);
}

// Which adapter carries the business's messages and calls: the embedded
// sandbox or a plugin this server loaded, with the business's settings for
// it. Secret values never come back ("(set)"); a blank field keeps what is
// stored.
async function providersSection() {
  const data = await api("GET", "/console/api/providers");
  const owner = state.me.role === "owner";
  const forms = data.providers.map((p) => {
    const id = `provider-${p.interface}`;
    const choices = data.plugins.filter((x) => x.interface === p.interface);
    const form = h("form", { novalidate: true, "aria-label": `Adapter for ${p.interface}` },
      h("p", { class: "form-error", role: "alert" }));
    const fields = h("div", { class: "settings" });
    const select = h("select", { id: `${id}-plugin`, name: "plugin", disabled: !owner },
      h("option", { value: "", text: p.interface === "ai" ? "the server's AI" : "embedded sandbox" }),
      choices.map((x) => h("option", { value: x.name, text: `${x.name} ${x.version}`, selected: p.plugin === x.name })));
    const drawSettings = () => {
      const plugin = choices.find((x) => x.name === select.value);
      fields.replaceChildren(...(plugin ? plugin.settings : []).map((st) => {
        const stored = p.plugin === plugin.name && p.settings ? p.settings[st.name] : undefined;
        const fid = `${id}-setting-${st.name}`.replace(/[^A-Za-z0-9_-]/g, "-");
        return h("p", {},
          h("label", { for: fid, text: `${st.name}${st.required ? " (required)" : ""}${st.secret ? " (secret)" : ""}` }),
          h("input", { id: fid, name: `setting:${st.name}`, type: st.secret ? "password" : "text", autocomplete: "off", disabled: !owner,
            value: st.secret ? "" : (stored || ""), placeholder: st.secret && stored ? "set; leave blank to keep" : "" }));
      }));
    };
    select.addEventListener("change", drawSettings);
    drawSettings();
    const verb = { messenger: "Messages go through", carrier: "Calls go through", ai: "Agent replies are written by" }[p.interface];
    add(form, h("label", { for: `${id}-plugin`, text: verb }), select, fields,
      owner ? h("button", { type: "submit", text: "Save" }) : null);
    onSubmit(form, async () => {
      const body = { plugin: select.value || null, settings: {} };
      for (const input of fields.querySelectorAll("input")) {
        if (input.value !== "") body.settings[input.name.slice("setting:".length)] = input.value;
      }
      await api("PUT", `/console/api/providers/${p.interface}`, body); toast("Adapter saved."); await channelsPage();
    });
    const builtIn = p.interface === "ai" ? "the server's AI" : "embedded sandbox";
    const now = p.adapter === "plugin" ? `plugin ${p.plugin}${p.loaded === false ? " (not loaded in this server)" : ""}` : builtIn;
    const title = { messenger: "Messages", carrier: "Voice calls", ai: "Agent replies" }[p.interface];
    return h("div", {}, h("h3", { text: title }), h("p", { class: "muted", text: `Now: ${now}` }), form);
  });
  return h("section", { class: "card", "aria-labelledby": "ch-providers" },
    h("h2", { id: "ch-providers", text: "Provider adapters" }),
    data.plugins.length ? null : h("p", { class: "muted", text: "No plugins are loaded in this server (serve --plugin-dir)." }),
    ...forms);
}

// ---- webhooks ------------------------------------------------------------------------------

const SIGNING_SECRET_HINT = "Copy it now: it is not shown again. Verify each delivery's signature with it.";

async function webhooksPage() {
  const here = location.hash;
  if (!canWrite("webhooks:write")) {
    show(h("h1", { text: "Webhooks" }), h("p", { class: "muted", text: "Managing webhooks takes an owner." }));
    return;
  }
  const [subs, channels, contract] = await Promise.all([
    api("GET", "/api/v1/webhook-subscriptions?" + q({ businessId: biz(), limit: 200 })),
    api("GET", "/api/v1/channels?" + q({ businessId: biz() })),
    api("GET", "/api/v1/contracts/whatsapp-automation"),
  ]);
  const rows = subs.subscriptions.map((w) => h("tr", {},
    h("td", { text: w.channel }),
    h("td", { text: w.phoneNumberId || w.providerAccountId || "" }),
    h("td", {}, h("code", { text: w.callbackUrl })),
    h("td", { text: w.events.join(", ") }),
    h("td", { text: w.status }),
    h("td", {}, h("code", { text: `…${w.secretLast4}` })),
    h("td", { class: "actions" },
      h("a", { href: `#/webhooks/${w.id}`, text: "Deliveries" }),
      w.status !== "revoked" ? [
        h("button", { type: "button", class: "secondary", text: w.status === "paused" ? "Resume" : "Pause", onclick: once(async (sub) => {
          await api("PATCH", `/api/v1/webhook-subscriptions/${w.id}`, { businessId: biz(), status: w.status === "paused" ? "active" : "paused" }, sub); await webhooksPage();
        }) }),
        h("button", { type: "button", class: "secondary", text: "Rotate secret", onclick: once(async (sub) => {
          if (!confirm("Rotate the signing secret? Deliveries are signed with the new one from now on.")) return;
          const r = await api("POST", `/api/v1/webhook-subscriptions/${w.id}/rotate-secret`, { businessId: biz() }, sub); await webhooksPage(); shownOnce("secret-value", "The new signing secret", SIGNING_SECRET_HINT, r.signingSecret);
        }) }),
        h("button", { type: "button", class: "danger", text: "Revoke", onclick: once(async (sub) => {
          if (!confirm("Revoke this subscription for good?")) return;
          await api("DELETE", `/api/v1/webhook-subscriptions/${w.id}?` + q({ businessId: biz() }), undefined, sub); await webhooksPage();
        }) }),
      ] : null)));
  const targets = [];
  for (const c of channels.channels) {
    for (const conn of c.connections) {
      targets.push(h("option", { value: JSON.stringify({ channel: c.key, phoneNumberId: conn.phoneNumberId, providerAccountId: conn.providerAccountId }),
        text: `${c.label}: ${conn.label || conn.phoneNumberId || conn.providerAccountId}` }));
    }
  }
  const form = h("form", { class: "card", novalidate: true },
    h("h2", { text: "Subscribe" }),
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "w-target", text: "Number or account" }),
    h("select", { id: "w-target", name: "target" }, targets),
    h("label", { for: "w-url", text: "Callback URL" }),
    h("input", { id: "w-url", name: "callbackUrl", type: "url", placeholder: "https://example.com/hooks", required: true }),
    h("fieldset", {}, h("legend", { text: "Events" }),
      contract.eventTypes.map((e) => h("label", { class: "check" }, h("input", { type: "checkbox", name: "events", value: e }), " ", e))),
    h("label", { class: "check" }, h("input", { type: "checkbox", name: "externalAutomation" }),
      " My backend answers these customers itself (external automation; the contract requires it)"),
    h("button", { type: "submit", text: "Create subscription" }));
  onSubmit(form, async (sub) => {
    if (!form.target.value) throw new ApiError(400, { message: "Connect a chatapp number or a photoapp account first." });
    const t = JSON.parse(form.target.value);
    const channel = t.channel;
    const body = { businessId: biz(), channel, callbackUrl: form.callbackUrl.value, externalAutomation: form.externalAutomation.checked,
      events: [...form.querySelectorAll("input[name=events]:checked")].map((i) => i.value).filter((v) => v.startsWith(channel + ".")) };
    if (t.phoneNumberId) body.phoneNumberId = t.phoneNumberId;
    if (t.providerAccountId) body.providerAccountId = t.providerAccountId;
    const r = await api("POST", "/api/v1/webhook-subscriptions", body, sub);
    await webhooksPage();
    shownOnce("secret-value", "Your signing secret", SIGNING_SECRET_HINT, r.signingSecret);
  });
  showOn(here, h("h1", { text: "Webhooks" }),
    table(["Channel", "Number or account", "Callback URL", "Events", "Status", "Secret", ""], rows, "No subscriptions yet."),
    form);
}

async function deliveriesPage(id) {
  const list = h("div", {});
  const path = `/api/v1/webhook-subscriptions/${id}`;
  const load = (cursor) => api("GET", `${path}/deliveries?` + q({ businessId: biz(), cursor, limit: 50 })).then((page) => ({
    nextCursor: page.nextCursor,
    rows: page.attempts.map((a) => h("tr", {},
      h("td", { text: when(a.attemptedAt) }),
      h("td", { text: a.eventType }),
      h("td", {}, h("code", { text: a.eventId })),
      h("td", { text: String(a.retryNumber) }),
      h("td", { text: a.outcome + (a.statusCode ? ` (${a.statusCode})` : "") + (a.error ? `: ${a.error}` : "") }),
      h("td", { text: a.latencyMs === null ? "" : `${a.latencyMs} ms` }),
      h("td", {}, canWrite("webhooks:write") ? h("button", { type: "button", class: "secondary", text: "Redeliver", "aria-label": `Redeliver ${a.eventId}`, onclick: once(async (sub) => {
        await api("POST", `${path}/redeliver`, { businessId: biz(), eventId: a.eventId }, sub); toast("Sent again; the new attempt appears here.");
      }) }) : null))),
  }));
  show(h("p", {}, h("a", { href: "#/webhooks", text: "← Webhooks" })), h("h1", { text: "Delivery log" }), list);
  await paged(list, ["Attempted", "Event", "Event id", "Retry", "Outcome", "Latency", ""], "No deliveries yet.", load, null);
}

// ---- data sources --------------------------------------------------------------------------

const FIELD_TYPES = ["text", "number", "integer", "boolean", "date", "datetime", "phone", "email"];
const UPLOAD_FORMATS = { csv: "csv", tsv: "tsv", json: "json", xlsx: "xlsx", xlsm: "xlsm" };

async function dataSourcesPage() {
  const page = await api("GET", "/api/v1/data-sources?" + q({ businessId: biz(), limit: 200 }));
  const rows = page.dataSources.map((d) => h("tr", {},
    h("td", {}, h("a", { href: `#/data-sources/${d.id}`, text: d.name })),
    h("td", { text: `${d.class} ${d.kind}${d.builtIn ? " (built in)" : ""}` }),
    h("td", { text: d.status }),
    h("td", { text: String(d.itemCount) }),
    h("td", { text: versionText(d) })));
  const nodes = [h("h1", { text: "Data sources" }), table(["Name", "Kind", "Status", "Items", "Version in use"], rows, "No data sources.")];
  if (canWrite("data_sources:write")) {
    const form = h("form", { class: "card", novalidate: true },
      h("h2", { text: "New data source" }),
      h("p", { class: "form-error", role: "alert" }),
      h("label", { for: "ds-name", text: "Name" }),
      h("input", { id: "ds-name", name: "name", maxlength: 120, required: true }),
      h("label", { for: "ds-class", text: "Kind" }),
      h("select", { id: "ds-class", name: "class" },
        h("option", { value: "structured", text: "A table (upload CSV, TSV, JSON or XLSX)" }),
        h("option", { value: "unstructured", text: "Text knowledge" })),
      h("label", { for: "ds-content", text: "Text (text knowledge only)" }),
      h("textarea", { id: "ds-content", name: "content", rows: 5 }),
      h("button", { type: "submit", text: "Create data source" }));
    onSubmit(form, async (sub) => {
      const structured = form.class.value === "structured";
      const body = structured ? { businessId: biz(), name: form.name.value, class: "structured", kind: "table" }
        : { businessId: biz(), name: form.name.value, class: "unstructured", kind: "text", content: form.content.value };
      const r = await api("POST", "/api/v1/data-sources", body, sub);
      location.hash = `#/data-sources/${r.dataSource.id}`;
    });
    nodes.push(form);
  }
  show(...nodes);
}

// Which version answers: only uploaded tables have versions; the built-in
// Contacts source is the live contact list and a text source its text.
function versionText(d) {
  if (d.builtIn) return "live contact list";
  if (d.class !== "structured") return "its text (no versions)";
  return d.activeVersionId ? "an activated upload" : "none activated yet";
}

// The facts of a data source (drawn again when a version is activated).
function sourceFacts(d) {
  return h("dl", { class: "facts", id: "source-facts" },
    h("dt", { text: "Kind" }), h("dd", { text: `${d.class} ${d.kind}${d.builtIn ? " (built in)" : ""}` }),
    h("dt", { text: "Status" }), h("dd", { text: d.status }),
    h("dt", { text: "Items" }), h("dd", { id: "source-items", text: String(d.itemCount) }),
    h("dt", { text: "In use" }), h("dd", { text: versionText(d) }),
    h("dt", { text: "Fields" }), h("dd", { text: d.fields.map((f) => `${f.key} (${f.type})`).join(", ") || "none yet" }));
}

async function findSource(id) {
  const page = await api("GET", "/api/v1/data-sources?" + q({ businessId: biz(), limit: 200 }));
  return page.dataSources.find((x) => x.id === id) || null;
}

// Sends the file itself as the body (the raw form of operation 21), so a
// large file needs no base64 and the browser reports the upload's progress.
function uploadRaw(sourceId, file, format, onProgress, sub) {
  return new Promise((resolve, reject) => {
    const x = new XMLHttpRequest();
    x.open("POST", "/api/v1/data-sources/upload?" + q({ businessId: biz(), dataSourceId: sourceId, fileName: file.name, format }));
    x.setRequestHeader("Content-Type", "application/octet-stream");
    x.setRequestHeader("X-CSRF-Token", state.me.csrfToken);
    x.setRequestHeader("Idempotency-Key", sub.key("POST", "/api/v1/data-sources/upload"));
    x.upload.onprogress = (e) => { if (e.lengthComputable) onProgress(e.loaded / e.total); };
    x.onload = () => {
      let payload = null;
      try { payload = JSON.parse(x.responseText); } catch (_) { /* not JSON */ }
      if (x.status === 202 && payload && payload.ok) resolve(payload.data);
      else reject(new ApiError(x.status, payload && payload.error));
    };
    x.onerror = () => reject(new ApiError(0, { message: "the upload was interrupted; try again" }));
    x.send(file);
  });
}

async function dataSourcePage(id, ingestionId) {
  const d = await findSource(id);
  if (!d) { show(h("h1", { text: "No such data source" })); return; }
  const nodes = [
    h("p", {}, h("a", { href: "#/data-sources", text: "← Data sources" })),
    h("h1", { text: d.name }),
    sourceFacts(d),
  ];
  const review = h("section", { id: "ingestion", "aria-live": "polite" });
  if (d.class === "structured" && !d.builtIn && canWrite("data_sources:write")) {
    const form = h("form", { class: "card", novalidate: true },
      h("h2", { text: "Upload a new version" }),
      h("p", { class: "form-error", role: "alert" }),
      h("label", { for: "ds-file", text: "File (CSV, TSV, JSON, XLSX or XLSM)" }),
      h("input", { id: "ds-file", name: "file", type: "file", accept: ".csv,.tsv,.json,.xlsx,.xlsm", required: true }),
      h("progress", { id: "upload-progress", max: 1, value: 0, hidden: true, "aria-label": "Upload progress" }),
      h("button", { type: "submit", text: "Upload" }));
    onSubmit(form, async (sub) => {
      const file = form.file.files[0];
      if (!file) throw new ApiError(400, { message: "Choose a file." });
      const ext = file.name.split(".").pop().toLowerCase();
      const format = UPLOAD_FORMATS[ext];
      if (!format) throw new ApiError(400, { message: "The file must end in .csv, .tsv, .json, .xlsx or .xlsm." });
      const bar = form.querySelector("progress");
      bar.hidden = false;
      try {
        const r = await uploadRaw(id, file, format, (f) => { bar.value = f; }, sub);
        bar.value = 1;
        // The address names the version (to come back to it) without
        // rebuilding the page.
        history.replaceState(null, "", `#/data-sources/${id}/ingestions/${r.ingestionId}`);
        watchIngestion(review, r.ingestionId, id);
      } catch (err) { bar.hidden = true; throw err; }
    });
    nodes.push(form);
  }
  nodes.push(review);
  show(...nodes);
  if (ingestionId) watchIngestion(review, ingestionId, id);
}

// Shows an ingestion's stage as it moves, its issues, and the review form
// when columns need a type.
// Once the version is active, the source's facts (items, fields) are read
// again: they changed.
function watchIngestion(box, ingestionId, sourceId) {
  const draw = async (known) => {
    const r = known || await api("GET", "/api/v1/data-sources/ingestions?" + q({ businessId: biz(), ingestionId }));
    const g = r.ingestion;
    const nodes = [h("h2", { text: `Version ${g.versionNumber}` }),
      h("p", { id: "ingestion-stage", text: `Stage: ${g.stage.replace("_", " ")} · ${g.rowCount} rows · ${g.issueCount} issues` + (g.failureReason ? ` · ${g.failureReason}` : "") })];
    if (r.issues.length) nodes.push(h("ul", {}, r.issues.map((i) => h("li", { text: `${i.row ? "row " + i.row + ", " : ""}${i.column ? i.column + ": " : ""}${i.problem}` }))));
    if (["needs_review", "ready"].includes(g.stage) && canWrite("data_sources:write")) {
      const form = h("form", { class: "card", novalidate: true },
        h("p", { class: "form-error", role: "alert" }),
        r.columnsNeedingReview.map((c, n) => [
          h("label", { for: `col-${n}`, text: `${c.column} (samples: ${(c.samples || []).slice(0, 3).join(", ")})` }),
          h("select", { id: `col-${n}`, name: c.column }, FIELD_TYPES.map((t) => h("option", { value: t, text: t, selected: t === c.suggestedType })))]),
        h("button", { type: "submit", text: "Activate this version" }));
      onSubmit(form, async (sub) => {
        const columns = r.columnsNeedingReview.map((c, n) => ({ column: c.column, type: form.querySelector(`#col-${n}`).value }));
        const next = await api("PATCH", "/api/v1/data-sources/ingestions", { businessId: biz(), ingestionId, columns, activate: true }, sub);
        if (next && next.ingestion) await draw(next);
        watchIngestion(box, ingestionId, sourceId);
      });
      nodes.push(form);
    }
    box.replaceChildren(...kids(nodes));
    if (g.stage === "active") {
      const d = await findSource(sourceId);
      const facts = document.getElementById("source-facts");
      if (d && facts) facts.replaceWith(sourceFacts(d));
    }
    return ["active", "failed", "needs_review", "ready"].includes(g.stage);
  };
  keepPolling(() => draw(null), 700);
  draw(null);
}

// ---- messages --------------------------------------------------------------------------------

const MESSAGE_DONE = ["delivered", "read", "failed"];

// A chatapp text from one of the business's connected numbers; its
// delivery state follows below the form until it is delivered, read or failed.
async function sendForm(to, onSent) {
  const channels = await api("GET", "/api/v1/channels?" + q({ businessId: biz() }));
  const chat = channels.channels.find((c) => c.key === "chatapp");
  const numbers = chat ? chat.connections : [];
  const sent = h("ul", { class: "plain", id: "sent-messages", "aria-live": "polite" });
  const form = h("form", { class: "card", novalidate: true },
    h("h2", { text: "Send a chatapp message" }),
    h("p", { class: "form-error", role: "alert" }),
    numbers.length ? null : h("p", { class: "muted", text: "Connect a chatapp number first (switchboard admin channel connect)." }),
    h("label", { for: "m-from", text: "From number" }),
    h("select", { id: "m-from", name: "phoneNumberId" }, numbers.map((n) => h("option", { value: n.phoneNumberId, text: n.label || n.phoneNumberId }))),
    h("label", { for: "m-to", text: "To (E.164 mobile)" }),
    h("input", { id: "m-to", name: "to", type: "tel", value: to || "", readonly: !!to, placeholder: "+14155550123" }),
    h("label", { for: "m-text", text: "Message" }),
    h("textarea", { id: "m-text", name: "text", rows: 3, maxlength: 4096 }),
    h("button", { type: "submit", text: "Send", disabled: !numbers.length }),
    sent);
  onSubmit(form, async (sub) => {
    const r = await api("POST", "/api/v1/messages", { businessId: biz(), channel: "chatapp", phoneNumberId: form.phoneNumberId.value,
      to: form.to.value.trim(), type: "text", text: form.text.value }, sub);
    form.text.value = "";
    const line = h("li", { class: "message-state", text: `${when(new Date().toISOString())}: queued` });
    sent.prepend(line);
    if (onSent) await onSent();
    let last = "queued";
    keepPolling(async () => {
      const m = await api("GET", `/api/v1/messages/${r.messageId}?` + q({ businessId: biz() }));
      line.textContent = `${when(m.queuedAt)} to ${m.recipient}: ${m.status}` + (m.failure ? ` (${m.failure.message || m.failure.code})` : "");
      if (m.status !== last && onSent) await onSent();
      last = m.status;
      return MESSAGE_DONE.includes(m.status);
    }, 700);
  });
  return form;
}

async function messagesPage() {
  show(h("h1", { text: "Messages" }),
    h("p", { class: "muted", text: "Conversations appear on each contact's timeline; send a message here or from a contact's page." }),
    canWrite("communications:write") ? await sendForm(null) : h("p", { class: "muted", text: "Sending takes an owner." }));
}

// ---- credits -----------------------------------------------------------------------------------

// The ledger grouped by what moved the credits: one row per call or summary
// run (its reservation, charge and release together) with what it cost and
// what it still holds, linked to it; a grant is a row of its own; nothing
// that moved zero credits is shown.
async function creditsPage() {
  const list = h("div", { id: "ledger" });
  const first = await api("GET", "/api/v1/credits?" + q({ businessId: biz(), limit: 200 }));
  // What a reference names: a call (linked to its report) or a summary run
  // (linked to its campaign); read once for the page.
  const names = new Map();
  const [calls, campaigns] = await Promise.all([
    canWrite("voice:read") ? api("GET", "/api/v1/voice/calls?" + q({ businessId: biz(), limit: 200 })).catch(() => null) : null,
    api("GET", "/api/v1/campaigns?" + q({ businessId: biz(), limit: 50 })).catch(() => null),
  ]);
  for (const c of (calls && calls.calls) || []) names.set(c.id, { text: `Call to ${c.contactName || c.calleeNumber}`, href: `#/calls/${c.id}` });
  await Promise.all(((campaigns && campaigns.campaigns) || []).map(async ({ campaign }) => {
    const runs = await api("GET", `/api/v1/campaigns/${campaign.id}/summary-runs?` + q({ businessId: biz(), limit: 50 })).catch(() => null);
    for (const r of (runs && runs.summaryRuns) || []) names.set(r.id, { text: `AI summary run of ${campaign.name}`, href: `#/campaigns/${campaign.id}` });
  }));
  const entries = [...first.entries];
  let cursor = first.nextCursor;
  const draw = () => {
    const groups = new Map();
    for (const e of entries) {
      const k = e.reference ? `ref:${e.reference}` : `entry:${e.id}`;
      if (!groups.has(k)) groups.set(k, { reference: e.reference, note: e.note, last: e.createdAt, moves: { grant: 0, reserve: 0, charge: 0, release: 0 } });
      const g = groups.get(k);
      g.moves[e.kind] = (g.moves[e.kind] || 0) + e.amountMicrocredits;
      if (String(e.createdAt) > String(g.last)) g.last = e.createdAt;
    }
    const rows = [];
    for (const g of groups.values()) {
      const m = g.moves;
      const held = Math.max(m.reserve - m.charge - m.release, 0);
      if (!m.grant && !m.charge && !held) continue;
      const what = m.grant ? (g.note || "Credits added") : null;
      const name = g.reference ? names.get(g.reference) : null;
      const label = name ? h("a", { href: name.href, text: name.text }) : (what || (g.note ? g.note : "A call or summary run no longer listed"));
      const amount = m.grant ? `+${credits(m.grant)}` : (m.charge ? `−${credits(m.charge)}` : "");
      rows.push(h("tr", {},
        h("td", { text: when(g.last) }),
        h("td", {}, label),
        h("td", { class: "amount", text: amount }),
        h("td", { text: held ? `${credits(held)} reserved` : (m.grant ? "" : "settled") })));
    }
    list.replaceChildren(table(["When", "What", "Amount", "State"], rows, "No movements yet."));
    if (cursor) {
      list.append(h("button", { type: "button", class: "secondary", text: "Older movements", onclick: once(async () => {
        const page = await api("GET", "/api/v1/credits?" + q({ businessId: biz(), cursor, limit: 200 }));
        entries.push(...page.entries);
        cursor = page.nextCursor;
        draw();
      }) }));
    }
  };
  show(h("h1", { text: "Credits" }),
    h("dl", { class: "facts" },
      h("dt", { text: "Available" }), h("dd", { id: "credits-available", text: credits(first.availableMicrocredits) }),
      h("dt", { text: "Reserved" }), h("dd", { text: credits(first.reservedMicrocredits) })),
    h("p", { class: "muted", text: "Calls reserve their maximum before they are placed and are charged what they cost; summary runs reserve their confirmed maximum. Credits are added by an operator (switchboard admin credits add)." }),
    h("h2", { text: "Ledger" }), list);
  draw();
}

// A follow-up iteration (operation 49): members of the current one chosen
// by their outcome, or those the latest summary run recommends.
async function followUpForm(campaignId) {
  const agents = await api("GET", "/api/v1/agents?" + q({ businessId: biz(), limit: 200 }));
  const usable = agents.agents.filter((a) => a.status === "active" && ["voice", "chatapp"].includes(a.channel));
  const outcomes = ["completed", "no_answer", "busy", "failed", "cancelled", "sent", "delivered", "read", "replied", "skipped"];
  const form = h("form", { class: "card", novalidate: true },
    h("h2", { text: "Follow up" }),
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "f-agent", text: "Agent (its channel is the iteration's)" }),
    h("select", { id: "f-agent", name: "agentId" }, usable.map((a) => h("option", { value: a.id, text: `${a.name} (${a.channel})` }))),
    h("fieldset", {}, h("legend", { text: "Who" }),
      h("label", { class: "check" }, h("input", { type: "radio", name: "who", value: "outcomes", checked: true }), " members whose outcome was"),
      outcomes.map((o) => h("label", { class: "check" }, h("input", { type: "checkbox", name: "selection", value: o }), " ", o.replace("_", " "))),
      h("label", { class: "check" }, h("input", { type: "radio", name: "who", value: "ai" }), " the contacts the latest summary run recommends")),
    h("label", { for: "f-opening", text: "Opening message (chatapp agents)" }),
    h("textarea", { id: "f-opening", name: "openingMessage", rows: 2, maxlength: 1000 }),
    h("button", { type: "submit", text: "Create follow-up" }));
  onSubmit(form, async (sub) => {
    const agent = usable.find((a) => a.id === form.agentId.value);
    if (!agent) throw new ApiError(400, { message: "Create an active voice or chatapp agent first." });
    const ai = form.querySelector("input[name=who]:checked").value === "ai";
    const body = { businessId: biz(), channel: agent.channel, agentId: agent.id,
      selection: ai ? { aiRecommended: true } : { fromOutcomes: [...form.querySelectorAll("input[name=selection]:checked")].map((i) => i.value) } };
    if (agent.channel === "chatapp") body.openingMessage = form.openingMessage.value;
    const r = await api("POST", `/api/v1/campaigns/${campaignId}/iterations`, body, sub);
    toast(`Follow-up created with ${r.admission.accepted} members; start it when ready.`);
    await campaignPage(campaignId);
  });
  return form;
}

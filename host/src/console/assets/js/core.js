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
  if (route.locked) lockForms(m, route.locked);
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
    super(error && error.message ? words(error.message) : `request failed (${status})`);
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

// The roles, as the users page offers them.
const ROLE_WORDS = { viewer: "viewer (reads only)", agent: "agent (answers conversations; changes no settings)", owner: "owner (everything)" };

// A page its route says the reader may read but not change (main.js names
// the scope a change takes): every form's controls are disabled, the
// page's buttons hidden (a search's excepted), and a notice under the title
// says why.
function lockForms(root, why) {
  for (const f of root.querySelectorAll("form:not([role=search])")) {
    f.querySelectorAll("input, select, textarea, button").forEach((c) => { c.disabled = true; });
  }
  root.querySelectorAll("button").forEach((b) => { if (!b.closest("form[role=search]")) b.hidden = true; });
  const notice = h("p", { class: "notice", role: "note", id: "read-only", text: why });
  const title = root.querySelector("h1");
  if (title) title.after(notice); else root.prepend(notice);
}

// A form without errors: no message above it, no field marked.
function clearErrors(form) {
  form.querySelectorAll(".field-error").forEach((e) => e.remove());
  form.querySelectorAll("[aria-invalid]").forEach((e) => {
    e.removeAttribute("aria-invalid");
    // A field's hint (data-hint) stays its description.
    if (e.dataset.hint) e.setAttribute("aria-describedby", e.dataset.hint); else e.removeAttribute("aria-describedby");
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

// Field names as a person says them, where the last part of the name
// alone would not do (words() turns the rest from camelCase into words).
const FIELD_NAMES = {
  businessId: "business", agentId: "agent", contactIds: "contacts", categoryIds: "categories", categoryId: "category",
  maxSpendMicrocredits: "budget cap", maxRetries: "retries", retryDelayMinutes: "retry delay", phoneNumberId: "number",
  providerAccountId: "account", aiAgentId: "agent", toNumber: "number", to: "number", languageCode: "language",
  confirmMaximumChargeMicrocredits: "confirmed maximum", microcredits: "amount", pricePerBlockMicrocredits: "price",
  pricePerContactMicrocredits: "price per contact", pricePerThousandCharactersMicrocredits: "price per 1,000 characters",
};
function fieldName(path) {
  const last = String(path).split(/[.[\]]/).filter((p) => p && !/^[0-9]+$/.test(p)).pop() || String(path);
  return FIELD_NAMES[last] || last.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase();
}

// A server message in the business's words: no code-form field names
// (`iteration.openingMessage` becomes "opening message"), no operation
// ids, and credits rather than microcredits (1 credit = 1,000,000).
function words(text) {
  let t = String(text || "");
  t = t.replace(/([0-9][0-9,_]*) microcredits?/g, (_, n) => credits(Number(n.replace(/[,_]/g, ""))));
  t = t.replace(/`([^`]*)`/g, (_, code) => (/^[A-Za-z_][A-Za-z0-9_.[\]]*$/.test(code) ? fieldName(code) : code));
  t = t.replace(/\bmicrocredits\b/gi, "credits").replace(/\bmicrocredit\b/gi, "credit");
  // An operation id (a verb then a noun in camelCase: createCampaign) says nothing to a person.
  t = t.replace(/\b(?:list|get|create|update|delete|send|start|cancel|preview|mark|read|download|export|redeliver|rotate|reset|resolve|upload)[A-Z][A-Za-z]+\b/g, "this action");
  return t;
}

// A validation message as a person reads it: never a regular expression,
// never a field name in code form.
function plain(detail) {
  const msg = words(detail.message);
  const at = msg.indexOf(" must match the pattern ");
  if (at < 0) return msg;
  const pattern = String(detail.message || "").split(" must match the pattern ").pop();
  const field = String(detail.field || "").split(/[.[]/).pop() || (String(detail.message || "").match(/`([^`]+)`/) || [])[1] || "";
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
    input.setAttribute("aria-describedby", [id, input.dataset.hint].filter(Boolean).join(" "));
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
  await loadBusinessSettings();
  frame();
}

// The business's settings (getBusinessSettings): its default phone
// country, which every phone input takes a number without "+" in.
async function loadBusinessSettings() {
  state.settings = state.me ? await api("GET", "/api/v1/business-settings?" + q({ businessId: biz() })).then((d) => d.settings).catch(() => null) : null;
}

// The calling code of the business's default phone country, if it has one.
function businessCallingCode() {
  return (state.settings && state.settings.defaultCallingCode) || null;
}

function frame() {
  const nav = document.getElementById("nav");
  const who = document.getElementById("who");
  const out = document.getElementById("logout");
  const menu = document.getElementById("menu");
  nav.hidden = !state.me;
  out.hidden = !state.me;
  menu.hidden = !state.me;
  // Compact: the address first (cut short if need be), then the role; the
  // business is the overview's title (and the tooltip here). On a phone it
  // is said in full in the open menu (console.css).
  who.replaceChildren(...(state.me ? [h("span", { class: "who-email", text: state.me.email }), h("span", { class: "who-role", text: ` · ${state.me.role}` })] : []));
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
    await loadBusinessSettings();
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
  // Every table a page adds gets its card labels (see cardCells).
  new MutationObserver((records) => {
    for (const r of records) for (const n of r.addedNodes) if (n.nodeType === 1) cardCells(n);
  }).observe(main(), { childList: true, subtree: true });
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


// Everything a page polls; a navigation stops it all.
const pollers = new Set();
let routed = false;

async function route() {
  setMenu(false);
  for (const stop of pollers) stop();
  pollers.clear();
  route.locked = null;
  if (location.hash === "#/setup") return;
  if (!state.me) { renderLogin(); return; }
  for (const [re, page, scope, why] of routes) {
    const m = location.hash.match(re);
    if (m) {
      route.locked = scope && !canWrite(scope) ? why : null;
      document.querySelectorAll("#nav a").forEach((a) => {
        const here = location.hash.startsWith(a.getAttribute("href")) && a.getAttribute("href") !== "#/" || a.getAttribute("href") === (location.hash || "#/");
        if (here) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
      });
      // A loading state until the page draws (pages draw once their data is in).
      show(loading());
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


// ---- shared bits of the pages below ------------------------------------------------

// A table of rows under column headings; with no rows, one row saying
// `empty`. Under 700 px each row shows as a card (console.css), each cell
// under its heading (cardCells): put the column that names a row first.
function table(headers, rows, empty) {
  return cardCells(h("table", {},
    h("thead", {}, h("tr", {}, headers.map((t) => h("th", { scope: "col", text: t })))),
    h("tbody", {}, rows.length ? rows : h("tr", { class: "empty" }, h("td", { colspan: headers.length, text: empty })))));
}

// Gives every body cell of the tables in `root` its column's heading as
// data-label (what a card on a phone shows before the value), marks a row
// of one cell spanning the table (a "nothing here" row) as empty, and the
// table as .cards (a chart's .figures table stays a table). Runs
// on every table a page adds (the observer in DOMContentLoaded), so a page
// that builds its own <table> gets cards too.
function cardCells(root) {
  const tables = root.matches && root.matches("table") ? [root] : [...root.querySelectorAll("table")];
  for (const t of tables) {
    if (t.classList.contains("figures")) continue;
    t.classList.add("cards");
    const heads = [...t.querySelectorAll("thead th")].map((th) => th.textContent.trim());
    for (const tr of t.querySelectorAll("tbody tr")) {
      const cells = [...tr.children];
      if (cells.length === 1 && Number(cells[0].getAttribute("colspan") || 1) > 1) { tr.classList.add("empty"); continue; }
      let col = 0;
      for (const td of cells) {
        if (td.tagName === "TD" && !td.hasAttribute("data-label") && heads[col]) td.setAttribute("data-label", heads[col]);
        if (td.tagName === "TD" && STATUS_HEADINGS.includes(heads[col])) badgeCell(td);
        // A card shows the label and the value side by side (a grid of two):
        // a value of several nodes is kept together in one.
        if (td.hasAttribute("data-label") && td.childNodes.length > 1) td.replaceChildren(h("span", { class: "cell" }, [...td.childNodes]));
        col += Number(td.getAttribute("colspan") || 1);
      }
    }
  }
  return root;
}

// The tone of a status word: done well, under way, gone wrong, or plain.
const BADGE_TONES = {
  ok: ["active", "completed", "delivered", "read", "replied", "succeeded", "success", "ready", "connected", "answered", "confirmed"],
  info: ["sent", "running", "in_progress", "queued", "processing", "ringing", "estimated", "accepted", "open"],
  warn: ["pending", "draft", "paused", "scheduled", "retrying", "partial", "no_answer", "busy", "expired", "handoff"],
  bad: ["failed", "cancelled", "canceled", "error", "blocked", "revoked", "rejected", "undeliverable", "dead", "archived"],
};

// A status as a coloured pill that also says it in words ("in progress"):
// badge("delivered"), or badge(code, "shown text").
function badge(status, text) {
  const word = String(status || "");
  const tone = Object.keys(BADGE_TONES).find((t) => BADGE_TONES[t].includes(word.toLowerCase())) || "";
  return h("span", { class: `badge ${tone}`.trim(), text: text === undefined ? word.replace(/_/g, " ") : text });
}

// Columns whose cells are a status: cardCells shows a known status word
// there as a badge, so every page's lists get them.
const STATUS_HEADINGS = ["Status", "State", "Outcome", "Delivery"];

// A cell holding only a status word (optionally followed by a reason in
// brackets, "paused (credits exhausted)") gets it as a badge, the same text.
function badgeCell(td) {
  if (td.children.length || !td.textContent.trim()) return;
  const text = td.textContent.trim();
  const [, word, rest] = text.match(/^([A-Za-z_ ]+?)(\s*\(.*\))?$/) || [];
  const key = word && word.toLowerCase().replace(/ /g, "_");
  if (!key || !Object.values(BADGE_TONES).some((l) => l.includes(key))) return;
  td.replaceChildren(badge(key, word), rest || "");
}

// An empty state: what is missing, in a sentence, and optionally what to
// do about it (a link or a button).
function empty(text, ...actions) {
  return h("div", { class: "empty-state" }, h("p", { text }), actions);
}

// A loading state (route() shows one while a page loads its data).
function loading(text) {
  return h("p", { class: "loading", role: "status", text: text || "Loading…" });
}

// One figure with its label (the overview's totals).
function stat(label, value) {
  return h("div", { class: "stat" }, h("span", { class: "label", text: label }), h("span", { class: "value", text: value }));
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

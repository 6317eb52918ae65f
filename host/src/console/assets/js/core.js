// The Switchboard console: one page, hash routes, no framework.
//
// Every page is built on the public /api/v1 operations (and the console's
// own /console/api routes for the session, API keys and agent testing),
// called with the session cookie the server set at login. State-changing
// requests carry the session's CSRF token. The page never holds an API key
// beyond the one answer that creates it, and never a provider token.
// Text from the server is always set with textContent (never as HTML).
//
// The scripts, in the order index.html loads them: this file (the DOM
// helpers and the pieces every page is made of), api.js (calls to the
// server), forms.js (forms, their errors and their rules as you type),
// phones.js (phone-number inputs), session.js (login, roles, the router),
// then the charts and one file per group of pages, main.js (the routes)
// last.
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

// ---- shared bits of the pages ------------------------------------------------

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

// A secret in the one answer that made it (an API key, a signing secret,
// a setup link): it lives only in this element until the page changes.
// It is shown just above `near` (the form that made it) when given, else
// at the page's top, and scrolled into view with a notice.
function shownOnce(id, title, hint, secret, near) {
  const box = h("section", { class: "card secret", "aria-labelledby": `${id}-title` },
    h("h2", { id: `${id}-title`, text: title }),
    h("p", { text: hint }),
    h("output", { id, class: "key", tabindex: "-1", text: secret }),
    h("button", { type: "button", text: "Copy", onclick: () => navigator.clipboard && navigator.clipboard.writeText(secret).then(() => toast("Copied.")) }));
  const at = near && near.isConnected ? near : null;
  if (at) at.before(box); else main().prepend(box);
  box.scrollIntoView({ block: "center" });
  box.querySelector("output").focus({ preventScroll: true });
  toast(`${title}: shown once, here.`);
}

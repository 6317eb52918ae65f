// The session and the router: who is logged in (and what they may change),
// logging in and setting a password, the frame around the page, and the
// hash routes (main.js lists them) drawn as the address changes.
"use strict";

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

// The session's business, and whether its scopes allow a change.
function biz() { return state.me.businessId; }
function canWrite(scope) { return state.me.scopes.includes(scope); }

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

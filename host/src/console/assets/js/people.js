// The console's overview, API keys and contacts pages (core.js has the helpers they use).
"use strict";

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

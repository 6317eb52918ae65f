// The console's API keys and contacts pages (core.js has the helpers they
// use; the overview is overview.js).
"use strict";

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
  if (owner) nodes.push(createKeyForm(data.scopes), await usersSection());
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

// ---- rules from the OpenAPI document ----------------------------------------------------

// The served document (read once): every form checks its fields as you
// type with the rules of the operation's schema, said in words.
let apiDocument = null;
function openapiDocument() {
  if (!apiDocument) {
    apiDocument = fetch("/api/v1/openapi.json", { credentials: "same-origin" }).then((r) => r.json())
      .catch((err) => { apiDocument = null; throw err; });
  }
  return apiDocument;
}

// Rules in words for the patterns a person types into (the others are in
// core.js's PATTERN_WORDS).
const RULE_WORDS = {
  "^\\+[1-9][0-9]{7,14}$": "must be a number in international form: +, the country code, then the number (8 to 15 digits in all)",
  // The owner routes' rules (agents.js OWNER_RULES).
  "^[A-Za-z0-9._:-]+$": "must be letters, digits or . _ : -",
  "^([01]?[0-9]|2[0-3]):[0-5][0-9]-([01]?[0-9]|2[0-3]):[0-5][0-9]$": "must be two times of day as HH:MM-HH:MM, such as 09:00-20:00",
  "^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$": "must be an address like name@example.com",
};

// The schema of `path` ("voiceSettings.firstGreeting") in the document's
// schema `name`, its $refs followed; null when the document has no such field.
async function ruleOf(name, path) {
  const doc = await openapiDocument();
  const resolve = (s) => {
    for (let i = 0; s && s.$ref && i < 10; i++) s = doc.components.schemas[s.$ref.split("/").pop()];
    return s;
  };
  let s = resolve(doc.components.schemas[name]);
  let required = false;
  for (const part of path.split(".")) {
    // A oneOf (one shape per channel): the first shape that has the field.
    if (s && !s.properties && s.oneOf) s = s.oneOf.map(resolve).find((x) => x && x.properties && x.properties[part]);
    if (!s || !s.properties || !s.properties[part]) return null;
    required = (s.required || []).includes(part);
    s = resolve(s.properties[part]);
  }
  return s ? { ...s, required } : null;
}

// What is wrong with `value` (a field's text) under `rule`, in words; "" if nothing.
function ruleProblem(rule, value) {
  const v = String(value);
  if (!v.trim()) return rule.required ? "is required" : "";
  const types = [].concat(rule.type || []);
  if (types.includes("integer") || types.includes("number")) {
    const n = Number(v);
    if (!Number.isFinite(n) || (types.includes("integer") && !types.includes("number") && !Number.isInteger(n))) return types.includes("number") ? "must be a number" : "must be a whole number";
    if (rule.minimum !== undefined && n < rule.minimum) return `must be at least ${rule.minimum.toLocaleString()}`;
    if (rule.maximum !== undefined && n > rule.maximum) return `must be at most ${rule.maximum.toLocaleString()}`;
    if (rule.multipleOf && n % rule.multipleOf !== 0) return `must be a multiple of ${rule.multipleOf}`;
    return "";
  }
  const chars = [...v].length;
  if (rule.minLength && chars < rule.minLength) return `must be at least ${rule.minLength} characters`;
  if (rule.maxLength && chars > rule.maxLength) return `must be at most ${rule.maxLength.toLocaleString()} characters (now ${chars.toLocaleString()})`;
  const words = v.trim().split(/\s+/).length;
  if (rule["x-maxWords"] && words > rule["x-maxWords"]) return `must be at most ${rule["x-maxWords"].toLocaleString()} words (now ${words.toLocaleString()})`;
  if (rule.enum && !rule.enum.includes(v)) return `must be one of ${rule.enum.join(", ")}`;
  if (rule.pattern) {
    let re = null;
    try { re = new RegExp(rule.pattern, "u"); } catch (_) { /* a pattern JavaScript cannot read: the server checks it */ }
    if (re && !re.test(v)) return RULE_WORDS[rule.pattern] || PATTERN_WORDS[rule.pattern] || "is not in the expected format";
  }
  return "";
}

// One field's message under it (or none): the same marks showError uses.
function markField(input, message) {
  const id = `err-${input.name.replace(/[^A-Za-z0-9_-]/g, "-")}`;
  const old = document.getElementById(id);
  if (old) old.remove();
  if (!message) { input.removeAttribute("aria-invalid"); input.removeAttribute("aria-describedby"); return; }
  input.setAttribute("aria-invalid", "true");
  input.setAttribute("aria-describedby", id);
  input.after(h("span", { class: "field-error", id, text: message }));
}

// Checks `form`'s fields as they are typed, each by the rule of its name
// in the schema `schema` (a function answers the schema name for forms
// whose shape depends on a choice, such as an agent's channel). Answers
// check(): every field checked now, throwing the problems as a
// validation error (showError places them) so nothing invalid is sent.
function liveRules(form, schema, labels) {
  const schemaName = () => (typeof schema === "function" ? schema() : schema);
  const problem = async (input) => {
    const rule = await ruleOf(schemaName(), input.name).catch(() => null);
    const message = rule ? ruleProblem(rule, input.value) : "";
    return message ? `${(labels && labels[input.name]) || input.name} ${message}` : "";
  };
  const fields = () => [...form.querySelectorAll("input[name], textarea[name]")].filter((i) => !["checkbox", "radio", "file", "hidden"].includes(i.type));
  for (const input of fields()) {
    input.addEventListener("input", async () => markField(input, await problem(input)));
  }
  return async () => {
    const details = [];
    for (const input of fields()) {
      if (input.disabled || !input.getClientRects().length) continue;
      const message = await problem(input);
      if (message) details.push({ field: input.name, message });
    }
    if (details.length) throw new ApiError(400, { message: "Check the fields marked below.", details });
  };
}

// ---- who may log in (owners) -------------------------------------------------------------

// The business's console users: invite one (a setup link shown once), set
// a role, remove one (the owner routes of host/src/console/team.rs).
async function usersSection() {
  const data = await api("GET", "/console/api/users");
  const items = data.users.map((u) => {
    const gone = !!u.disabledAt;
    const standing = gone ? "removed" : u.passwordSet ? "active" : "invited";
    const form = h("form", { class: "inline", novalidate: true, "aria-label": `Role of ${u.email}` },
      h("p", { class: "form-error", role: "alert" }),
      h("strong", { text: u.email }), " ", badge(standing), " ",
      gone ? null : [
        h("label", { for: `role-${u.userId}`, text: "Role" }),
        h("select", { id: `role-${u.userId}`, name: "role" }, ["owner", "viewer"].map((r) => h("option", { value: r, text: r, selected: r === u.role }))),
        h("button", { type: "submit", class: "secondary", text: "Save role", "aria-label": `Save the role of ${u.email}` }),
        h("button", { type: "button", class: "danger", text: "Remove", "aria-label": `Remove ${u.email}`, onclick: once(async () => {
          if (!confirm(`Remove ${u.email}? They can no longer log in.`)) return;
          await api("DELETE", `/console/api/users/${u.userId}`); await keysPage(); toast("User removed.");
        }) })]);
    onSubmit(form, async () => {
      await api("PATCH", `/console/api/users/${u.userId}`, { role: form.role.value }); await keysPage(); toast("Role saved. Their next login has it.");
    });
    return h("li", {}, form);
  });
  const invite = h("form", { class: "card", novalidate: true, id: "invite-user" },
    h("h3", { text: "Invite someone" }),
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "inv-email", text: "Email" }),
    h("input", { id: "inv-email", name: "email", type: "email", autocomplete: "off" }),
    h("label", { for: "inv-role", text: "Role" }),
    h("select", { id: "inv-role", name: "role" }, h("option", { value: "viewer", text: "viewer (reads only)" }), h("option", { value: "owner", text: "owner (everything)" })),
    h("button", { type: "submit", text: "Invite" }));
  const check = ownerRules(invite, { email: "The email" });
  onSubmit(invite, async () => {
    check();
    const r = await api("POST", "/console/api/users", { email: invite.email.value, role: invite.role.value });
    await keysPage();
    shownOnce("invite-link", `An invitation for ${r.email}`, "Send them this link: it sets their password once, within 24 hours, and is not shown again.", location.origin + r.setupLink);
  });
  return h("section", { class: "card", "aria-labelledby": "users-title" },
    h("h2", { id: "users-title", text: "People who can log in" }),
    h("ul", { class: "plain", id: "users" }, items),
    invite);
}

// ---- contacts ---------------------------------------------------------------------------

async function contactsPage() {
  const write = canWrite("contacts:write");
  const list = h("div", { id: "contact-list" });
  const cats = await allCategories();
  const search = h("form", { class: "inline", role: "search" },
    h("label", { for: "search", text: "Search by name or mobile" }),
    h("input", { id: "search", name: "search", type: "search", maxlength: 100 }),
    h("label", { for: "search-category", text: "Category" }),
    h("select", { id: "search-category", name: "categoryId" }, h("option", { value: "", text: "any" }),
      cats.map((c) => h("option", { value: c.id, text: c.name }))),
    h("button", { type: "submit", text: "Search" }));
  const find = () => loadContacts(list, search.search.value.trim(), search.categoryId.value);
  onSubmit(search, find);
  const nodes = [h("h1", { text: "Contacts" }), search, list];
  if (write) nodes.push(bulkForm(list, cats, find), await newContactForm(cats, find), categoriesSection(cats), await importForm());
  else nodes.push(categoriesSection(cats));
  show(...nodes);
  await find();
}

// What the list operation's `search` takes: a mobile number or its digits;
// anything else is looked for in the names (its `name` parameter).
const MOBILE_SEARCH = /^[ .()-]*(?:\+?[ .()-]*[0-9][0-9 .()-]*)?$/;

function loadContacts(list, text, categoryId) {
  const write = canWrite("contacts:write");
  const row = (c) => h("tr", {},
    write ? h("td", {}, h("input", { type: "checkbox", name: "selected", value: c.id, "aria-label": `Select ${c.name || c.mobile}` })) : null,
    h("td", {}, h("a", { href: `#/contacts/${c.id}`, text: c.name || c.mobile })),
    h("td", { text: c.mobile }),
    h("td", { text: c.categories.map((x) => x.name).join(", ") }),
    h("td", {}, c.communicationBlocked ? badge("blocked") : null));
  const headers = [...(write ? [""] : []), "Name", "Mobile", "Categories", "Blocked"];
  const byMobile = !text || MOBILE_SEARCH.test(text);
  const load = (cursor) => api("GET", "/api/v1/contacts?" + q({ businessId: biz(), search: byMobile ? text : "", name: byMobile ? "" : text, categoryId, cursor, limit: 50 }))
    .then((page) => ({ nextCursor: page.nextCursor, rows: page.contacts.map(row) }));
  const none = !text ? "No contacts." : byMobile ? "No contact's mobile matches." : "No contact's name matches.";
  return paged(list, headers, none, load, null);
}

// Every category (pages of 200).
async function allCategories() {
  const out = [];
  let cursor = null;
  do {
    const page = await api("GET", "/api/v1/contacts/categories?" + q({ businessId: biz(), cursor, limit: 200 }));
    out.push(...page.categories);
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

// Checkboxes of categories named `name` (the chosen ones checked).
function categoryChecks(name, cats, chosen) {
  return cats.length ? cats.map((c) => h("label", { class: "check" },
    h("input", { type: "checkbox", name, value: c.id, checked: chosen.has(c.id) }), " ", c.name))
    : h("p", { class: "muted", text: "No categories yet: create one below." });
}

function checked(form, name) {
  return [...form.querySelectorAll(`input[name="${name}"]:checked`)].map((i) => i.value);
}

// Custom fields typed one per line as key=value (a blank value removes
// the key on an edit).
function parseFields(text) {
  const fields = {};
  const details = [];
  String(text || "").split("\n").map((l) => l.trim()).filter(Boolean).forEach((line, n) => {
    const at = line.indexOf("=");
    const key = (at < 0 ? line : line.slice(0, at)).trim();
    if (!/^[a-zA-Z][a-zA-Z0-9_]{0,63}$/.test(key)) details.push({ field: "fields", message: `Line ${n + 1}: a field name ${PATTERN_WORDS["^[a-zA-Z][a-zA-Z0-9_]{0,63}$"]}` });
    fields[key] = at < 0 ? "" : line.slice(at + 1).trim();
  });
  if (details.length) throw new ApiError(400, { message: "Check the fields.", details });
  return fields;
}

function fieldsText(fields) {
  return Object.entries(fields || {}).map(([k, v]) => `${k}=${v}`).join("\n");
}

async function newContactForm(cats, refresh) {
  const form = h("form", { class: "card", novalidate: true, id: "new-contact" },
    h("h2", { text: "New contact" }),
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "nc-name", text: "Name" }),
    h("input", { id: "nc-name", name: "name", required: true }),
    h("label", { for: "nc-mobile", text: "Mobile" }),
    h("input", { id: "nc-mobile", name: "mobile", type: "tel", placeholder: "+14155550100", required: true }),
    h("fieldset", {}, h("legend", { text: "Categories (at least one)" }), categoryChecks("categoryIds", cats, new Set())),
    h("label", { for: "nc-fields", text: "Fields, one per line as name=value" }),
    h("textarea", { id: "nc-fields", name: "fields", rows: 3, placeholder: "city=Lisbon" }),
    h("label", { class: "check" }, h("input", { type: "checkbox", name: "communicationBlocked" }), " Blocked (the business never contacts them)"),
    h("button", { type: "submit", text: "Create contact" }));
  const check = liveRules(form, "ContactCreate", { name: "Name", mobile: "Mobile" });
  onSubmit(form, async (sub) => {
    await check();
    const categoryIds = checked(form, "categoryIds");
    if (!categoryIds.length) throw new ApiError(400, { message: "Choose at least one category.", details: [{ field: "categoryIds", message: "Choose at least one category." }] });
    const body = { businessId: biz(), name: form.name.value, mobile: form.mobile.value.trim(), categoryIds,
      fields: parseFields(form.fields.value), communicationBlocked: form.communicationBlocked.checked };
    const r = await api("POST", "/api/v1/contacts", body, sub);
    toast(`Contact ${r.contact.name} created.`);
    form.reset();
    await refresh();
  });
  return form;
}

// Actions on the contacts ticked in the list: add to a category, block,
// unblock, delete. One request per contact for the changes (the API
// updates one contact at a time), one for the delete.
function bulkForm(list, cats, refresh) {
  const form = h("form", { class: "card", novalidate: true, id: "bulk" },
    h("h2", { text: "Bulk actions on the ticked rows" }),
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "bulk-action", text: "Action" }),
    h("select", { id: "bulk-action", name: "action" },
      h("option", { value: "category", text: "Add to the category" }),
      h("option", { value: "block", text: "Block" }),
      h("option", { value: "unblock", text: "Unblock" }),
      h("option", { value: "delete", text: "Delete" })),
    h("label", { for: "bulk-category", text: "Category (to add to)" }),
    h("select", { id: "bulk-category", name: "categoryId" }, cats.map((c) => h("option", { value: c.id, text: c.name }))),
    h("button", { type: "submit", text: "Apply" }));
  onSubmit(form, async (sub) => {
    const ids = [...list.querySelectorAll("input[name=selected]:checked")].map((i) => i.value);
    if (!ids.length) throw new ApiError(400, { message: "Tick at least one contact in the list." });
    const action = form.action.value;
    if (action === "delete") {
      if (!confirm(`Delete ${ids.length} contact${ids.length === 1 ? "" : "s"} and their timelines?`)) return;
      const r = await api("DELETE", "/api/v1/contacts", { businessId: biz(), contactIds: ids }, sub);
      toast(`${r.deleted} deleted.`);
    } else {
      for (const id of ids) {
        const body = { businessId: biz() };
        if (action === "category") {
          const c = (await api("GET", `/api/v1/contacts/${id}?` + q({ businessId: biz() }))).contact;
          body.categoryIds = [...new Set([...c.categories.map((x) => x.id), form.categoryId.value])];
        } else body.communicationBlocked = action === "block";
        await api("PATCH", `/api/v1/contacts/${id}`, body, sub);
      }
      toast(`${ids.length} updated.`);
    }
    await refresh();
  });
  return form;
}

// The categories with their counts; an owner creates and deletes them
// (a delete confirms the exact name, as the API asks).
function categoriesSection(cats) {
  const write = canWrite("contacts:write");
  const rows = cats.map((c) => h("tr", {},
    h("td", {}, h("a", { href: "#/contacts", text: c.name, onclick: (e) => {
      e.preventDefault();
      const s = document.getElementById("search-category");
      s.value = c.id;
      s.form.requestSubmit();
    } })),
    h("td", { text: String(c.contactCount) }),
    h("td", {}, write ? h("button", { type: "button", class: "danger", text: "Delete", "aria-label": `Delete category ${c.name}`, onclick: once(async (sub) => {
      const typed = prompt(`Deleting the category keeps its contacts. Type its name, ${c.name}, to delete it.`);
      if (typed === null) return;
      await api("DELETE", "/api/v1/contacts/categories", { businessId: biz(), categoryId: c.id, confirmName: typed }, sub);
      await contactsPage(); toast("Category deleted.");
    }) }) : null)));
  const section = h("section", { class: "card", "aria-labelledby": "categories-title" },
    h("h2", { id: "categories-title", text: "Categories" }),
    table(["Category", "Contacts", ""], rows, "No categories yet."));
  if (write) {
    const form = h("form", { class: "inline", novalidate: true, "aria-label": "Add a category" },
      h("p", { class: "form-error", role: "alert" }),
      h("label", { for: "cat-name", text: "New category" }),
      h("input", { id: "cat-name", name: "name" }),
      h("button", { type: "submit", text: "Add category" }));
    const check = liveRules(form, "CategoryCreate", { name: "The name" });
    onSubmit(form, async (sub) => {
      await check();
      const r = await api("POST", "/api/v1/contacts/categories", { businessId: biz(), name: form.name.value }, sub);
      await contactsPage();
      toast(r.created ? "Category created." : "A category of that name already exists.");
    });
    section.append(form);
  }
  return section;
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
      loadContacts(document.getElementById("contact-list"), "", "");
    } catch (err) { bar.hidden = true; throw err; }
  });
  return form;
}

async function contactPage(id) {
  const here = location.hash;
  const c = (await api("GET", `/api/v1/contacts/${id}?` + q({ businessId: biz() }))).contact;
  const fields = Object.entries(c.fields || {});
  const timeline = h("div", { id: "timeline" });
  await drawTimeline(id, timeline);
  const write = canWrite("contacts:write");
  const extra = [];
  if (write) extra.push(await editContactForm(c));
  if (canWrite("voice:write") && !c.communicationBlocked) extra.push(await callForm({ contact: c }));
  if (write) {
    extra.push(h("p", {}, h("button", { type: "button", class: "danger", text: "Delete this contact", onclick: once(async (sub) => {
      if (!confirm(`Delete ${c.name || c.mobile} and their timeline?`)) return;
      await api("DELETE", "/api/v1/contacts", { businessId: biz(), contactIds: [id] }, sub);
      toast("Contact deleted."); location.hash = "#/contacts";
    }) })));
  }
  if (location.hash !== here) return;
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
    canWrite("communications:write") && !c.communicationBlocked ? await sendForm(c.mobile, () => drawTimeline(id, timeline)) : null,
    ...extra);
}

// Edit a contact: what changed is sent (an update must change something);
// a field left out of the list is removed.
async function editContactForm(c) {
  const cats = await allCategories();
  const form = h("form", { class: "card", novalidate: true, id: "edit-contact" },
    h("h2", { text: "Edit" }),
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "ec-name", text: "Name" }),
    h("input", { id: "ec-name", name: "name", value: c.name || "" }),
    h("label", { for: "ec-mobile", text: "Mobile" }),
    h("input", { id: "ec-mobile", name: "mobile", type: "tel", value: c.mobile }),
    h("fieldset", {}, h("legend", { text: "Categories (at least one)" }), categoryChecks("categoryIds", cats, new Set(c.categories.map((x) => x.id)))),
    h("label", { for: "ec-fields", text: "Fields, one per line as name=value" }),
    h("textarea", { id: "ec-fields", name: "fields", rows: 3, text: fieldsText(c.fields) }),
    h("label", { class: "check" }, h("input", { type: "checkbox", name: "communicationBlocked", checked: c.communicationBlocked }), " Blocked (the business never contacts them)"),
    h("button", { type: "submit", text: "Save contact" }));
  const check = liveRules(form, "ContactUpdate", { name: "Name", mobile: "Mobile" });
  onSubmit(form, async (sub) => {
    await check();
    const body = { businessId: biz() };
    if (form.name.value !== (c.name || "")) body.name = form.name.value;
    if (form.mobile.value.trim() !== c.mobile) body.mobile = form.mobile.value.trim();
    const categoryIds = checked(form, "categoryIds");
    if (categoryIds.join() !== c.categories.map((x) => x.id).join()) body.categoryIds = categoryIds;
    const typed = parseFields(form.fields.value);
    const fields = {};
    for (const [k, v] of Object.entries(typed)) if (String((c.fields || {})[k]) !== v) fields[k] = v === "" ? null : v;
    for (const k of Object.keys(c.fields || {})) if (!(k in typed)) fields[k] = null;
    if (Object.keys(fields).length) body.fields = fields;
    if (form.communicationBlocked.checked !== c.communicationBlocked) body.communicationBlocked = form.communicationBlocked.checked;
    if (Object.keys(body).length === 1) { toast("Nothing changed."); return; }
    await api("PATCH", `/api/v1/contacts/${c.id}`, body, sub);
    await contactPage(c.id);
    toast("Contact saved.");
  });
  return form;
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

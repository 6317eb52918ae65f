// The console's API keys and contacts pages (core.js has the helpers they
// use; the overview is overview.js).
"use strict";

// ---- API keys -------------------------------------------------------------------------

async function keysPage() {
  // The page's own address (not the one shown when called: a redraw after
  // a save the reader has left must draw nothing).
  const here = "#/keys";
  const data = await api("GET", "/console/api/keys");
  const owner = state.me.role === "owner";
  const rows = data.keys.map((k) => h("tr", {},
    h("td", {}, h("code", { class: "key-display", text: k.display })),
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
  if (!message) {
    input.removeAttribute("aria-invalid");
    // A field's hint (data-hint) stays its description.
    if (input.dataset.hint) input.setAttribute("aria-describedby", input.dataset.hint); else input.removeAttribute("aria-describedby");
    // "Check the fields marked below" goes once no field is marked.
    const form = input.form;
    const box = form && form.querySelector(".form-error");
    if (box && !form.querySelector("[aria-invalid]") && /^Check the field/.test(box.textContent)) box.replaceChildren();
    return;
  }
  input.setAttribute("aria-invalid", "true");
  input.setAttribute("aria-describedby", [id, input.dataset.hint].filter(Boolean).join(" "));
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
    // A field the form always sends is required, on create and edit alike.
    const message = rule ? ruleProblem({ ...rule, required: rule.required || input.required }, input.dataset.phone !== undefined ? phoneE164(input.value) : input.value) : "";
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
  const roles = data.roles || ["owner", "viewer"];
  // One row each, the same columns in every row: who, standing, role, removal.
  const items = data.users.map((u) => {
    const gone = !!u.disabledAt;
    const standing = gone ? "removed" : u.passwordSet ? "active" : "invited";
    const form = gone ? null : h("form", { class: "inline role-form", novalidate: true, "aria-label": `Role of ${u.email}` },
      h("p", { class: "form-error", role: "alert" }),
      h("select", { id: `role-${u.userId}`, name: "role", "aria-label": `Role of ${u.email}` }, roles.map((r) => h("option", { value: r, text: r, selected: r === u.role }))),
      h("button", { type: "submit", class: "secondary", text: "Save role", "aria-label": `Save the role of ${u.email}` }));
    if (form) {
      onSubmit(form, async () => {
        await api("PATCH", `/console/api/users/${u.userId}`, { role: form.role.value }); await keysPage(); toast("Role saved. Their next login has it.");
      });
    }
    return h("tr", {},
      h("td", { class: "email", text: u.email }),
      h("td", {}, badge(standing)),
      h("td", {}, form || u.role),
      h("td", {}, gone ? null : h("button", { type: "button", class: "danger", text: "Remove", "aria-label": `Remove ${u.email}`, onclick: once(async () => {
        if (!confirm(`Remove ${u.email}? They can no longer log in.`)) return;
        await api("DELETE", `/console/api/users/${u.userId}`); await keysPage(); toast("User removed.");
      }) })));
  });
  const invite = h("form", { class: "card", novalidate: true, id: "invite-user" },
    h("h3", { text: "Invite someone" }),
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "inv-email", text: "Email" }),
    h("input", { id: "inv-email", name: "email", type: "email", autocomplete: "off" }),
    h("label", { for: "inv-role", text: "Role" }),
    h("select", { id: "inv-role", name: "role" }, [...roles].reverse().map((r) => h("option", { value: r, text: ROLE_WORDS[r] || r }))),
    h("button", { type: "submit", text: "Invite" }));
  const check = ownerRules(invite, { email: "The email" });
  onSubmit(invite, async () => {
    check();
    const r = await api("POST", "/console/api/users", { email: invite.email.value, role: invite.role.value });
    await keysPage();
    // Shown where the invitation was made, in view (not at the page's top).
    shownOnce("invite-link", `An invitation for ${r.email}`, "Send them this link: it sets their password once, within 24 hours, and is not shown again.",
      location.origin + r.setupLink, document.getElementById("invite-user"));
  });
  return h("section", { class: "card", "aria-labelledby": "users-title" },
    h("h2", { id: "users-title", text: "People who can log in" }),
    h("div", { id: "users" }, table(["Email", "Standing", "Role", ""], items, "Nobody yet.")),
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
    h("label", { for: "sort", text: "Sort" }),
    h("select", { id: "sort", name: "sort" }, Object.entries(CONTACT_SORTS).map(([k, [label]]) => h("option", { value: k, text: label }))),
    h("button", { type: "submit", text: "Search" }));
  const find = () => loadContacts(list, search.search.value.trim(), search.categoryId.value, search.sort.value);
  search.sort.addEventListener("change", find);
  onSubmit(search, find);
  const nodes = [h("h1", { text: "Contacts" }), search, list];
  // A change to contacts (a create, a bulk action) shows in the list and
  // in the categories' counts at once.
  const refresh = async () => {
    await find();
    const fresh = await allCategories();
    const old = document.querySelector("section[aria-labelledby=categories-title]");
    if (old) old.replaceWith(categoriesSection(fresh));
  };
  if (write) nodes.push(bulkForm(list, cats, refresh), await newContactForm(cats, refresh), categoriesSection(cats), await importForm());
  else nodes.push(categoriesSection(cats));
  show(...nodes);
  await find();
}

// What the list operation's `search` takes: a mobile number or its digits;
// anything else is looked for in the names (its `name` parameter).
const MOBILE_SEARCH = /^[ .()-]*(?:\+?[ .()-]*[0-9][0-9 .()-]*)?$/;

// How the list may be ordered: the list operation's `sort`, so an order
// spans every page (ties by id, each page resuming after the last one).
const CONTACT_SORTS = {
  oldest: ["Oldest first", "createdAt"],
  newest: ["Newest first", "-createdAt"],
  name: ["Name, A to Z", "name"],
  nameDesc: ["Name, Z to A", "-name"],
  mobile: ["Mobile", "mobile"],
  mobileDesc: ["Mobile, high to low", "-mobile"],
};

// The contacts matching the search, a page at a time in the chosen order.
// The list remembers its filters and how many match (list.matching), so
// "select all" can choose every one of them, not only the page shown.
function loadContacts(list, text, categoryId, sort) {
  const write = canWrite("contacts:write");
  const row = (c) => h("tr", {},
    write ? h("td", {}, h("input", { type: "checkbox", name: "selected", value: c.id, "aria-label": `Select ${c.name || c.mobile}` })) : null,
    h("td", { class: "name" }, h("a", { href: `#/contacts/${c.id}`, text: c.name || c.mobile })),
    h("td", { text: c.mobile }),
    h("td", { text: c.categories.map((x) => x.name).join(", ") }),
    h("td", {}, c.communicationBlocked ? badge("blocked") : null));
  const headers = [...(write ? [""] : []), "Name", "Mobile", "Categories", "Blocked"];
  const byMobile = !text || MOBILE_SEARCH.test(text);
  const filters = { search: byMobile ? text : "", name: byMobile ? "" : text, categoryId };
  const order = (CONTACT_SORTS[sort] || CONTACT_SORTS.oldest)[1];
  const none = !text ? "No contacts." : byMobile ? "No contact's mobile matches." : "No contact's name matches.";
  // The cursors of the pages before this one (to go back).
  const back = [];
  list.everyMatching = false;
  const draw = async (cursor) => {
    let page;
    try {
      page = await api("GET", "/api/v1/contacts?" + q({ businessId: biz(), ...filters, sort: order, includeTotal: true, cursor, limit: 50 }));
    } catch (err) { list.replaceChildren(h("p", { class: "form-error", text: plain({ message: err.message }) })); return; }
    list.matching = { filters, total: page.total };
    const shownFrom = back.length * 50 + 1;
    const summary = page.total ? `${page.total.toLocaleString()} contact${page.total === 1 ? "" : "s"}` +
      (page.total > page.contacts.length ? `, ${shownFrom.toLocaleString()} to ${(shownFrom + page.contacts.length - 1).toLocaleString()} shown` : "") : "";
    const pager = h("p", { class: "pager" },
      back.length ? h("button", { type: "button", class: "secondary", text: "Previous page", onclick: () => draw(back.pop()) }) : null,
      page.nextCursor ? h("button", { type: "button", class: "secondary", text: "Next page", onclick: () => { back.push(cursor); draw(page.nextCursor); } }) : null);
    list.replaceChildren(h("p", { class: "muted", id: "contact-count", text: summary }), h("div", { id: "select-all-bar", class: "select-all", "aria-live": "polite" }),
      table(headers, page.contacts.map(row), none), pager);
    if (write) selectAll(list);
  };
  return draw(null);
}

// A "select all" box above the list (in view on a phone too, where the
// table's headings are hidden) ticks every row shown; when more contacts
// match than are shown, it offers every one of them (list.everyMatching),
// which the bulk actions then act on through the API's `matching` (the
// filters and the count shown), whatever page is shown.
function selectAll(list) {
  const bar = list.querySelector("#select-all-bar");
  const boxes = () => [...list.querySelectorAll("input[name=selected]")];
  if (!bar || !boxes().length) return;
  // Every contact matching stays chosen from page to page.
  if (list.everyMatching) boxes().forEach((b) => { b.checked = true; });
  const all = h("input", { type: "checkbox", id: "select-all", "aria-label": "Select every contact shown" });
  const offer = h("span", { class: "select-offer" });
  const total = (list.matching && list.matching.total) || 0;
  const sync = () => {
    const n = boxes().filter((b) => b.checked).length;
    if (n < boxes().length) list.everyMatching = false;
    all.checked = n > 0 && n === boxes().length;
    all.indeterminate = n > 0 && n < boxes().length;
    const out = document.getElementById("selected-count");
    if (out) out.textContent = list.everyMatching ? `All ${total.toLocaleString()} contacts matching are selected, on every page.` : n ? `${n} ticked` : "";
    if (list.everyMatching) {
      offer.replaceChildren(` All ${total.toLocaleString()} contacts matching are selected. `,
        h("button", { type: "button", class: "secondary", text: "Clear the selection", onclick: () => { list.everyMatching = false; boxes().forEach((b) => { b.checked = false; }); sync(); } }));
    } else if (all.checked && total > n) {
      offer.replaceChildren(` The ${n} shown are ticked. `,
        h("button", { type: "button", class: "secondary", text: `Select all ${total.toLocaleString()} matching`, onclick: () => { list.everyMatching = true; sync(); } }));
    } else offer.replaceChildren();
  };
  all.addEventListener("change", () => { boxes().forEach((b) => { b.checked = all.checked; }); sync(); });
  list.onchange = (e) => { if (e.target.name === "selected") sync(); };
  bar.replaceChildren(h("label", { class: "check" }, all, " Select all shown"), offer);
  sync();
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

// The business's custom contact fields (the built-in Contacts data
// source's fields, beside mobile and name).
async function contactFieldKeys() {
  const page = await api("GET", "/api/v1/data-sources?" + q({ businessId: biz(), limit: 200 })).catch(() => null);
  const contacts = page && page.dataSources.find((d) => d.builtIn);
  return contacts ? contacts.fields.map((f) => f.key).filter((k) => k !== "mobile" && k !== "name") : [];
}

// A contact's custom fields as fields: one labelled input per field the
// business uses (and per field this contact has), and "Add a field" for a
// new one (its name, then its value). A blank value removes the field.
function fieldsEditor(prefix, keys, values) {
  const box = h("fieldset", { class: "custom-fields", id: `${prefix}-fields` }, h("legend", { text: "Fields" }));
  const known = [...new Set([...keys, ...Object.keys(values || {})])];
  const grid = h("div", { class: "field-grid" });
  const addKnown = (k) => {
    const id = `${prefix}-f-${k}`;
    grid.append(h("label", { for: id, text: k.replace(/_/g, " ") }),
      h("input", { id, name: `fields.${k}`, "data-field": k, maxlength: 1000, value: values && values[k] !== undefined && values[k] !== null ? String(values[k]) : "" }));
  };
  known.forEach(addKnown);
  let n = 0;
  const addNew = () => {
    n += 1;
    const row = h("div", { class: "new-field" },
      h("label", { for: `${prefix}-nf-${n}-key`, text: "New field's name" }),
      h("input", { id: `${prefix}-nf-${n}-key`, name: `newField${n}`, "data-new-key": "", maxlength: 64, placeholder: "city" }),
      h("label", { for: `${prefix}-nf-${n}-value`, text: "Its value" }),
      h("input", { id: `${prefix}-nf-${n}-value`, "data-new-value": "", maxlength: 1000 }));
    box.insertBefore(row, more);
    row.querySelector("input").focus();
  };
  const more = h("button", { type: "button", class: "secondary", text: "Add a field", onclick: addNew });
  add(box, known.length ? grid : h("p", { class: "muted", text: "No fields yet." }), more);
  if (!known.length) box.insertBefore(grid, more);
  return box;
}

// What a fields editor holds: {key: value} (blank values as ""), the new
// fields' names checked.
function readFields(box) {
  const fields = {};
  const details = [];
  box.querySelectorAll("input[data-field]").forEach((i) => { fields[i.dataset.field] = i.value.trim(); });
  box.querySelectorAll(".new-field").forEach((row) => {
    const keyInput = row.querySelector("[data-new-key]");
    const key = keyInput.value.trim();
    const value = row.querySelector("[data-new-value]").value.trim();
    if (!key && !value) return;
    if (!/^[a-zA-Z][a-zA-Z0-9_]{0,63}$/.test(key)) details.push({ field: keyInput.name, message: `A field's name ${PATTERN_WORDS["^[a-zA-Z][a-zA-Z0-9_]{0,63}$"]}` });
    else fields[key] = value;
  });
  if (details.length) throw new ApiError(400, { message: "Check the fields marked below.", details });
  return fields;
}

// ---- phone numbers --------------------------------------------------------------------

// The country calling code a number without "+" is taken in: the
// business's default phone country's (core.js), else the browser's
// region's, else +1.
const CALLING_CODES = { US: "1", CA: "1", GB: "44", IE: "353", FR: "33", DE: "49", ES: "34", PT: "351", IT: "39", NL: "31", BE: "32",
  CH: "41", AT: "43", SE: "46", NO: "47", DK: "45", FI: "358", PL: "48", BR: "55", MX: "52", AR: "54", IN: "91", AU: "61", NZ: "64", ZA: "27", JP: "81", SG: "65" };
function defaultCallingCode() {
  if (businessCallingCode()) return businessCallingCode();
  const region = (navigator.language || "").split("-")[1];
  return CALLING_CODES[(region || "").toUpperCase()] || "1";
}

// A number as typed ("+1 415 555 0199", "(415) 555-0199", "0044 20…") in
// E.164: spaces, dots, dashes and brackets go; 00 is +; a number without
// a country code takes the default one (a leading trunk 0 dropped).
function phoneE164(text, cc) {
  const t = String(text || "").trim();
  if (!t) return "";
  if (!/^[+0-9 .()\-]+$/.test(t)) return t;
  const digits = t.replace(/[^0-9]/g, "");
  if (t.startsWith("+")) return "+" + digits;
  if (digits.startsWith("00")) return "+" + digits.slice(2);
  const code = cc || defaultCallingCode();
  return "+" + code + (code !== "1" && digits.startsWith("0") ? digits.slice(1) : digits);
}

// A phone input: any usual way of writing a number, stored as E.164 (shown
// as such once the field is left), with the default country said.
function phoneInput(attrs) {
  const input = h("input", { type: "tel", autocomplete: "tel", "data-phone": "", placeholder: "+1 415 555 0199", ...attrs });
  input.addEventListener("blur", () => { if (input.value.trim()) input.value = phoneE164(input.value); });
  return input;
}
function phoneHint(id) {
  return h("p", { class: "hint", id, text: `Any way of writing it; without a +, the country code is +${defaultCallingCode()}.` });
}

async function newContactForm(cats, refresh) {
  const keys = await contactFieldKeys();
  const fieldsBox = fieldsEditor("nc", keys, {});
  const form = h("form", { class: "card", novalidate: true, id: "new-contact" },
    h("h2", { text: "New contact" }),
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "nc-name", text: "Name" }),
    h("input", { id: "nc-name", name: "name", required: true }),
    h("label", { for: "nc-mobile", text: "Mobile" }),
    phoneInput({ id: "nc-mobile", name: "mobile", required: true, "aria-describedby": "nc-mobile-hint", "data-hint": "nc-mobile-hint" }),
    phoneHint("nc-mobile-hint"),
    h("fieldset", {}, h("legend", { text: "Categories (at least one)" }), categoryChecks("categoryIds", cats, new Set())),
    fieldsBox,
    h("label", { class: "check" }, h("input", { type: "checkbox", name: "communicationBlocked" }), " Blocked (the business never contacts them)"),
    h("button", { type: "submit", text: "Create contact" }));
  const check = liveRules(form, "ContactCreate", CONTACT_LABELS);
  onSubmit(form, async (sub) => {
    await check();
    const categoryIds = checked(form, "categoryIds");
    if (!categoryIds.length) throw new ApiError(400, { message: "Choose at least one category.", details: [{ field: "categoryIds", message: "Choose at least one category." }] });
    const fields = Object.fromEntries(Object.entries(readFields(fieldsBox)).filter(([, v]) => v !== ""));
    const body = { businessId: biz(), name: form.name.value.trim(), mobile: phoneE164(form.mobile.value), categoryIds,
      fields, communicationBlocked: form.communicationBlocked.checked };
    const r = await api("POST", "/api/v1/contacts", body, sub);
    form.reset();
    fieldsBox.querySelectorAll(".new-field").forEach((row) => row.remove());
    // Said once the list and the categories show it.
    await refresh();
    toast(`Contact ${r.contact.name} created.`);
  });
  return form;
}

// One set of words for the contact forms (create and edit say the same).
const CONTACT_LABELS = { name: "Name", mobile: "Mobile" };

// Actions on the contacts selected in the list: add to a category, block,
// unblock, delete. The ticked rows go by id; "all matching" goes as the
// list's filters with the count shown (`matching`), and the API refuses it,
// changing nothing, if another number matches by then (contacts_changed).
// One request either way (updateContacts, deleteContacts).
function bulkForm(list, cats, refresh) {
  const form = h("form", { class: "card", novalidate: true, id: "bulk" },
    h("h2", { text: "Bulk actions on the selected contacts" }),
    h("p", { class: "muted", id: "selected-count", "aria-live": "polite" }),
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
    const every = list.everyMatching && list.matching;
    const ids = [...list.querySelectorAll("input[name=selected]:checked")].map((i) => i.value);
    if (!every && !ids.length) throw new ApiError(400, { message: "Tick at least one contact in the list." });
    const count = every ? list.matching.total : ids.length;
    const who = every ? { matching: { ...Object.fromEntries(Object.entries(list.matching.filters).filter(([, v]) => v)), count } } : { contactIds: ids };
    const action = form.action.value;
    const changed = async (err) => {
      if (!(err instanceof ApiError) || err.error.code !== "contacts_changed") throw err;
      await refresh();
      throw new ApiError(409, { message: `The contacts matching changed since the list was shown (${list.matching ? list.matching.total.toLocaleString() : "some"} match now): nothing was changed. Check the list and select them again.` });
    };
    if (action === "delete") {
      const what = every ? `all ${count.toLocaleString()} contacts matching` : `${count} contact${count === 1 ? "" : "s"}`;
      if (!confirm(`Delete ${what} and their timelines?`)) return;
      const r = await api("DELETE", "/api/v1/contacts", { businessId: biz(), ...who }, sub).catch(changed);
      await refresh();
      toast(`${r.deleted} deleted.`);
      return;
    }
    const body = { businessId: biz(), ...who };
    if (action === "category") body.addCategoryIds = [form.categoryId.value];
    else body.communicationBlocked = action === "block";
    const r = await api("PATCH", "/api/v1/contacts", body, sub).catch(changed);
    await refresh();
    toast(`${r.matched} updated.`);
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
  const here = `#/contacts/${id}`;
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
    canWrite("communications:write") && !c.communicationBlocked ? await sendForm(c.mobile, () => drawTimeline(id, timeline), await contactTakeover(c)) : null,
    ...extra);
}

// A reply from the contact's page takes the conversation over from the AI
// agent, as the inbox's reply does (inbox.js composer): before the send,
// the conversation of the chosen number with this contact, if it is the
// agent's, is taken over (updateConversation, humanHandoffActive), and a
// first message, which starts the conversation, takes it over once sent.
// The agent then stays silent there until someone hands it back in the
// Inbox. The notice says so before sending.
async function contactTakeover(c) {
  const notice = h("p", { class: "notice takeover", role: "note", id: "takeover-notice", hidden: true });
  const mine = async () => {
    const page = await api("GET", "/api/v1/conversations?" + q({ businessId: biz(), channel: "chatapp", q: c.mobile, limit: 200 })).catch(() => ({ conversations: [] }));
    return page.conversations.filter((x) => x.contact && x.contact.id === c.id);
  };
  let known = await mine();
  const of = (number) => known.find((x) => x.phoneNumberId === number);
  const takeOver = async (x, sub) => {
    if (!x || x.status !== "agent") return false;
    await api("PATCH", `/api/v1/conversations/${x.id}`, { businessId: biz(), humanHandoffActive: true }, sub);
    return true;
  };
  const t = {
    notice,
    show(number) {
      const x = of(number);
      notice.hidden = !(x && x.status === "agent");
      notice.textContent = x && x.status === "agent"
        ? `Sending takes this conversation over from ${x.agent ? x.agent.name : "the agent"} (the AI agent): it stops answering ${c.name || c.mobile} here until you hand it back in the Inbox.` : "";
    },
    async before(number, sub) {
      if (await takeOver(of(number), sub)) toast("Taken over: the agent stays silent in this conversation until you hand it back.");
    },
    async after(number, sub) {
      const started = !of(number);
      known = await mine();
      if (started && await takeOver(of(number), sub)) toast("Taken over: the agent stays silent in this conversation until you hand it back.");
      t.show(number);
    },
  };
  return t;
}

// Edit a contact: what changed is sent (an update must change something);
// a field left out of the list is removed.
async function editContactForm(c) {
  const [cats, keys] = await Promise.all([allCategories(), contactFieldKeys()]);
  const fieldsBox = fieldsEditor("ec", keys, c.fields || {});
  const form = h("form", { class: "card", novalidate: true, id: "edit-contact" },
    h("h2", { text: "Edit" }),
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "ec-name", text: "Name" }),
    h("input", { id: "ec-name", name: "name", value: c.name || "", required: true }),
    h("label", { for: "ec-mobile", text: "Mobile" }),
    phoneInput({ id: "ec-mobile", name: "mobile", value: c.mobile, required: true, "aria-describedby": "ec-mobile-hint", "data-hint": "ec-mobile-hint" }),
    phoneHint("ec-mobile-hint"),
    h("fieldset", {}, h("legend", { text: "Categories (at least one)" }), categoryChecks("categoryIds", cats, new Set(c.categories.map((x) => x.id)))),
    fieldsBox,
    h("label", { class: "check" }, h("input", { type: "checkbox", name: "communicationBlocked", checked: c.communicationBlocked }), " Blocked (the business never contacts them)"),
    h("button", { type: "submit", text: "Save contact" }));
  const check = liveRules(form, "ContactUpdate", CONTACT_LABELS);
  onSubmit(form, async (sub) => {
    await check();
    const body = { businessId: biz() };
    if (form.name.value.trim() !== (c.name || "")) body.name = form.name.value.trim();
    if (phoneE164(form.mobile.value) !== c.mobile) body.mobile = phoneE164(form.mobile.value);
    const categoryIds = checked(form, "categoryIds");
    if (categoryIds.join() !== c.categories.map((x) => x.id).join()) body.categoryIds = categoryIds;
    const typed = readFields(fieldsBox);
    const fields = {};
    for (const [k, v] of Object.entries(typed)) {
      const was = (c.fields || {})[k];
      if (v === "" && (was === undefined || was === null || was === "")) continue;
      if (String(was === undefined || was === null ? "" : was) !== v) fields[k] = v === "" ? null : v;
    }
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
      x.kind === "call" ? callEntry(x.summary || {}) : h("p", { text: summaryText(x.summary) })))) : h("p", { class: "muted", text: "Nothing yet." }));
}

// Who ended a call, in words.
const ENDED_WORDS = { customer: "the contact hung up", agent: "the agent ended it", operator: "ended from the console", system: "ended by the system",
  provider: "ended by the phone network", unknown: "ended" };

// A call on a timeline: its outcome, its length, who ended it, and a link to it.
function callEntry(s) {
  const outcome = String(s.status || "call").replace(/_/g, " ");
  const parts = [s.durationSeconds ? seconds(s.durationSeconds) : null, ENDED_WORDS[s.endedBy] || null, s.agentName ? `with ${s.agentName}` : null].filter(Boolean);
  return h("p", { class: "call-entry" }, badge(s.status || "", outcome), parts.length ? ` ${parts.join(" · ")} ` : " ",
    s.callId ? h("a", { href: `#/calls/${s.callId}`, text: s.transcriptAvailable ? "Open the call and its transcript" : "Open the call" }) : null);
}

function summaryText(s) {
  if (!s) return "";
  if (typeof s.text === "string") return s.text;
  return Object.entries(s).filter(([, v]) => v !== null && typeof v !== "object").map(([k, v]) => `${k}: ${v}`).join(", ");
}

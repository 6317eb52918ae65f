// The console's contacts list: search, sort and select, bulk actions,
// categories, a CSV import and a new contact (the contact forms' fields are
// here; one contact's page is contact.js).
"use strict";

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

// Forms: a submit handler that runs once at a time, the server's errors
// placed next to the fields they name and said in words, and every field
// checked as you type by the rules of the OpenAPI document (or, for the
// owner routes, OWNER_RULES).
"use strict";

// ---- submitting ----------------------------------------------------------------

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

// ---- errors, in words ------------------------------------------------------------

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
// PATTERN_WORDS above).
const RULE_WORDS = {
  "^\\+[1-9][0-9]{7,14}$": "must be a number in international form: +, the country code, then the number (8 to 15 digits in all)",
  // The owner routes' rules (OWNER_RULES below).
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

// ---- the owner routes' rules ---------------------------------------------------------

// The rules of an owner route's fields (these routes are not operations,
// so their rules are said here, in words, as the server checks them).
const OWNER_RULES = {
  providerId: { required: true, maxLength: 128, pattern: "^[A-Za-z0-9._:-]+$" },
  label: { maxLength: 120 },
  lines: { type: "integer", minimum: 0, maximum: 1000 },
  pricePerBlockMicrocredits: { type: "number", minimum: 0, maximum: 1000000, credits: true },
  callerNumber: { pattern: "^\\+[1-9][0-9]{7,14}$" },
  callingWindow: { pattern: "^([01]?[0-9]|2[0-3]):[0-5][0-9]-([01]?[0-9]|2[0-3]):[0-5][0-9]$" },
  pricePerContactMicrocredits: { type: "number", minimum: 0, maximum: 1000000, credits: true },
  pricePerThousandCharactersMicrocredits: { type: "number", minimum: 0, maximum: 1000000, credits: true },
  microcredits: { type: "number", required: true, minimum: 0.000001, maximum: 1000000, credits: true },
  email: { required: true, maxLength: 254, pattern: "^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$" },
};

// An owner form's fields checked as typed by OWNER_RULES; answers check().
function ownerRules(form, labels) {
  const problem = (input) => {
    const rule = OWNER_RULES[input.name];
    if (!rule) return "";
    const m = ruleProblem(rule, input.value);
    return m ? `${labels[input.name] || input.name} ${m}` : "";
  };
  const inputs = [...form.querySelectorAll("input[name]")].filter((i) => i.type !== "checkbox");
  inputs.forEach((i) => i.addEventListener("input", () => markField(i, problem(i))));
  return () => {
    const details = inputs.map((i) => ({ field: i.name, message: problem(i) })).filter((d) => d.message);
    if (details.length) throw new ApiError(400, { message: "Check the fields marked below.", details });
  };
}

// The console's agent pages: the list, agent testing, the agent form, channels and assignments.
"use strict";

// ---- agents and agent testing -----------------------------------------------------------------

async function agentsPage() {
  const page = await api("GET", "/api/v1/agents?" + q({ businessId: biz(), limit: 100 }));
  const rows = page.agents.map((a) => h("tr", {},
    h("td", { class: "name", text: a.name }),
    h("td", { text: CHANNEL_WORDS[a.channel] || a.channel }),
    h("td", {}, badge(a.status || (a.archivedAt ? "archived" : "active"))),
    h("td", {}, h("a", { href: `#/agents/${a.id}/test`, text: "Test", "aria-label": `Test ${a.name}` }), " ",
      canWrite("agents:write") ? h("a", { href: `#/agents/${a.id}`, text: "Edit", "aria-label": `Edit ${a.name}` }) : null)));
  show(h("h1", { text: "Agents" }),
    canWrite("agents:write") ? h("p", {}, h("a", { href: "#/agents/new", text: "New agent" })) : null,
    table(["Name", "Channel", "Status", ""], rows, "No agents yet."));
}

// Channels as the business says them.
const CHANNEL_WORDS = { chatapp: "Chat app", photoapp: "Photo app", voice: "Voice calls", sms: "SMS", other: "Other" };

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

// The voice settings a form offers: [name, label, kind] (kind: text,
// number, boolean or a list of choices). The rules are the document's.
const VOICE_FIELDS = [
  ["firstGreeting", "First greeting (at most 30 words; may use {{variables}})", "text"],
  ["liveVoiceId", "Voice", "text"],
  ["language", "Spoken language", "text"],
  ["agentGender", "Voice gender", ["", "female", "male"]],
  ["backgroundNoiseKey", "Background ambience", "text"],
  ["backgroundNoiseLevelPercent", "Background noise level (50 to 1000, steps of 50)", "number"],
  ["nudgeAfterSilenceSeconds", "Nudge after this many seconds of silence", "number"],
  ["disconnectAfterSilenceSeconds", "Hang up after this many seconds of silence", "number"],
  ["maxCallDurationSeconds", "Longest call, in seconds", "number"],
  ["allowGreetingInterrupt", "The caller may interrupt the greeting", "boolean"],
  ["repeatInterruptedSentence", "Repeat a sentence the caller interrupted", "boolean"],
];

const SCHEMA_CHANNEL = { chatapp: "Chatapp", photoapp: "Photoapp", voice: "Voice", sms: "Other", other: "Other" };

// One form for both: every field checked as you type (the document's
// rules for the agent's channel), the server's errors next to the field
// they name. An edit is a full replacement, so what the form does not show
// is sent back as it was.
async function agentForm(id) {
  const here = location.hash;
  const agent = id ? await findAgent(id) : null;
  if (id && !agent) { show(h("h1", { text: "No such agent" })); return; }
  const [sources, cats, channels] = await Promise.all([
    api("GET", "/api/v1/data-sources?" + q({ businessId: biz(), limit: 200 })), allCategories(), api("GET", "/api/v1/channels?" + q({ businessId: biz() }))]);
  const chosen = new Set(agent ? agent.dataSourceIds || [] : []);
  const channel = agent ? agent.channel : "chatapp";
  const vs = (agent && agent.voiceSettings) || {};
  const voiceBox = h("fieldset", { id: "a-voice" }, h("legend", { text: "Voice settings" }), VOICE_FIELDS.map(([name, label, kind]) => {
    const fid = `a-v-${name}`;
    const field = `voiceSettings.${name}`;
    if (kind === "boolean") return h("label", { class: "check" }, h("input", { type: "checkbox", id: fid, name: field, checked: !!vs[name] }), " ", label);
    if (Array.isArray(kind)) {
      return [h("label", { for: fid, text: label }), h("select", { id: fid, name: field },
        kind.map((k) => h("option", { value: k, text: k || "not set", selected: (vs[name] || "") === k })))];
    }
    return [h("label", { for: fid, text: label }),
      h("input", { id: fid, name: field, inputmode: kind === "number" ? "decimal" : null, value: vs[name] === undefined || vs[name] === null ? "" : String(vs[name]) })];
  }));
  const variables = h("div", { id: "a-variables" });
  const structured = sources.dataSources.filter((d) => d.class === "structured");
  const addVariable = (v) => {
    const n = variables.children.length;
    const source = h("select", { id: `a-var-${n}-source`, name: `dataSourceVariables[${n}].sourceId` },
      structured.map((d) => h("option", { value: d.id, text: d.name, selected: v && v.sourceId === d.id })));
    const fieldSelect = h("select", { id: `a-var-${n}-field`, name: `dataSourceVariables[${n}].fieldKey` });
    const fill = () => {
      const d = structured.find((x) => x.id === source.value);
      fieldSelect.replaceChildren(...(d ? d.fields : []).map((f) => h("option", { value: f.key, text: f.key, selected: v && v.fieldKey === f.key })));
    };
    source.addEventListener("change", fill);
    fill();
    const row = h("div", { class: "variable" },
      h("label", { for: source.id, text: "From" }), source,
      h("label", { for: fieldSelect.id, text: "field" }), fieldSelect,
      h("label", { for: `a-var-${n}-alias`, text: "as {{alias}}" }),
      h("input", { id: `a-var-${n}-alias`, name: `dataSourceVariables[${n}].alias`, value: v ? v.alias : "" }),
      h("button", { type: "button", class: "secondary", text: "Remove", "aria-label": `Remove variable ${n + 1}`, onclick: () => row.remove() }));
    variables.append(row);
  };
  (agent ? agent.dataSourceVariables || [] : []).forEach(addVariable);
  // Where the agent answers (create only: an edit changes it on Channels).
  const targets = [];
  for (const c of channels.channels) for (const conn of c.connections) targets.push({ channel: c.key, conn });
  const assignment = agent ? null : h("div", { id: "a-assignment" });
  // Which agent answers on each number or account now (create only).
  const assignedTo = {};
  if (!agent) {
    const named = {};
    for (const a of (await api("GET", "/api/v1/agents?" + q({ businessId: biz(), limit: 200 }))).agents) named[a.id] = a.name;
    for (const t of targets) {
      if (t.conn.aiAgentId) assignedTo[`${t.channel}:${t.conn.phoneNumberId || t.conn.providerAccountId}`] = named[t.conn.aiAgentId] || "another agent";
    }
  }
  const drawAssignment = (ch) => {
    if (!assignment) return;
    const mine = targets.filter((t) => t.channel === ch);
    // A number or account that has an agent already is shown, not offered:
    // creating another agent on it would replace the first without a word.
    const taken = (t) => assignedTo[`${t.channel}:${t.conn.phoneNumberId || t.conn.providerAccountId}`];
    const choices = mine.map((t) => {
      const name = t.conn.label || t.conn.phoneNumberId || t.conn.providerAccountId;
      const holder = taken(t);
      return h("option", { value: t.conn.phoneNumberId || t.conn.providerAccountId, disabled: !!holder,
        text: holder ? `${name} (answered by ${holder}; change it on Channels)` : name });
    });
    assignment.replaceChildren(...kids(mine.length ? [h("label", { for: "a-assign", text: "Answer on" }),
      h("select", { id: "a-assign", name: "assignment" }, h("option", { value: "", text: "not assigned yet" }), choices),
      mine.some(taken) ? h("p", { class: "muted", id: "a-assign-note", text: "A number that already has an agent is changed on the Channels page." }) : null] : []));
  };
  const form = h("form", { class: "card", novalidate: true, id: "agent-form" },
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "a-channel", text: "Channel" }),
    h("select", { id: "a-channel", name: "channel", disabled: !!agent },
      ["chatapp", "photoapp", "voice", "other"].map((c) => h("option", { value: c, text: CHANNEL_WORDS[c], selected: c === channel }))),
    assignment,
    h("label", { for: "a-name", text: "Name" }),
    h("input", { id: "a-name", name: "name", value: agent ? agent.name : "", required: true }),
    h("label", { for: "a-instructions", text: "Instructions" }),
    h("textarea", { id: "a-instructions", name: "instructions", rows: 8, required: true, text: agent ? agent.instructions : "" }),
    h("label", { for: "a-language", text: "Language (a tag such as en or pt-BR)" }),
    h("input", { id: "a-language", name: "languageCode", value: agent ? agent.languageCode : "en" }),
    voiceBox,
    h("label", { class: "check", id: "a-collect" }, h("input", { type: "checkbox", name: "photoappCollectMobileEnabled", checked: !!(agent && agent.photoappCollectMobileEnabled) }),
      " Ask photoapp users for their mobile number"),
    h("fieldset", {}, h("legend", { text: "Data sources it may use" }),
      sources.dataSources.length ? sources.dataSources.map((d) => h("label", { class: "check" },
        h("input", { type: "checkbox", name: "dataSourceIds", value: d.id, checked: chosen.has(d.id) }), " ", d.name))
        : h("p", { class: "muted", text: "No data sources yet." })),
    h("fieldset", {}, h("legend", { text: "Contact categories it serves (none: every contact)" }),
      categoryChecks("contactCategoryIds", cats, new Set(agent ? agent.contactCategoryIds || [] : []))),
    h("fieldset", {}, h("legend", { text: "Declared variables (fields of a table it may read by name)" }),
      variables,
      structured.length ? h("button", { type: "button", class: "secondary", text: "Add a variable", onclick: () => addVariable(null) })
        : h("p", { class: "muted", text: "Upload a table data source to declare variables." })),
    h("button", { type: "submit", text: agent ? "Save" : "Create agent" }));
  const channelNow = () => (agent ? agent.channel : form.channel.value);
  const redraw = () => {
    voiceBox.hidden = channelNow() !== "voice";
    form.querySelector("#a-collect").hidden = channelNow() !== "photoapp";
    drawAssignment(channelNow());
  };
  form.channel.addEventListener("change", redraw);
  redraw();
  const check = liveRules(form, () => `Agent${agent ? "Update" : "Create"}${SCHEMA_CHANNEL[channelNow()]}`,
    { name: "Name", instructions: "The instructions", languageCode: "The language", ...Object.fromEntries(VOICE_FIELDS.map(([n, l]) => [`voiceSettings.${n}`, l.replace(/ \(.*$/, "")])) });
  onSubmit(form, async (sub) => {
    await check();
    const ch = channelNow();
    const body = { businessId: biz(), channel: ch };
    if (agent) body.agentId = agent.id;
    body.name = form.name.value;
    body.instructions = form.instructions.value;
    body.languageCode = form.languageCode.value;
    body.dataSourceIds = checked(form, "dataSourceIds");
    body.contactCategoryIds = checked(form, "contactCategoryIds");
    body.dataSourceVariables = [...variables.children].map((row) => ({
      sourceId: row.querySelector("select[name$='.sourceId']").value,
      fieldKey: row.querySelector("select[name$='.fieldKey']").value,
      alias: row.querySelector("input[name$='.alias']").value.trim(),
    }));
    if (ch === "voice") {
      body.voiceSettings = {};
      for (const [name, , kind] of VOICE_FIELDS) {
        const input = form.querySelector(`[name="voiceSettings.${name}"]`);
        if (kind === "boolean") body.voiceSettings[name] = input.checked;
        else if (input.value.trim() !== "") body.voiceSettings[name] = kind === "number" ? Number(input.value) : input.value;
      }
    }
    if (ch === "photoapp") body.photoappCollectMobileEnabled = form.photoappCollectMobileEnabled.checked;
    const target = form.querySelector("#a-assign");
    if (!agent && target && target.value) body.assignment = ch === "photoapp" ? { providerAccountId: target.value } : { phoneNumberId: target.value };
    const r = await api(agent ? "PATCH" : "POST", "/api/v1/agents", body, sub);
    toast(agent ? "Agent saved." : "Agent created.");
    location.hash = `#/agents/${r.agent.id}/test`;
  });
  const archive = agent && agent.status !== "archived" ? h("p", {}, h("button", { type: "button", class: "danger", text: "Archive this agent", onclick: once(async (sub) => {
    if (!confirm(`Archive ${agent.name}? It stops answering and can no longer be assigned or used.`)) return;
    await api("DELETE", "/api/v1/agents", { businessId: biz(), agentId: agent.id }, sub);
    toast("Agent archived."); location.hash = "#/agents";
  }) })) : null;
  const call = agent && agent.channel === "voice" && agent.status !== "archived" && canWrite("voice:write") ? await callForm({ agent }) : null;
  if (location.hash !== here) return;
  show(h("p", {}, h("a", { href: "#/agents", text: "← Agents" })), h("h1", { text: agent ? `Edit ${agent.name}` : "New agent" }),
    agent && agent.status === "archived" ? h("p", { class: "notice", text: "This agent is archived: it is kept for its history and can no longer be used." }) : null,
    form, call, archive);
}

// ---- channels and assignments ------------------------------------------------------------

async function channelsPage() {
  const here = "#/channels";
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
      h("p", { text: `${c.ready ? "Ready" : "Not ready yet"} · ${c.live ? "live" : "not live yet"} · ${ASSIGNMENT_WORDS[c.assignmentMode] || "agents are chosen per number"}` }),
      rows.length ? h("ul", { class: "plain" }, rows) : null));
  }
  if (state.me.role === "owner") sections.push(phoneSection(), connectSection(), await voiceSection());
  sections.push(await providersSection());
  showOn(here, h("h1", { text: "Channels" }), ...sections);
}

// The business's default phone country (updateBusinessSettings): every
// phone input of the console takes a number written without "+" in it.
function phoneSection() {
  const now = state.settings || {};
  const form = h("form", { class: "card", novalidate: true, id: "phone-country", "aria-labelledby": "phone-country-title" },
    h("h2", { id: "phone-country-title", text: "Phone numbers" }),
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "pc-country", text: "Default country (two letters, such as US, GB or DE)" }),
    h("input", { id: "pc-country", name: "defaultPhoneCountry", value: now.defaultPhoneCountry || "", maxlength: 2, autocomplete: "country",
      "aria-describedby": "pc-country-hint", "data-hint": "pc-country-hint" }),
    h("p", { class: "hint", id: "pc-country-hint", text: now.defaultCallingCode
      ? `A number written without + and a country code is taken in this country (+${now.defaultCallingCode}).`
      : "Without one, a number written without + is taken in the country of each person's browser." }),
    h("button", { type: "submit", text: "Save country" }));
  onSubmit(form, async (sub) => {
    const typed = form.defaultPhoneCountry.value.trim().toUpperCase();
    const d = await api("PATCH", "/api/v1/business-settings", { businessId: biz(), defaultPhoneCountry: typed || null }, sub);
    state.settings = d.settings;
    await channelsPage();
    toast(d.settings.defaultPhoneCountry ? `Phone numbers without a country code are now taken as +${d.settings.defaultCallingCode}.` : "Phone numbers take each browser's country again.");
  });
  return form;
}

// How a channel's agents are chosen, in the business's words.
const ASSIGNMENT_WORDS = {
  per_phone_number: "an agent per connected number",
  per_account: "one agent for the account",
  agent_only: "the agent is chosen for each call or campaign",
  none: "no agents here yet",
};

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
// Credits typed (up to six decimals) as the microcredits the routes take.
function typedCredits(text) { return Math.round(Number(String(text).trim()) * 1e6); }
function shownCredits(micro) { return micro === null || micro === undefined ? "" : String(micro / 1e6); }

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

// A number or account of the embedded sandbox (what `admin channel
// connect` does): the owner route refuses it while messages go through a
// plugin.
function connectSection() {
  const form = h("form", { class: "card", novalidate: true, id: "connect-channel", "aria-labelledby": "connect-title" },
    h("h2", { id: "connect-title", text: "Connect a sandbox number or account" }),
    h("p", { class: "muted", text: "Messages to and from it go through the embedded sandbox. A real provider's number is connected with that provider." }),
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "cn-channel", text: "Channel" }),
    h("select", { id: "cn-channel", name: "channel" }, h("option", { value: "chatapp", text: "a chat app number" }), h("option", { value: "photoapp", text: "the photo app account (replaces the current one)" })),
    h("label", { for: "cn-id", text: "Phone number id or account id" }),
    h("input", { id: "cn-id", name: "providerId", placeholder: "pn-sales" }),
    h("label", { for: "cn-label", text: "Label or username (optional)" }),
    h("input", { id: "cn-label", name: "label" }),
    h("button", { type: "submit", text: "Connect" }));
  const check = ownerRules(form, { providerId: "The id", label: "The label" });
  onSubmit(form, async () => {
    check();
    const body = { channel: form.channel.value, providerId: form.providerId.value.trim() };
    if (form.label.value.trim()) body.label = form.label.value.trim();
    await api("POST", "/console/api/channels", body);
    await channelsPage(); toast("Connected.");
  });
  return form;
}

// The business's voice lines, prices and credits (what `admin voice
// configure`, `admin summaries configure` and `admin credits add` do).
async function voiceSection() {
  const d = await api("GET", "/console/api/voice");
  const v = d.voice;
  const field = (id, name, label, value, extra) => [h("label", { for: id, text: label }),
    h("input", { id, name, value: value === null || value === undefined ? "" : String(value), ...(extra || {}) })];
  const voice = h("form", { novalidate: true, id: "voice-settings", "aria-label": "Voice lines and call price" },
    h("p", { class: "form-error", role: "alert" }),
    field("vs-lines", "lines", "Lines (calls at once)", v.lines, { inputmode: "numeric" }),
    field("vs-price", "pricePerBlockMicrocredits", `Price of each started ${v.blockSeconds} seconds of a call, in credits`, shownCredits(v.pricePerBlockMicrocredits), { inputmode: "decimal" }),
    field("vs-caller", "callerNumber", "Caller number", v.callerNumber, { type: "tel", placeholder: "+14155550100" }),
    field("vs-zone", "timeZone", "Default time zone (IANA, such as Europe/Paris)", v.timeZone),
    field("vs-window", "callingWindow", "Default calling window (HH:MM-HH:MM)", v.callingWindow, { placeholder: "09:00-20:00" }),
    h("button", { type: "submit", text: "Save voice settings" }));
  const checkVoice = ownerRules(voice, { lines: "Lines", pricePerBlockMicrocredits: "The price", callerNumber: "The caller number", callingWindow: "The calling window" });
  onSubmit(voice, async () => {
    checkVoice();
    const body = {};
    for (const input of voice.querySelectorAll("input")) {
      const was = { lines: v.lines, pricePerBlockMicrocredits: shownCredits(v.pricePerBlockMicrocredits), callerNumber: v.callerNumber, timeZone: v.timeZone, callingWindow: v.callingWindow }[input.name];
      const now = input.value.trim();
      if (now === "" || now === String(was === null ? "" : was)) continue;
      const rule = OWNER_RULES[input.name] || {};
      body[input.name] = rule.credits ? typedCredits(now) : rule.type === "integer" ? Number(now) : now;
    }
    if (!Object.keys(body).length) { toast("Nothing changed."); return; }
    await api("PUT", "/console/api/voice", body); await channelsPage(); toast("Voice settings saved.");
  });
  const p = d.summaryPrices;
  const prices = h("form", { novalidate: true, id: "summary-prices", "aria-label": "Price of campaign summaries" },
    h("p", { class: "form-error", role: "alert" }),
    field("sp-contact", "pricePerContactMicrocredits", "Summary price per contact, in credits", shownCredits(p.pricePerContactMicrocredits), { inputmode: "decimal" }),
    field("sp-thousand", "pricePerThousandCharactersMicrocredits", "…and per started 1,000 characters read, in credits", shownCredits(p.pricePerThousandCharactersMicrocredits), { inputmode: "decimal" }),
    h("button", { type: "submit", text: "Save prices" }));
  const checkPrices = ownerRules(prices, { pricePerContactMicrocredits: "The price per contact", pricePerThousandCharactersMicrocredits: "The price per 1,000 characters" });
  onSubmit(prices, async () => {
    checkPrices();
    await api("PUT", "/console/api/summary-prices", { pricePerContactMicrocredits: typedCredits(prices.pricePerContactMicrocredits.value),
      pricePerThousandCharactersMicrocredits: typedCredits(prices.pricePerThousandCharactersMicrocredits.value) });
    await channelsPage(); toast("Prices saved. The next estimate uses them.");
  });
  let topUp = h("p", { class: "muted", text: "Credits are added by whoever runs this server: ask them when you need more." });
  if (d.credits.topUpAllowed) {
    topUp = h("form", { novalidate: true, id: "top-up", "aria-label": "Add credits" },
      h("p", { class: "form-error", role: "alert" }),
      field("tu-amount", "microcredits", "Credits to add (a sandbox server: play money)", "", { inputmode: "decimal" }),
      field("tu-note", "note", "Note (optional)", ""),
      h("button", { type: "submit", text: "Add credits" }));
    const checkTopUp = ownerRules(topUp, { microcredits: "The amount" });
    onSubmit(topUp, async () => {
      checkTopUp();
      const body = { microcredits: typedCredits(topUp.microcredits.value) };
      if (topUp.note.value.trim()) body.note = topUp.note.value.trim();
      await api("POST", "/console/api/credits", body); await channelsPage(); toast("Credits added.");
    });
  }
  return h("section", { class: "card", "aria-labelledby": "voice-title" },
    h("h2", { id: "voice-title", text: "Voice lines and prices" }),
    h("p", { id: "balance", text: `Balance: ${credits(d.credits.availableMicrocredits)} (${credits(d.credits.reservedMicrocredits)} held for calls in progress).` }),
    voice, prices, topUp);
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

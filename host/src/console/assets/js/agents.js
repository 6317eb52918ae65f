// The console's agent pages: the list, agent testing, the agent form (channels.js has the channels page).
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
  const voiceBox = voiceFields((agent && agent.voiceSettings) || {});
  const structured = sources.dataSources.filter((d) => d.class === "structured");
  const { variables, addVariable } = variablesEditor(structured);
  (agent ? agent.dataSourceVariables || [] : []).forEach(addVariable);
  // Where the agent answers (create only: an edit changes it on Channels).
  const { assignment, drawAssignment } = agent ? { assignment: null, drawAssignment: () => {} } : await assignmentPicker(channels);
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
    const r = await api(agent ? "PATCH" : "POST", "/api/v1/agents", agentBody(form, agent, channelNow(), variables), sub);
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

// The voice settings of VOICE_FIELDS as fields, holding `vs` (the agent's).
function voiceFields(vs) {
  return h("fieldset", { id: "a-voice" }, h("legend", { text: "Voice settings" }), VOICE_FIELDS.map(([name, label, kind]) => {
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
}

// The declared variables: a row each (a field of one of the `structured`
// data sources, read as {{alias}}); addVariable(v) adds one (v: a declared
// one, or null for a new row).
function variablesEditor(structured) {
  const variables = h("div", { id: "a-variables" });
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
  return { variables, addVariable };
}

// Where a new agent answers: a choice among the business's numbers and
// accounts of the channel (`channels`: listChannels' answer), drawn again
// by drawAssignment(channel) when the channel changes.
async function assignmentPicker(channels) {
  const targets = [];
  for (const c of channels.channels) for (const conn of c.connections) targets.push({ channel: c.key, conn });
  const assignment = h("div", { id: "a-assignment" });
  // Which agent answers on each number or account now.
  const assignedTo = {};
  const named = {};
  for (const a of (await api("GET", "/api/v1/agents?" + q({ businessId: biz(), limit: 200 }))).agents) named[a.id] = a.name;
  for (const t of targets) {
    if (t.conn.aiAgentId) assignedTo[`${t.channel}:${t.conn.phoneNumberId || t.conn.providerAccountId}`] = named[t.conn.aiAgentId] || "another agent";
  }
  const drawAssignment = (ch) => {
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
  return { assignment, drawAssignment };
}

// The createAgent or updateAgent body the agent form says, for channel
// `ch` (an edit names `agent`; its variables are the rows of `variables`).
function agentBody(form, agent, ch, variables) {
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
  return body;
}

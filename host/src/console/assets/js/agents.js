// The console's agent pages: the list, agent testing, the agent form, channels and assignments.
"use strict";

// ---- agents and agent testing -----------------------------------------------------------------

async function agentsPage() {
  const page = await api("GET", "/api/v1/agents?" + q({ businessId: biz(), limit: 100 }));
  const rows = page.agents.map((a) => h("tr", {},
    h("td", { text: a.name }),
    h("td", { text: a.channel }),
    h("td", { text: a.status || (a.archivedAt ? "archived" : "active") }),
    h("td", {}, h("a", { href: `#/agents/${a.id}/test`, text: "Test", "aria-label": `Test ${a.name}` }), " ",
      canWrite("agents:write") ? h("a", { href: `#/agents/${a.id}`, text: "Edit", "aria-label": `Edit ${a.name}` }) : null)));
  show(h("h1", { text: "Agents" }),
    canWrite("agents:write") ? h("p", {}, h("a", { href: "#/agents/new", text: "New agent" })) : null,
    h("table", {},
      h("thead", {}, h("tr", {}, ["Name", "Channel", "Status", ""].map((t) => h("th", { scope: "col", text: t })))),
      h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 4, text: "No agents yet." })))));
}

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

// A secret in the one answer that made it (an API key, a signing secret):
// it lives only in this element until the page changes.
function shownOnce(id, title, hint, secret) {
  const box = h("section", { class: "card secret", "aria-labelledby": `${id}-title` },
    h("h2", { id: `${id}-title`, text: title }),
    h("p", { text: hint }),
    h("output", { id, class: "key", text: secret }),
    h("button", { type: "button", text: "Copy", onclick: () => navigator.clipboard && navigator.clipboard.writeText(secret).then(() => toast("Copied.")) }));
  main().prepend(box);
  box.querySelector("output").focus();
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

// One form for both: the server's validation errors appear next to the
// field they name. An edit is a full replacement, so what the form does not
// show is sent back as it was.
async function agentForm(id) {
  const agent = id ? await findAgent(id) : null;
  if (id && !agent) { show(h("h1", { text: "No such agent" })); return; }
  const sources = await api("GET", "/api/v1/data-sources?" + q({ businessId: biz(), limit: 200 }));
  const chosen = new Set(agent ? agent.dataSourceIds || [] : []);
  const channel = agent ? agent.channel : "chatapp";
  const greeting = agent && agent.voiceSettings ? agent.voiceSettings.firstGreeting || "" : "";
  const form = h("form", { class: "card", novalidate: true },
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "a-channel", text: "Channel" }),
    h("select", { id: "a-channel", name: "channel", disabled: !!agent },
      ["chatapp", "photoapp", "voice", "other"].map((c) => h("option", { value: c, text: c, selected: c === channel }))),
    h("label", { for: "a-name", text: "Name" }),
    h("input", { id: "a-name", name: "name", value: agent ? agent.name : "", maxlength: 120, required: true }),
    h("label", { for: "a-instructions", text: "Instructions" }),
    h("textarea", { id: "a-instructions", name: "instructions", rows: 8, required: true, text: agent ? agent.instructions : "" }),
    h("label", { for: "a-language", text: "Language (a tag such as en or pt-BR)" }),
    h("input", { id: "a-language", name: "languageCode", value: agent ? agent.languageCode : "en", maxlength: 35 }),
    h("label", { for: "a-greeting", text: "First greeting (voice agents)" }),
    h("input", { id: "a-greeting", name: "voiceSettings.firstGreeting", value: greeting }),
    h("fieldset", {}, h("legend", { text: "Data sources it may use" }),
      sources.dataSources.length ? sources.dataSources.map((d) => h("label", { class: "check" },
        h("input", { type: "checkbox", name: "dataSourceIds", value: d.id, checked: chosen.has(d.id) }), " ", d.name))
        : h("p", { class: "muted", text: "No data sources yet." })),
    h("button", { type: "submit", text: agent ? "Save" : "Create agent" }));
  onSubmit(form, async (sub) => {
    const body = agent ? {
      businessId: biz(), agentId: agent.id, channel: agent.channel,
      contactCategoryIds: agent.contactCategoryIds, dataSourceVariables: agent.dataSourceVariables,
      voiceSettings: agent.voiceSettings, photoappCollectMobileEnabled: agent.photoappCollectMobileEnabled,
    } : { businessId: biz(), channel: form.channel.value };
    for (const [k, v] of Object.entries(body)) if (v === undefined || v === null) delete body[k];
    body.name = form.name.value;
    body.instructions = form.instructions.value;
    body.languageCode = form.languageCode.value;
    body.dataSourceIds = [...form.querySelectorAll("input[name=dataSourceIds]:checked")].map((i) => i.value);
    const g = form.querySelector("[name='voiceSettings.firstGreeting']").value;
    if ((agent ? agent.channel : form.channel.value) === "voice" && g) body.voiceSettings = { ...(body.voiceSettings || {}), firstGreeting: g };
    if (body.channel !== "voice") delete body.voiceSettings;
    const r = await api(agent ? "PATCH" : "POST", "/api/v1/agents", body, sub);
    toast(agent ? "Agent saved." : "Agent created.");
    location.hash = `#/agents/${r.agent.id}/test`;
  });
  show(h("p", {}, h("a", { href: "#/agents", text: "← Agents" })), h("h1", { text: agent ? `Edit ${agent.name}` : "New agent" }), form);
}

// ---- channels and assignments ------------------------------------------------------------

async function channelsPage() {
  const here = location.hash;
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
      h("p", { text: `${c.ready ? "Ready" : "Not ready"} · ${c.live ? "live" : "not live"} · agents assigned ${String(c.assignmentMode).replace(/_/g, " ")}` }),
      rows.length ? h("ul", { class: "plain" }, rows) : null));
  }
  sections.push(await providersSection());
  showOn(here, h("h1", { text: "Channels" }), ...sections);
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

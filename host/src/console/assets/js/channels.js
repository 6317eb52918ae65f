// The console's channels page: assignments of agents to numbers and
// accounts and, for an owner, the default phone country, sandbox numbers,
// voice lines, prices and credits, and the provider adapters.
"use strict";

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

// Credits typed (up to six decimals) as the microcredits the routes take.
function typedCredits(text) { return Math.round(Number(String(text).trim()) * 1e6); }
function shownCredits(micro) { return micro === null || micro === undefined ? "" : String(micro / 1e6); }

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

// The console's calls pages and the form that places a call (campaigns.js has
// the campaigns pages).
"use strict";

// ---- calls ---------------------------------------------------------------------------

const CALL_STATUSES = ["queued", "ringing", "answered", "cancelling", "completed", "no_answer", "busy", "failed", "cancelled"];

const CALL_ENDERS = ["customer", "agent", "operator", "system", "provider", "unknown"];

async function callsPage() {
  const list = h("div", { id: "call-list" });
  const agents = await api("GET", "/api/v1/agents?" + q({ businessId: biz(), limit: 200 }));
  const any = () => h("option", { value: "", text: "any" });
  const filters = h("form", { class: "inline", role: "search" },
    h("label", { for: "status", text: "Status" }),
    h("select", { id: "status", name: "status" }, any(), CALL_STATUSES.map((x) => h("option", { value: x, text: x.replace("_", " ") }))),
    h("label", { for: "ended-by", text: "Ended by" }),
    h("select", { id: "ended-by", name: "endedBy" }, any(), CALL_ENDERS.map((x) => h("option", { value: x, text: x }))),
    h("label", { for: "call-agent", text: "Agent" }),
    h("select", { id: "call-agent", name: "agentId" }, any(), agents.agents.filter((a) => a.channel === "voice").map((a) => h("option", { value: a.id, text: a.name }))),
    h("button", { type: "submit", text: "Filter" }));
  const load = (cursor) => api("GET", "/api/v1/voice/calls?" + q({ businessId: biz(), status: filters.status.value, endedBy: filters.endedBy.value,
    agentId: filters.agentId.value, cursor, limit: 50 })).then((page) => ({
    nextCursor: page.nextCursor,
    rows: page.calls.map((c) => h("tr", {},
      h("td", {}, h("a", { href: `#/calls/${c.id}`, text: c.contactName || c.calleeNumber })),
      h("td", { text: c.agentName || "" }),
      h("td", { text: c.status.replace("_", " ") }),
      h("td", { text: when(c.startedAt || c.createdAt) }),
      h("td", { text: seconds(c.durationSeconds) }),
      h("td", { text: credits(c.chargedMicrocredits) }))),
  }));
  const headers = ["Callee", "Agent", "Status", "Started", "Duration", "Charged"];
  filters.addEventListener("submit", (e) => { e.preventDefault(); paged(list, headers, "No calls.", load, null); });
  show(h("h1", { text: "Calls" }), filters, list);
  await paged(list, headers, "No calls.", load, null);
}

// A call's states that can still change (the page follows them live).
const CALL_LIVE = ["queued", "ringing", "answered", "cancelling"];

async function callPage(id, polled) {
  const here = `#/calls/${id}`;
  const d = await api("GET", `/api/v1/voice/calls/${id}?` + q({ businessId: biz() }));
  const c = d.call;
  if (location.hash !== here) return true;
  const nodes = [
    h("p", {}, h("a", { href: "#/calls", text: "← Calls" })),
    h("h1", { text: `Call to ${c.contactName || c.calleeNumber}` }),
    h("dl", { class: "facts" },
      h("dt", { text: "Number" }), h("dd", { text: c.calleeNumber }),
      h("dt", { text: "Agent" }), h("dd", { text: c.agentName || "" }),
      c.campaignName ? [h("dt", { text: "Campaign" }), h("dd", { text: c.campaignName })] : null,
      h("dt", { text: "Status" }), h("dd", { id: "call-status" }, badge(c.status, c.status.replace(/_/g, " ")),
        CALL_LIVE.includes(c.status) ? h("span", { class: "muted", text: " · following live" }) : null),
      h("dt", { text: "Ended" }), h("dd", { text: c.endedAt ? [when(c.endedAt), ENDED_WORDS[c.endedBy], c.endReason ? `(${c.endReason.replace(/_/g, " ")})` : null].filter(Boolean).join(" · ") : "not yet" }),
      h("dt", { text: "Duration" }), h("dd", { text: seconds(c.durationSeconds) }),
      h("dt", { text: "Charged" }), h("dd", { text: credits(c.chargedMicrocredits) })),
  ];
  if (d.recordingUrl) {
    // Signed links that expire five minutes after this read; no key needed.
    nodes.push(h("h2", { text: "Recording" }),
      h("audio", { id: "recording", controls: true, preload: "metadata", src: d.recordingUrl, "aria-label": "Call recording" }),
      h("p", {}, h("a", { href: d.recordingDownloadUrl, download: d.recordingFilename || true, text: "Download the recording" })));
  }
  nodes.push(h("h2", { text: "Transcript" }));
  if (d.transcript.length) {
    nodes.push(h("ol", { class: "timeline" }, d.transcript.map((t) => h("li", {}, h("strong", { text: `${t.speaker}: ` }), t.text))),
      h("p", {}, h("a", { href: `/api/v1/voice/calls/${id}/transcript?` + q({ businessId: biz() }), download: `transcript-${id}.txt`, text: "Download the transcript" })));
  } else nodes.push(h("p", { class: "muted", text: CALL_LIVE.includes(c.status) ? "The transcript follows once the call is over." : "No transcript." }));
  // Focus stays where it is while the page follows the call.
  if (polled) showOn(here, ...nodes); else show(...nodes);
  const live = CALL_LIVE.includes(c.status);
  if (live && !polled) keepPolling(() => callPage(id, true), 1000);
  return !live;
}

// Starts a call: from a contact's page (choose the voice agent) or from
// an agent (choose a contact by name or number, or type a number). The
// call's report opens once it is placed.
async function callForm({ contact, agent }) {
  const agents = agent ? [agent] : (await api("GET", "/api/v1/agents?" + q({ businessId: biz(), limit: 200 }))).agents
    .filter((a) => a.channel === "voice" && !a.archivedAt && a.status !== "archived");
  const form = h("form", { class: "card", novalidate: true, id: "start-call" },
    h("h2", { text: contact ? "Call this contact" : "Start a call" }),
    h("p", { class: "form-error", role: "alert" }));
  if (!agents.length) {
    form.append(h("p", { class: "muted" }, "No voice agent yet. ", h("a", { href: "#/agents/new", text: "Create one" }), "."));
    return form;
  }
  add(form,
    agent ? null : [h("label", { for: "call-agent-id", text: "Voice agent" }),
      h("select", { id: "call-agent-id", name: "agentId" }, agents.map((a) => h("option", { value: a.id, text: a.name })))],
    contact ? null : [
      h("label", { for: "call-contact", text: "Contact (type a name or a number, then choose)" }),
      h("input", { id: "call-contact", name: "contactSearch", type: "search", list: "call-contacts", autocomplete: "off" }),
      h("datalist", { id: "call-contacts" }),
      h("label", { for: "call-to", text: "…or a number to call" }),
      phoneInput({ id: "call-to", name: "toNumber", "aria-describedby": "call-to-hint", "data-hint": "call-to-hint" }), phoneHint("call-to-hint")],
    h("button", { type: "submit", text: "Call now" }));
  // The contacts whose name or number matches what is typed, as choices.
  const found = new Map();
  if (!contact) {
    const box = form.contactSearch;
    box.addEventListener("input", async () => {
      const text = box.value.trim();
      if (text.length < 2 || found.has(text)) return;
      const byMobile = MOBILE_SEARCH.test(text);
      const page = await api("GET", "/api/v1/contacts?" + q({ businessId: biz(), limit: 20, search: byMobile ? text : "", name: byMobile ? "" : text })).catch(() => null);
      if (!page) return;
      for (const c of page.contacts) found.set(`${c.name} (${c.mobile})`, c.id);
      form.querySelector("datalist").replaceChildren(...[...found.keys()].map((k) => h("option", { value: k })));
    });
  }
  const check = liveRules(form, "VoiceCallStart", { toNumber: "The number" });
  onSubmit(form, async (sub) => {
    await check();
    const body = { businessId: biz(), agentId: agent ? agent.id : form.agentId.value };
    if (contact) body.contactId = contact.id;
    else if (form.contactSearch.value.trim()) {
      body.contactId = found.get(form.contactSearch.value.trim());
      if (!body.contactId) throw new ApiError(400, { message: "Choose a contact from the list.", details: [{ field: "contactSearch", message: "Choose a contact from the list, or clear it and type a number." }] });
    } else if (form.toNumber.value.trim()) body.toNumber = phoneE164(form.toNumber.value);
    else throw new ApiError(400, { message: "Choose a contact or type a number.", details: [{ field: "toNumber", message: "Choose a contact or type a number." }] });
    const r = await api("POST", "/api/v1/voice/calls", body, sub);
    toast(`Calling ${r.destination}.`);
    location.hash = `#/calls/${r.callId}`;
  });
  return form;
}

// The console's calls and campaigns pages.
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

async function callPage(id) {
  const d = await api("GET", `/api/v1/voice/calls/${id}?` + q({ businessId: biz() }));
  const c = d.call;
  const nodes = [
    h("p", {}, h("a", { href: "#/calls", text: "← Calls" })),
    h("h1", { text: `Call to ${c.contactName || c.calleeNumber}` }),
    h("dl", { class: "facts" },
      h("dt", { text: "Number" }), h("dd", { text: c.calleeNumber }),
      h("dt", { text: "Agent" }), h("dd", { text: c.agentName || "" }),
      c.campaignName ? [h("dt", { text: "Campaign" }), h("dd", { text: c.campaignName })] : null,
      h("dt", { text: "Status" }), h("dd", { text: c.status.replace("_", " ") }),
      h("dt", { text: "Ended" }), h("dd", { text: c.endedAt ? `${when(c.endedAt)} by ${c.endedBy || "?"} (${c.endReason || ""})` : "not yet" }),
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
  } else nodes.push(h("p", { class: "muted", text: "No transcript." }));
  show(...nodes);
}

// ---- campaigns -----------------------------------------------------------------------

async function campaignsPage() {
  const list = h("div", {});
  const load = (cursor) => api("GET", "/api/v1/campaigns?" + q({ businessId: biz(), cursor, limit: 50 })).then((page) => ({
    nextCursor: page.nextCursor,
    rows: page.campaigns.map(({ campaign: c, currentIteration: it }) => h("tr", {},
      h("td", {}, h("a", { href: `#/campaigns/${c.id}`, text: c.name })),
      h("td", { text: c.objective }),
      h("td", { text: `${c.iterationCount} · current: ${it.channel}, ${it.status}` }),
      h("td", {}, iterationProgress(it)),
      h("td", { text: when(c.createdAt) }))),
  }));
  show(h("h1", { text: "Campaigns" }), list);
  await paged(list, ["Name", "Objective", "Iterations", "Progress", "Created"], "No campaigns.", load, null);
}

function iterationProgress(it) {
  const c = it.counts;
  const done = c.total - c.pending - c.in_progress;
  const outcomes = Object.entries(c).filter(([k, v]) => k !== "total" && v > 0).map(([k, v]) => `${k.replace("_", " ")} ${v}`).join(", ");
  return h("div", { class: "progress" },
    h("progress", { max: Math.max(c.total, 1), value: done, "aria-label": `Iteration ${it.sequence} progress` }),
    h("span", { text: ` ${done} of ${c.total} members done${outcomes ? " · " + outcomes : ""}` }));
}

async function campaignPage(id) {
  const here = location.hash;
  const base = `/api/v1/campaigns/${id}`;
  const d = await api("GET", `${base}?` + q({ businessId: biz() }));
  const its = await api("GET", `${base}/iterations?` + q({ businessId: biz(), limit: 200 }));
  const write = canWrite("campaigns:write");
  const cur = d.currentIteration;
  const act = (action) => once(async (sub) => {
    await api("PATCH", base, { businessId: biz(), action }, sub); toast({ start: "Iteration started.", pause: "Iteration paused.", cancel: "Iteration cancelled." }[action]); campaignPage(id);
  });
  const actions = write ? h("p", {},
    cur.status === "draft" || cur.status === "paused" ? h("button", { type: "button", text: cur.status === "draft" ? "Start" : "Resume", onclick: act("start") }) : null,
    cur.status === "running" ? h("button", { type: "button", class: "secondary", text: "Pause", onclick: act("pause") }) : null,
    ["draft", "running", "paused"].includes(cur.status) ? h("button", { type: "button", class: "secondary", text: "Cancel iteration", onclick: act("cancel") }) : null) : null;
  const iterationRows = its.iterations.map((it) => h("tr", {},
    h("td", { text: String(it.sequence) }),
    h("td", { text: it.channel }),
    h("td", { text: it.status + (it.pausedReason ? ` (${it.pausedReason.replace("_", " ")})` : "") }),
    h("td", {}, iterationProgress(it)),
    h("td", { text: credits(it.spentMicrocredits) })));
  const runs = h("div", { id: "summary-runs" });
  const followUp = write && ["completed", "cancelled"].includes(cur.status) ? await followUpForm(id) : null;
  if (location.hash !== here) return;
  show(
    h("p", {}, h("a", { href: "#/campaigns", text: "← Campaigns" })),
    h("h1", { text: d.campaign.name }),
    h("p", { text: d.campaign.objective }),
    actions,
    h("h2", { text: "Iterations" }),
    table(["#", "Channel", "Status", "Progress", "Spent"], iterationRows, "No iterations."),
    followUp,
    h("h2", { text: "AI summary runs" }),
    runs);
  await drawRuns(id, runs);
  if (its.iterations.some((it) => it.status === "running")) {
    keepPolling(async () => { await campaignPage(id); return true; }, 2000);
  }
}

async function drawRuns(campaignId, box) {
  const path = `/api/v1/campaigns/${campaignId}/summary-runs`;
  const list = await api("GET", `${path}?` + q({ businessId: biz(), limit: 50 }));
  const canRun = canWrite("campaigns:write");
  const rows = list.summaryRuns.map((r) => h("tr", {},
    h("td", { text: when(r.createdAt) }),
    h("td", { class: "run-status", text: r.status }),
    h("td", {}, r.status === "estimated" ? `${r.contactCount} contacts` :
      h("span", {}, h("progress", { max: Math.max(r.contactCount, 1), value: r.processedCount, "aria-label": "Summary run progress" }), ` ${r.processedCount} of ${r.contactCount}`)),
    h("td", { text: r.status === "estimated" ? `up to ${credits(r.maximumChargeMicrocredits)}` : credits(r.chargedMicrocredits) }),
    h("td", {},
      r.status === "estimated" && canRun && (!r.estimateExpiresAt || new Date(r.estimateExpiresAt) > new Date())
        ? h("button", { type: "button", text: `Confirm ${credits(r.maximumChargeMicrocredits)}`, onclick: once(async (sub) => {
          await api("POST", path, { businessId: biz(), action: "confirm", estimateId: r.id, confirmMaximumChargeMicrocredits: r.maximumChargeMicrocredits }, sub);
          toast("Summary run confirmed."); await drawRuns(campaignId, box);
        }) }) : null,
      ["completed", "partial"].includes(r.status)
        ? h("a", { href: `/api/v1/campaigns/${campaignId}/exports?` + q({ businessId: biz(), summaryRunId: r.id }), download: `campaign-${campaignId}-summary.csv`, text: "Export CSV" }) : null)));
  const estimate = canRun ? h("button", { type: "button", text: "Estimate a summary run", onclick: once(async (sub) => {
    await api("POST", path, { businessId: biz(), action: "estimate" }, sub); await drawRuns(campaignId, box);
  }) }) : null;
  box.replaceChildren(...kids([
    h("p", { class: "muted", text: "An estimate charges nothing; confirming it reserves its maximum, and each contact assessed is charged." }),
    estimate, table(["Created", "Status", "Contacts", "Charge", ""], rows, "No summary runs yet.")]));
  if (list.summaryRuns.some((r) => ["queued", "running"].includes(r.status))) {
    keepPolling(async () => { await drawRuns(campaignId, box); return true; }, 1500);
  }
}

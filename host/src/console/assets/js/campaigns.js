// The console's campaigns pages: the list, a new campaign with its admission
// preview, and a campaign's page with its iterations, recipients and runs.
"use strict";

// ---- campaigns -----------------------------------------------------------------------

async function campaignsPage() {
  const list = h("div", {});
  const load = (cursor) => api("GET", "/api/v1/campaigns?" + q({ businessId: biz(), cursor, limit: 50 })).then((page) => ({
    nextCursor: page.nextCursor,
    rows: page.campaigns.map(({ campaign: c, currentIteration: it }) => h("tr", {},
      h("td", {}, h("a", { href: `#/campaigns/${c.id}`, text: c.name })),
      h("td", { text: c.objective }),
      h("td", { text: `${c.iterationCount} · now: ${CHANNEL_WORDS[it.channel] || it.channel}, ${it.status.replace(/_/g, " ")}` }),
      h("td", {}, iterationProgress(it)),
      h("td", { text: when(c.createdAt) }))),
  }));
  const headers = ["Name", "Objective", "Iterations", "Progress", "Created"];
  const refresh = () => paged(list, headers, "No campaigns.", load, null);
  show(h("h1", { text: "Campaigns" }), list, canWrite("campaigns:write") ? await newCampaignForm(refresh) : null);
  await refresh();
}

// A campaign and its first iteration, created as a draft: the answer says
// who was admitted and who was skipped and why (the admission), and the
// campaign's page starts it. Nothing is sent or called before Start.
async function newCampaignForm(created) {
  const [agentPage, cats] = await Promise.all([api("GET", "/api/v1/agents?" + q({ businessId: biz(), limit: 200 })), allCategories()]);
  const agents = agentPage.agents.filter((a) => ["voice", "chatapp"].includes(a.channel) && !a.archivedAt && a.status !== "archived");
  const agentSelect = h("select", { id: "cmp-agent", name: "iteration.agentId" });
  // The contacts chosen one by one (each change reads the preview again).
  const { box: contactsBox, chosen, picked, results } = contactPicker(() => preview());
  const form = h("form", { class: "card", novalidate: true, id: "new-campaign" },
    h("h2", { text: "New campaign" }),
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "cmp-name", text: "Name" }),
    h("input", { id: "cmp-name", name: "name" }),
    h("label", { for: "cmp-objective", text: "Objective" }),
    h("textarea", { id: "cmp-objective", name: "objective", rows: 2 }),
    h("fieldset", {}, h("legend", { text: "Channel" }),
      ["voice", "chatapp"].map((c, n) => h("label", { class: "check" }, h("input", { type: "radio", name: "channel", value: c, checked: n === 0 }), " ", CHANNEL_WORDS[c]))),
    h("label", { for: "cmp-agent", text: "Agent" }), agentSelect,
    h("div", { id: "cmp-opening-box" },
      h("label", { for: "cmp-opening", text: "Opening message" }),
      h("textarea", { id: "cmp-opening", name: "iteration.openingMessage", rows: 2, maxlength: 1000, "aria-describedby": "cmp-opening-count", "data-hint": "cmp-opening-count" }),
      h("p", { class: "hint counter", id: "cmp-opening-count", "aria-live": "polite" })),
    h("fieldset", {}, h("legend", { text: "Audience" }),
      h("label", { class: "check" }, h("input", { type: "radio", name: "audience", value: "categories", checked: true }), " every contact of categories"),
      h("label", { class: "check" }, h("input", { type: "radio", name: "audience", value: "contacts" }), " contacts I choose")),
    h("div", { id: "cmp-categories" }, h("fieldset", {}, h("legend", { text: "Categories" }), categoryChecks("categoryIds", cats, new Set()))),
    contactsBox,
    h("label", { for: "cmp-retries", id: "cmp-retries-label", text: "Retries of a busy, unanswered or failed call" }),
    h("input", { id: "cmp-retries", name: "iteration.maxRetries", inputmode: "numeric", value: "0" }),
    h("div", { id: "cmp-budget-box" },
      h("label", { for: "cmp-budget", text: "Budget cap in credits (optional)" }),
      h("input", { id: "cmp-budget", name: "budget", inputmode: "decimal" })),
    h("div", { id: "cmp-preview", role: "status", "aria-live": "polite" }),
    h("output", { id: "cmp-admission" }),
    h("button", { type: "submit", text: "Create as a draft" }));
  const channel = () => form.querySelector("input[name=channel]:checked").value;
  const countOpening = countChars(form.querySelector("#cmp-opening"), form.querySelector("#cmp-opening-count"), 1000);
  const redraw = () => {
    const c = channel();
    agentSelect.replaceChildren(...agents.filter((a) => a.channel === c).map((a) => h("option", { value: a.id, text: a.name })));
    if (!agentSelect.options.length) agentSelect.append(h("option", { value: "", text: `no ${c} agent yet` }));
    // Only the fields of the chosen channel: an opening message and no
    // budget for a chat app (openings cost no credits), call retries and a
    // budget for voice.
    form.querySelector("#cmp-opening-box").hidden = c !== "chatapp";
    form.querySelector("#cmp-budget-box").hidden = c !== "voice";
    form.querySelector("#cmp-retries-label").textContent = c === "voice" ? "Retries of a busy, unanswered or failed call" : "Retries of an opening message that failed";
    const byContacts = form.querySelector("input[name=audience]:checked").value === "contacts";
    form.querySelector("#cmp-contacts").hidden = !byContacts;
    form.querySelector("#cmp-categories").hidden = byContacts;
  };
  // The audience as the preview and the create take it (null: not chosen yet).
  const audience = () => {
    const a = { channel: channel(), agentId: agentSelect.value };
    if (form.querySelector("input[name=audience]:checked").value === "contacts") a.contactIds = [...chosen.keys()];
    else a.categoryIds = checked(form, "categoryIds");
    return a.agentId && (a.contactIds || a.categoryIds).length ? a : null;
  };
  // Who the chosen agent would admit of the chosen audience, read again at
  // each change (the last answer wins).
  const previewBox = form.querySelector("#cmp-preview");
  let asked = 0;
  const preview = async () => {
    const n = ++asked;
    const a = audience();
    if (!a) { previewBox.replaceChildren(); return; }
    let nodes;
    try {
      const r = await api("POST", "/api/v1/campaigns/admission-preview", { businessId: biz(), ...a });
      nodes = [h("p", { text: admissionText(r.admission, true) }), leftOut(r.skippedContacts || [], r.admission)];
    } catch (err) { nodes = [h("p", { class: "form-error", text: plain({ message: err.message }) })]; }
    if (n === asked) previewBox.replaceChildren(...kids(nodes));
  };
  form.querySelectorAll("input[type=radio]").forEach((r) => r.addEventListener("change", () => { redraw(); preview(); }));
  agentSelect.addEventListener("change", preview);
  form.querySelectorAll("input[name=categoryIds]").forEach((b) => b.addEventListener("change", preview));
  redraw();
  const checkTop = liveRules(form, "CampaignCreate", { name: "Name", objective: "The objective", "iteration.openingMessage": "The opening message",
    "iteration.maxRetries": "Retries", budget: "The budget cap" });
  onSubmit(form, async (sub) => {
    await checkTop();
    const it = campaignIteration(form, channel(), agentSelect.value, chosen);
    const r = await api("POST", "/api/v1/campaigns", { businessId: biz(), name: form.name.value, objective: form.objective.value, iteration: it }, sub);
    // The form empties for the next one; the list shows this one at once.
    form.reset();
    chosen.clear();
    picked.replaceChildren();
    results.replaceChildren();
    previewBox.replaceChildren();
    redraw();
    countOpening();
    const out = form.querySelector("#cmp-admission");
    out.replaceChildren(`${r.campaign.name}: ${admissionText(r.admission)} `, h("a", { href: `#/campaigns/${r.campaign.id}`, text: `Open ${r.campaign.name} to start it` }));
    toast("Campaign created as a draft.");
    if (created) await created();
  });
  return form;
}

// Contacts chosen one by one for a campaign: found by name or mobile, added
// from the results, listed each with its removal; `changed()` runs at each
// change. `chosen` maps each contact's id to its label.
function contactPicker(changed) {
  const chosen = new Map();
  const picked = h("ul", { id: "cmp-picked", class: "plain", "aria-label": "Contacts chosen" });
  const results = h("div", { id: "cmp-results" });
  const find = h("input", { id: "cmp-find", name: "find", type: "search" });
  const box = h("div", { id: "cmp-contacts", hidden: true },
    h("label", { for: "cmp-find", text: "Find contacts by name or mobile" }),
    find,
    h("button", { type: "button", class: "secondary", text: "Find", onclick: () => findMembers() }),
    results, picked);
  const drawPicked = () => {
    picked.replaceChildren(...[...chosen].map(([id, label]) => h("li", {}, label, " ",
      h("button", { type: "button", class: "secondary", text: "Remove", "aria-label": `Remove ${label}`, onclick: () => { chosen.delete(id); drawPicked(); } }))));
    changed();
  };
  async function findMembers() {
    const text = find.value.trim();
    const byMobile = MOBILE_SEARCH.test(text);
    const page = await api("GET", "/api/v1/contacts?" + q({ businessId: biz(), limit: 50, search: byMobile ? text : "", name: byMobile ? "" : text }));
    results.replaceChildren(page.contacts.length ? h("ul", { class: "plain" }, page.contacts.map((c) => h("li", {},
      h("button", { type: "button", class: "secondary", text: `Add ${c.name || c.mobile}`, onclick: () => { chosen.set(c.id, `${c.name} (${c.mobile})`); drawPicked(); } }))))
      : h("p", { class: "muted", text: "No contact matches." }));
  }
  find.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); findMembers(); } });
  return { box, chosen, picked, results };
}

// The campaign's first iteration as the form says it, on channel `c` with
// agent `agentId`: a missing agent, a budget that is not a number of
// credits or an empty audience is refused before anything is sent.
function campaignIteration(form, c, agentId, chosen) {
  const it = { channel: c, agentId, maxRetries: Number(form.querySelector("#cmp-retries").value || 0) };
  if (!it.agentId) throw new ApiError(400, { message: `Create a ${c} agent first.` });
  const budget = form.querySelector("#cmp-budget").value.trim();
  if (c === "voice" && budget) {
    const n = Number(budget);
    if (!Number.isFinite(n) || n <= 0) throw new ApiError(400, { message: "Check the fields marked below.", details: [{ field: "budget", message: "The budget cap must be a number of credits above 0" }] });
    it.maxSpendMicrocredits = Math.round(n * 1e6);
  }
  if (c === "chatapp") it.openingMessage = form.querySelector("#cmp-opening").value;
  if (form.querySelector("input[name=audience]:checked").value === "contacts") {
    it.contactIds = [...chosen.keys()];
    if (!it.contactIds.length) throw new ApiError(400, { message: "Add at least one contact.", details: [{ field: "find", message: "Find and add at least one contact." }] });
  } else {
    it.categoryIds = checked(form, "categoryIds");
    if (!it.categoryIds.length) throw new ApiError(400, { message: "Choose at least one category.", details: [{ field: "categoryIds", message: "Choose at least one category." }] });
  }
  return it;
}

// Who an audience leaves out, by name, each with why (the preview names
// the first 50; the counts above cover them all).
const LEFT_OUT_WHY = { notFound: "not a contact of this business", blocked: "blocked", outOfScope: "outside the agent's categories", variableMissing: "missing" };
function leftOut(list, admission) {
  if (!list.length) return null;
  const total = Object.values(admission.skipped || {}).reduce((a, b) => a + b, 0);
  return h("details", { class: "left-out", open: list.length <= 5 },
    h("summary", { text: `Who is left out${total > list.length ? ` (the first ${list.length} of ${total})` : ""}` }),
    h("ul", { class: "plain" }, list.map((x) => h("li", {},
      x.name ? h("a", { href: `#/contacts/${x.contactId}`, text: x.name }) : h("span", { text: "An unknown contact" }),
      x.mobile ? ` (${x.mobile})` : "", ": ",
      x.reason === "variableMissing" ? `no ${x.missingFields.map((f) => f.replace(/_/g, " ")).join(", ") || "value the agent needs"}` : LEFT_OUT_WHY[x.reason] || x.reason))));
}

// Who a draft admitted (or, for a preview, would admit), and who was
// skipped and why, in a sentence.
function admissionText(a, preview) {
  const why = { notFound: "not contacts of this business", blocked: "blocked", outOfScope: "outside the agent's categories", variableMissing: "missing a variable the agent needs" };
  const skipped = Object.entries(a.skipped || {}).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${why[k] || k}`);
  const rest = skipped.length ? `; ${preview ? "it would skip" : "skipped"}: ${skipped.join(", ")}` : `; ${preview ? "nobody would be skipped" : "none skipped"}`;
  return `${preview ? `This audience would admit ${a.accepted}` : `${a.accepted} admitted`}${rest}.`;
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
  // The page's own address: drawn again after an action or a poll, it
  // draws nothing once the reader has left.
  const here = `#/campaigns/${id}`;
  const base = `/api/v1/campaigns/${id}`;
  const d = await api("GET", `${base}?` + q({ businessId: biz() }));
  const its = await api("GET", `${base}/iterations?` + q({ businessId: biz(), limit: 200 }));
  const write = canWrite("campaigns:write");
  const cur = d.currentIteration;
  const act = (action) => once(async (sub) => {
    await api("PATCH", base, { businessId: biz(), action }, sub); toast({ start: "Iteration started.", pause: "Iteration paused.", cancel: "Iteration cancelled." }[action]);
    // Drawn again only if the reader is still here (a page drawn from
    // another address would take that address as its own, and keep polling).
    if (location.hash === here) campaignPage(id);
  });
  // Start (and Resume) ask first, saying who and the most it can cost.
  const confirmBox = h("div", { id: "start-confirm" });
  const askStart = once(async () => {
    const text = await startCost(cur);
    const yes = h("button", { type: "button", text: cur.status === "draft" ? "Yes, start" : "Yes, resume", onclick: act("start") });
    confirmBox.replaceChildren(h("section", { class: "card confirm", role: "alertdialog", "aria-labelledby": "start-confirm-title", "aria-describedby": "start-confirm-text" },
      h("h2", { id: "start-confirm-title", text: cur.status === "draft" ? `Start ${d.campaign.name}?` : `Resume ${d.campaign.name}?` }),
      h("p", { id: "start-confirm-text", text }),
      yes, h("button", { type: "button", class: "secondary", text: "Not now", onclick: () => confirmBox.replaceChildren() })));
    confirmBox.scrollIntoView({ block: "nearest" });
    yes.focus();
  });
  const actions = write ? h("p", {},
    cur.status === "draft" || cur.status === "paused" ? h("button", { type: "button", text: cur.status === "draft" ? "Start" : "Resume", onclick: askStart }) : null,
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
  const people = h("section", { id: "recipients", "aria-labelledby": "recipients-title" });
  const polling = its.iterations.some((it) => it.status === "running");
  // A poll draws the page again: the recipients' page and filter stay.
  const kept = campaignPage.kept && campaignPage.kept.id === id ? campaignPage.kept : { id, iteration: cur.id, outcome: "", cursor: null };
  campaignPage.kept = kept;
  await recipientsSection(people, id, its.iterations, kept);
  if (location.hash !== here) return;
  const focused = document.activeElement && document.activeElement.id;
  show(
    h("p", {}, h("a", { href: "#/campaigns", text: "← Campaigns" })),
    h("h1", { text: d.campaign.name }),
    h("p", { text: d.campaign.objective }),
    actions,
    confirmBox,
    h("h2", { text: "Iterations" }),
    table(["#", "Channel", "Status", "Progress", "Spent"], iterationRows, "No iterations."),
    campaignOutcomes(its.iterations),
    people,
    followUp,
    h("h2", { text: "AI summary runs" }),
    runs);
  if (focused && document.getElementById(focused)) document.getElementById(focused).focus({ preventScroll: true });
  await drawRuns(id, runs);
  // The reader may have moved on while the runs loaded: a poll started now
  // would outlive the page (route() has stopped the others) and draw it
  // over the next one.
  if (polling && location.hash === here) {
    keepPolling(async () => { if (location.hash === here) await campaignPage(id); return true; }, 2000);
  }
}

// What starting (or resuming) the current iteration means: how many people
// it reaches and, for calls, the most it can cost (each call reserves the
// started 20-second blocks of the agent's longest call at the business's
// price; a budget cap lowers that).
async function startCost(it) {
  const waiting = it.counts.pending;
  const who = `${waiting.toLocaleString()} ${waiting === 1 ? "person" : "people"}`;
  if (it.channel !== "voice") return `It sends an opening message to ${who}. Chat app messages cost no credits.`;
  const [agent, voice] = await Promise.all([findAgent(it.agentId).catch(() => null), api("GET", "/console/api/voice").catch(() => null)]);
  const longest = (agent && agent.voiceSettings && agent.voiceSettings.maxCallDurationSeconds) || 600;
  if (!voice) return `It calls ${who}, each call up to ${seconds(longest)}.`;
  const blockSeconds = voice.voice.blockSeconds || 20;
  const perCall = Math.ceil(longest / blockSeconds) * voice.voice.pricePerBlockMicrocredits;
  let most = perCall * waiting;
  const cap = it.maxSpendMicrocredits;
  const capped = cap !== null && cap !== undefined && cap - (it.spentMicrocredits || 0) < most;
  if (capped) most = Math.max(cap - (it.spentMicrocredits || 0), 0);
  return `It calls ${who}, each call up to ${seconds(longest)}. The most it can cost is ${credits(most)}` +
    (capped ? " (its budget cap)" : ` (${credits(perCall)} a call)`) +
    `; a call is charged only for the time it was connected. Available now: ${credits(voice.credits.availableMicrocredits)}.`;
}

// An iteration's recipients, a page at a time: who, the outcome, the call
// (with its length and who ended it) or the opening and the reply, with
// links to the contact and the call. `kept` holds the iteration, outcome
// filter and page shown, across the page's live redraws.
async function recipientsSection(box, campaignId, iterations, kept) {
  const its = [...iterations].sort((a, b) => b.sequence - a.sequence);
  if (!its.some((it) => it.id === kept.iteration)) kept.iteration = its[0].id;
  const it = its.find((x) => x.id === kept.iteration);
  const filters = h("form", { class: "inline", role: "search", "aria-label": "Recipients shown" },
    its.length > 1 ? [h("label", { for: "rcp-iteration", text: "Iteration" }),
      h("select", { id: "rcp-iteration", name: "iteration" }, its.map((x) => h("option", { value: x.id, selected: x.id === kept.iteration, text: `${x.sequence} (${CHANNEL_WORDS[x.channel] || x.channel})` })))] : null,
    h("label", { for: "rcp-outcome", text: "Outcome" }),
    h("select", { id: "rcp-outcome", name: "outcome" }, h("option", { value: "", text: "any" }),
      Object.keys(it.counts).filter((k) => k !== "total" && it.counts[k] > 0).map((k) => h("option", { value: k, selected: k === kept.outcome, text: `${k.replace(/_/g, " ")} (${it.counts[k]})` }))));
  const list = h("div", { id: "recipient-list" });
  const draw = async () => {
    const page = await api("GET", `/api/v1/campaigns/${campaignId}/recipients?` + q({ businessId: biz(), iterationId: kept.iteration, outcome: kept.outcome, cursor: kept.cursor, limit: 25 }))
      .catch((err) => err);
    if (page instanceof Error) { list.replaceChildren(h("p", { class: "form-error", text: page.message })); return; }
    const rows = page.recipients.map((r) => h("tr", {},
      h("td", { class: "name" }, r.contactExists ? h("a", { href: `#/contacts/${r.contactId}`, text: r.name || r.mobile }) : h("span", { text: `${r.name || "A contact"} (deleted)` })),
      h("td", { text: r.mobile || "" }),
      h("td", { text: r.outcome }),
      h("td", {}, recipientWhat(r)),
      h("td", { text: String(r.attempts) })));
    list.replaceChildren(...kids([table(["Contact", "Mobile", "Outcome", "Call or reply", "Attempts"], rows, kept.outcome ? "Nobody with this outcome." : "Nobody in this iteration."),
      kept.cursor ? h("button", { type: "button", class: "secondary", text: "First page", onclick: () => { kept.cursor = null; draw(); } }) : null,
      page.nextCursor ? h("button", { type: "button", class: "secondary", text: "Next page", onclick: () => { kept.cursor = page.nextCursor; draw(); } }) : null]));
  };
  filters.addEventListener("change", () => {
    kept.iteration = filters.iteration ? filters.iteration.value : kept.iteration;
    kept.outcome = filters.outcome.value;
    kept.cursor = null;
    draw();
  });
  await draw();
  box.replaceChildren(h("h2", { id: "recipients-title", text: "Recipients" }),
    h("p", { class: "muted", text: `Iteration ${it.sequence}: ${it.counts.total.toLocaleString()} ${it.counts.total === 1 ? "person" : "people"}.` }), filters, list);
}

// A recipient's call (outcome, length, who ended it, a link) or opening
// message and reply.
function recipientWhat(r) {
  if (r.call) {
    const c = r.call;
    const bits = [c.durationSeconds ? seconds(c.durationSeconds) : null, ENDED_WORDS[c.endedBy] || null].filter(Boolean);
    return h("span", {}, h("a", { href: `#/calls/${c.id}`, text: `Call ${c.status.replace(/_/g, " ")}`, "aria-label": `Open the call to ${r.name || r.mobile}` }),
      bits.length ? ` · ${bits.join(" · ")}` : "");
  }
  if (r.reply) return h("span", {}, h("q", { class: "reply-text", text: r.reply.text || "(a picture)" }), ` · ${when(r.reply.receivedAt)}`);
  if (r.opening) return `Opening ${r.opening.status.replace(/_/g, " ")}`;
  return h("span", { class: "muted", text: "Not reached yet" });
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
  if (box.isConnected && list.summaryRuns.some((r) => ["queued", "running"].includes(r.status))) {
    keepPolling(async () => { await drawRuns(campaignId, box); return true; }, 1500);
  }
}

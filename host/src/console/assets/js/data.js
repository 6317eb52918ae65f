// The console's webhooks and data sources pages.
"use strict";

// ---- webhooks ------------------------------------------------------------------------------

const SIGNING_SECRET_HINT = "Copy it now: it is not shown again. Verify each delivery's signature with it.";

async function webhooksPage() {
  const here = location.hash;
  if (!canWrite("webhooks:write")) {
    show(h("h1", { text: "Webhooks" }), h("p", { class: "muted", text: "Managing webhooks takes an owner." }));
    return;
  }
  const [subs, channels, contract] = await Promise.all([
    api("GET", "/api/v1/webhook-subscriptions?" + q({ businessId: biz(), limit: 200 })),
    api("GET", "/api/v1/channels?" + q({ businessId: biz() })),
    api("GET", "/api/v1/contracts/whatsapp-automation"),
  ]);
  const rows = subs.subscriptions.map((w) => h("tr", {},
    h("td", { text: w.channel }),
    h("td", { text: w.phoneNumberId || w.providerAccountId || "" }),
    h("td", {}, h("code", { text: w.callbackUrl })),
    h("td", { text: w.events.join(", ") }),
    h("td", { text: w.status }),
    h("td", {}, h("code", { text: `…${w.secretLast4}` })),
    h("td", { class: "actions" },
      h("a", { href: `#/webhooks/${w.id}`, text: "Deliveries" }),
      w.status !== "revoked" ? [
        h("button", { type: "button", class: "secondary", text: w.status === "paused" ? "Resume" : "Pause", onclick: once(async (sub) => {
          await api("PATCH", `/api/v1/webhook-subscriptions/${w.id}`, { businessId: biz(), status: w.status === "paused" ? "active" : "paused" }, sub); await webhooksPage();
        }) }),
        h("button", { type: "button", class: "secondary", text: "Rotate secret", onclick: once(async (sub) => {
          if (!confirm("Rotate the signing secret? Deliveries are signed with the new one from now on.")) return;
          const r = await api("POST", `/api/v1/webhook-subscriptions/${w.id}/rotate-secret`, { businessId: biz() }, sub); await webhooksPage(); shownOnce("secret-value", "The new signing secret", SIGNING_SECRET_HINT, r.signingSecret);
        }) }),
        h("button", { type: "button", class: "danger", text: "Revoke", onclick: once(async (sub) => {
          if (!confirm("Revoke this subscription for good?")) return;
          await api("DELETE", `/api/v1/webhook-subscriptions/${w.id}?` + q({ businessId: biz() }), undefined, sub); await webhooksPage();
        }) }),
      ] : null)));
  const targets = [];
  for (const c of channels.channels) {
    for (const conn of c.connections) {
      targets.push(h("option", { value: JSON.stringify({ channel: c.key, phoneNumberId: conn.phoneNumberId, providerAccountId: conn.providerAccountId }),
        text: `${c.label}: ${conn.label || conn.phoneNumberId || conn.providerAccountId}` }));
    }
  }
  const form = h("form", { class: "card", novalidate: true },
    h("h2", { text: "Subscribe" }),
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "w-target", text: "Number or account" }),
    h("select", { id: "w-target", name: "target" }, targets),
    h("label", { for: "w-url", text: "Callback URL" }),
    h("input", { id: "w-url", name: "callbackUrl", type: "url", placeholder: "https://example.com/hooks", required: true }),
    h("fieldset", {}, h("legend", { text: "Events" }),
      contract.eventTypes.map((e) => h("label", { class: "check" }, h("input", { type: "checkbox", name: "events", value: e }), " ", e))),
    h("label", { class: "check" }, h("input", { type: "checkbox", name: "externalAutomation" }),
      " My backend answers these customers itself (external automation; the contract requires it)"),
    h("button", { type: "submit", text: "Create subscription" }));
  onSubmit(form, async (sub) => {
    if (!form.target.value) throw new ApiError(400, { message: "Connect a chatapp number or a photoapp account first." });
    const t = JSON.parse(form.target.value);
    const channel = t.channel;
    const body = { businessId: biz(), channel, callbackUrl: form.callbackUrl.value, externalAutomation: form.externalAutomation.checked,
      events: [...form.querySelectorAll("input[name=events]:checked")].map((i) => i.value).filter((v) => v.startsWith(channel + ".")) };
    if (t.phoneNumberId) body.phoneNumberId = t.phoneNumberId;
    if (t.providerAccountId) body.providerAccountId = t.providerAccountId;
    const r = await api("POST", "/api/v1/webhook-subscriptions", body, sub);
    await webhooksPage();
    shownOnce("secret-value", "Your signing secret", SIGNING_SECRET_HINT, r.signingSecret);
  });
  showOn(here, h("h1", { text: "Webhooks" }),
    table(["Channel", "Number or account", "Callback URL", "Events", "Status", "Secret", ""], rows, "No subscriptions yet."),
    form);
}

async function deliveriesPage(id) {
  const list = h("div", {});
  const path = `/api/v1/webhook-subscriptions/${id}`;
  const load = (cursor) => api("GET", `${path}/deliveries?` + q({ businessId: biz(), cursor, limit: 50 })).then((page) => ({
    nextCursor: page.nextCursor,
    rows: page.attempts.map((a) => h("tr", {},
      h("td", { text: when(a.attemptedAt) }),
      h("td", { text: a.eventType }),
      h("td", {}, h("code", { text: a.eventId })),
      h("td", { text: String(a.retryNumber) }),
      h("td", { text: a.outcome + (a.statusCode ? ` (${a.statusCode})` : "") + (a.error ? `: ${a.error}` : "") }),
      h("td", { text: a.latencyMs === null ? "" : `${a.latencyMs} ms` }),
      h("td", {}, canWrite("webhooks:write") ? h("button", { type: "button", class: "secondary", text: "Redeliver", "aria-label": `Redeliver ${a.eventId}`, onclick: once(async (sub) => {
        await api("POST", `${path}/redeliver`, { businessId: biz(), eventId: a.eventId }, sub); toast("Sent again; the new attempt appears here.");
      }) }) : null))),
  }));
  show(h("p", {}, h("a", { href: "#/webhooks", text: "← Webhooks" })), h("h1", { text: "Delivery log" }), list);
  await paged(list, ["Attempted", "Event", "Event id", "Retry", "Outcome", "Latency", ""], "No deliveries yet.", load, null);
}

// ---- data sources --------------------------------------------------------------------------

const FIELD_TYPES = ["text", "number", "integer", "boolean", "date", "datetime", "phone", "email"];
const UPLOAD_FORMATS = { csv: "csv", tsv: "tsv", json: "json", xlsx: "xlsx", xlsm: "xlsm" };

async function dataSourcesPage() {
  const page = await api("GET", "/api/v1/data-sources?" + q({ businessId: biz(), limit: 200 }));
  const rows = page.dataSources.map((d) => h("tr", {},
    h("td", {}, h("a", { href: `#/data-sources/${d.id}`, text: d.name })),
    h("td", { text: `${d.class} ${d.kind}${d.builtIn ? " (built in)" : ""}` }),
    h("td", { text: d.status }),
    h("td", { text: String(d.itemCount) }),
    h("td", { text: versionText(d) })));
  const nodes = [h("h1", { text: "Data sources" }), table(["Name", "Kind", "Status", "Items", "Version in use"], rows, "No data sources.")];
  if (canWrite("data_sources:write")) {
    const form = h("form", { class: "card", novalidate: true },
      h("h2", { text: "New data source" }),
      h("p", { class: "form-error", role: "alert" }),
      h("label", { for: "ds-name", text: "Name" }),
      h("input", { id: "ds-name", name: "name", maxlength: 120, required: true }),
      h("label", { for: "ds-class", text: "Kind" }),
      h("select", { id: "ds-class", name: "class" },
        h("option", { value: "structured", text: "A table (upload CSV, TSV, JSON or XLSX)" }),
        h("option", { value: "unstructured", text: "Text knowledge" })),
      h("label", { for: "ds-content", text: "Text (text knowledge only)" }),
      h("textarea", { id: "ds-content", name: "content", rows: 5 }),
      h("button", { type: "submit", text: "Create data source" }));
    onSubmit(form, async (sub) => {
      const structured = form.class.value === "structured";
      const body = structured ? { businessId: biz(), name: form.name.value, class: "structured", kind: "table" }
        : { businessId: biz(), name: form.name.value, class: "unstructured", kind: "text", content: form.content.value };
      const r = await api("POST", "/api/v1/data-sources", body, sub);
      location.hash = `#/data-sources/${r.dataSource.id}`;
    });
    nodes.push(form);
  }
  show(...nodes);
}

// Which version answers: only uploaded tables have versions; the built-in
// Contacts source is the live contact list and a text source its text.
function versionText(d) {
  if (d.builtIn) return "live contact list";
  if (d.class !== "structured") return "its text (no versions)";
  return d.activeVersionId ? "an activated upload" : "none activated yet";
}

// The facts of a data source (drawn again when a version is activated).
function sourceFacts(d) {
  return h("dl", { class: "facts", id: "source-facts" },
    h("dt", { text: "Kind" }), h("dd", { text: `${d.class} ${d.kind}${d.builtIn ? " (built in)" : ""}` }),
    h("dt", { text: "Status" }), h("dd", { text: d.status }),
    h("dt", { text: "Items" }), h("dd", { id: "source-items", text: String(d.itemCount) }),
    h("dt", { text: "In use" }), h("dd", { text: versionText(d) }),
    h("dt", { text: "Fields" }), h("dd", { text: d.fields.map((f) => `${f.key} (${f.type})`).join(", ") || "none yet" }));
}

async function findSource(id) {
  const page = await api("GET", "/api/v1/data-sources?" + q({ businessId: biz(), limit: 200 }));
  return page.dataSources.find((x) => x.id === id) || null;
}

// Sends the file itself as the body (the raw form of operation 21), so a
// large file needs no base64 and the browser reports the upload's progress.
function uploadRaw(sourceId, file, format, onProgress, sub) {
  return new Promise((resolve, reject) => {
    const x = new XMLHttpRequest();
    x.open("POST", "/api/v1/data-sources/upload?" + q({ businessId: biz(), dataSourceId: sourceId, fileName: file.name, format }));
    x.setRequestHeader("Content-Type", "application/octet-stream");
    x.setRequestHeader("X-CSRF-Token", state.me.csrfToken);
    x.setRequestHeader("Idempotency-Key", sub.key("POST", "/api/v1/data-sources/upload"));
    x.upload.onprogress = (e) => { if (e.lengthComputable) onProgress(e.loaded / e.total); };
    x.onload = () => {
      let payload = null;
      try { payload = JSON.parse(x.responseText); } catch (_) { /* not JSON */ }
      if (x.status === 202 && payload && payload.ok) resolve(payload.data);
      else reject(new ApiError(x.status, payload && payload.error));
    };
    x.onerror = () => reject(new ApiError(0, { message: "the upload was interrupted; try again" }));
    x.send(file);
  });
}

async function dataSourcePage(id, ingestionId) {
  const d = await findSource(id);
  if (!d) { show(h("h1", { text: "No such data source" })); return; }
  const nodes = [
    h("p", {}, h("a", { href: "#/data-sources", text: "← Data sources" })),
    h("h1", { text: d.name }),
    sourceFacts(d),
  ];
  const review = h("section", { id: "ingestion", "aria-live": "polite" });
  if (d.class === "structured" && !d.builtIn && canWrite("data_sources:write")) {
    const form = h("form", { class: "card", novalidate: true },
      h("h2", { text: "Upload a new version" }),
      h("p", { class: "form-error", role: "alert" }),
      h("label", { for: "ds-file", text: "File (CSV, TSV, JSON, XLSX or XLSM)" }),
      h("input", { id: "ds-file", name: "file", type: "file", accept: ".csv,.tsv,.json,.xlsx,.xlsm", required: true }),
      h("progress", { id: "upload-progress", max: 1, value: 0, hidden: true, "aria-label": "Upload progress" }),
      h("button", { type: "submit", text: "Upload" }));
    onSubmit(form, async (sub) => {
      const file = form.file.files[0];
      if (!file) throw new ApiError(400, { message: "Choose a file." });
      const ext = file.name.split(".").pop().toLowerCase();
      const format = UPLOAD_FORMATS[ext];
      if (!format) throw new ApiError(400, { message: "The file must end in .csv, .tsv, .json, .xlsx or .xlsm." });
      const bar = form.querySelector("progress");
      bar.hidden = false;
      try {
        const r = await uploadRaw(id, file, format, (f) => { bar.value = f; }, sub);
        bar.value = 1;
        // The address names the version (to come back to it) without
        // rebuilding the page.
        history.replaceState(null, "", `#/data-sources/${id}/ingestions/${r.ingestionId}`);
        watchIngestion(review, r.ingestionId, id);
      } catch (err) { bar.hidden = true; throw err; }
    });
    nodes.push(form);
  }
  nodes.push(review);
  show(...nodes);
  if (ingestionId) watchIngestion(review, ingestionId, id);
}

// Shows an ingestion's stage as it moves, its issues, and the review form
// when columns need a type.
// Once the version is active, the source's facts (items, fields) are read
// again: they changed.
function watchIngestion(box, ingestionId, sourceId) {
  const draw = async (known) => {
    const r = known || await api("GET", "/api/v1/data-sources/ingestions?" + q({ businessId: biz(), ingestionId }));
    const g = r.ingestion;
    const nodes = [h("h2", { text: `Version ${g.versionNumber}` }),
      h("p", { id: "ingestion-stage", text: `Stage: ${g.stage.replace("_", " ")} · ${g.rowCount} rows · ${g.issueCount} issues` + (g.failureReason ? ` · ${g.failureReason}` : "") })];
    if (r.issues.length) nodes.push(h("ul", {}, r.issues.map((i) => h("li", { text: `${i.row ? "row " + i.row + ", " : ""}${i.column ? i.column + ": " : ""}${i.problem}` }))));
    if (["needs_review", "ready"].includes(g.stage) && canWrite("data_sources:write")) {
      const form = h("form", { class: "card", novalidate: true },
        h("p", { class: "form-error", role: "alert" }),
        r.columnsNeedingReview.map((c, n) => [
          h("label", { for: `col-${n}`, text: `${c.column} (samples: ${(c.samples || []).slice(0, 3).join(", ")})` }),
          h("select", { id: `col-${n}`, name: c.column }, FIELD_TYPES.map((t) => h("option", { value: t, text: t, selected: t === c.suggestedType })))]),
        h("button", { type: "submit", text: "Activate this version" }));
      onSubmit(form, async (sub) => {
        const columns = r.columnsNeedingReview.map((c, n) => ({ column: c.column, type: form.querySelector(`#col-${n}`).value }));
        const next = await api("PATCH", "/api/v1/data-sources/ingestions", { businessId: biz(), ingestionId, columns, activate: true }, sub);
        if (next && next.ingestion) await draw(next);
        watchIngestion(box, ingestionId, sourceId);
      });
      nodes.push(form);
    }
    box.replaceChildren(...kids(nodes));
    if (g.stage === "active") {
      const d = await findSource(sourceId);
      const facts = document.getElementById("source-facts");
      if (d && facts) facts.replaceWith(sourceFacts(d));
    }
    return ["active", "failed", "needs_review", "ready"].includes(g.stage);
  };
  keepPolling(() => draw(null), 700);
  draw(null);
}

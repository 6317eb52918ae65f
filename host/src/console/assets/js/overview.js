// The overview (route #/): the business at a glance for a period of days:
// totals, messages and calls per day, the delivery outcomes of messages
// sent and what was spent, from the daily figures of the API (ours, 67-69),
// each chart only when the role may read its figures.
"use strict";

const PERIODS = [7, 14, 30, 90];

async function overviewPage() {
  const here = location.hash;
  const me = state.me;
  const days = PERIODS.includes(Number(overviewPage.days)) ? Number(overviewPage.days) : 14;
  const read = (what, scope) => (canWrite(scope) ? api("GET", `/api/v1/stats/${what}?` + q({ businessId: biz(), days })).catch((err) => err) : Promise.resolve(null));
  const [messages, calls, money, account] = await Promise.all([
    read("messages", "communications:read"), read("calls", "voice:read"), read("credits", "credits:read"),
    canWrite("credits:read") ? api("GET", "/api/v1/credits?" + q({ businessId: biz(), limit: 1 })).catch(() => null) : null,
  ]);
  const period = h("form", { class: "inline", role: "search", "aria-label": "Time span" },
    h("label", { for: "period", text: "Period" }),
    h("select", { id: "period", name: "days" }, PERIODS.map((n) => h("option", { value: n, selected: n === days, text: `Last ${n} days` }))),
    h("button", { type: "submit", class: "secondary", text: "Filter" }));
  period.addEventListener("submit", (e) => { e.preventDefault(); overviewPage.days = period.elements.days.value; overviewPage(); });

  const sum = (d, f) => (d && d.days ? d.days.reduce((n, x) => n + f(x), 0) : null);
  const totals = h("div", { class: "stats", "aria-label": "Totals" },
    sum(messages, (x) => x.outbound) !== null ? stat("Messages sent", sum(messages, (x) => x.outbound).toLocaleString()) : null,
    sum(messages, (x) => x.inbound) !== null ? stat("Messages received", sum(messages, (x) => x.inbound).toLocaleString()) : null,
    sum(calls, (x) => x.calls) !== null ? stat("Calls", sum(calls, (x) => x.calls).toLocaleString()) : null,
    sum(money, (x) => x.chargedMicrocredits) !== null ? stat("Spent", credits(sum(money, (x) => x.chargedMicrocredits))) : null,
    account ? stat("Available now", credits(account.availableMicrocredits)) : null);

  const failed = (d) => d instanceof Error ? h("p", { class: "form-error", text: plain({ message: d.message }) }) : null;
  // Up to a month a bar a day; longer, a bar a week (90 bars a day are
  // hairlines). The last bar is today's, and always labelled.
  const weekly = days > 31;
  const spans = (d) => {
    const out = [];
    for (let end = d.days.length; end > 0; end -= weekly ? 7 : 1) out.unshift(d.days.slice(Math.max(0, end - (weekly ? 7 : 1)), end));
    return out;
  };
  const labels = (d) => spans(d).map((g, i, all) => (i === all.length - 1 ? (weekly ? "This week" : "Today") : weekly ? `Week of ${dayLabel(g[0].date)}` : dayLabel(g[0].date)));
  const per = (d, f) => spans(d).map((g) => g.reduce((n, x) => n + f(x), 0));
  const unit = weekly ? "week" : "day";
  const charts = h("div", { class: "charts" },
    messages && !failed(messages) ? (sum(messages, (x) => x.inbound + x.outbound)
      ? chart(`Messages per ${unit}`, "bar", labels(messages), [
        { label: "Received", data: per(messages, (x) => x.inbound) },
        { label: "Sent", data: per(messages, (x) => x.outbound) }], { stacked: true, labelHeading: weekly ? "Week" : "Day", lastLabel: true })
      : empty(`No messages in the last ${days} days.`, h("a", { href: "#/messages", text: "Send a message" }))) : failed(messages),
    messages && !failed(messages) && messages.outcomes.length
      ? chart("Delivery of messages sent", "doughnut", messages.outcomes.map((o) => o.status.replace(/_/g, " ")),
        [{ label: "Messages", data: messages.outcomes.map((o) => o.count), colours: messages.outcomes.map((o, i) => statusColour(o.status, i)) }], { labelHeading: "Status" })
      : null,
    calls && !failed(calls) ? (sum(calls, (x) => x.calls)
      ? chart(`Calls per ${unit}`, "bar", labels(calls), [
        { label: "Calls", data: per(calls, (x) => x.calls) },
        { label: "Completed", data: per(calls, (x) => x.completed), colour: statusColour("completed", 1) }], { labelHeading: weekly ? "Week" : "Day", lastLabel: true })
      : empty(`No calls in the last ${days} days.`, h("a", { href: "#/calls", text: "Calls" }))) : failed(calls),
    calls && !failed(calls) && calls.outcomes.length
      ? chart("Call outcomes", "doughnut", calls.outcomes.map((o) => o.status.replace(/_/g, " ")),
        [{ label: "Calls", data: calls.outcomes.map((o) => o.count), colours: calls.outcomes.map((o, i) => statusColour(o.status, i)) }], { labelHeading: "Status" })
      : null,
    money && !failed(money) ? (sum(money, (x) => x.chargedMicrocredits)
      ? chart(`Spend per ${unit} (credits)`, "bar", labels(money), [{ label: "Spent", data: per(money, (x) => x.chargedMicrocredits).map((v) => v / 1e6), colour: statusColour("failed", 2) }],
        { format: creditFigure, labelHeading: weekly ? "Week" : "Day", lastLabel: true })
      : empty(`Nothing spent in the last ${days} days.`, h("a", { href: "#/credits", text: "Credits" }))) : failed(money));

  showOn(here,
    h("h1", { text: me.businessName }),
    h("p", { class: "muted", text: `Signed in as ${me.email} (${me.role}). Days end at midnight UTC.` }),
    period,
    totals,
    charts,
    h("p", { class: "muted", text: `You stay signed in until ${when(me.expiresAt)}, or until 2 hours without using the console.` }));
}

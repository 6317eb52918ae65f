// Charts: the one place the console calls Chart.js (vendor/chart.umd.min.js,
// loaded before this file). A chart is a <figure> with a caption, a canvas
// that says what it shows to a screen reader, and its figures as a table
// under "Figures" (the same numbers, for reading and for the browser
// tests); colours come from the stylesheet's tokens, so dark mode follows.
"use strict";

// Series colours, in order (console.css --chart-1 … --chart-6).
function chartColours() {
  const css = getComputedStyle(document.documentElement);
  return [1, 2, 3, 4, 5, 6].map((i) => css.getPropertyValue(`--chart-${i}`).trim());
}

// The colour of a status: its tone (badge()'s) when it has one, else the
// series colour at `i`.
function statusColour(status, i) {
  const css = getComputedStyle(document.documentElement);
  const tone = Object.keys(BADGE_TONES).find((t) => BADGE_TONES[t].includes(status));
  const byTone = { ok: "--ok", info: "--chart-1", warn: "--chart-4", bad: "--danger" };
  return tone ? css.getPropertyValue(byTone[tone]).trim() : chartColours()[i % 6];
}

// Charts whose canvas was shown and then left the page (a page drawn
// again) are destroyed; one not shown yet (being built) is kept.
const liveCharts = new Map();
function forgetDetachedCharts() {
  for (const [c, seen] of liveCharts) {
    if (c.canvas.isConnected) liveCharts.set(c, true);
    else if (seen) { c.destroy(); liveCharts.delete(c); }
  }
}

// A chart: `kind` is bar, line or doughnut; `labels` the x values (days,
// statuses, iterations); `series` [{label, data, colour?}]; `options`
// {stacked, horizontal, format(value) -> text}. The figures table has one
// row per label and one column per series.
function chart(title, kind, labels, series, options) {
  forgetDetachedCharts();
  const o = options || {};
  const format = o.format || ((v) => v.toLocaleString());
  const css = getComputedStyle(document.documentElement);
  const ink = css.getPropertyValue("--muted").trim();
  const line = css.getPropertyValue("--line").trim();
  const colours = chartColours();
  const canvas = h("canvas", { role: "img", "aria-label": `${title}: chart; its figures are in the table below it` });
  const datasets = series.map((s, i) => {
    const colour = s.colour || colours[i % colours.length];
    return {
      label: s.label, data: s.data,
      backgroundColor: kind === "doughnut" ? (s.colours || labels.map((_, j) => colours[j % colours.length])) : colour,
      borderColor: kind === "doughnut" ? css.getPropertyValue("--paper").trim() : colour,
      borderWidth: kind === "line" ? 2 : 1, pointRadius: kind === "line" ? 2 : undefined, tension: 0.2, maxBarThickness: 28,
    };
  });
  // Whole-number ticks for counts; a formatted axis (credits) is fractional.
  const axis = (stacked) => ({ stacked, grid: { color: line }, ticks: o.format ? { color: ink } : { color: ink, precision: 0 }, beginAtZero: true });
  const config = {
    type: kind,
    data: { labels, datasets },
    options: {
      animation: false, responsive: true, maintainAspectRatio: false,
      indexAxis: o.horizontal ? "y" : "x",
      plugins: {
        // A legend whenever a colour needs naming: several series, a
        // doughnut's slices, or a one-series chart whose series is a kind
        // of thing (one campaign outcome).
        legend: { display: series.length > 1 || kind === "doughnut" || !!o.legend, labels: { color: ink, boxWidth: 12 } },
        tooltip: { callbacks: { label: (c) => `${c.dataset.label || c.label}: ${format(c.parsed.y !== undefined && kind !== "doughnut" ? (o.horizontal ? c.parsed.x : c.parsed.y) : c.parsed)}` } },
      },
      scales: kind === "doughnut" ? {} : { x: axis(!!o.stacked), y: axis(!!o.stacked) },
    },
  };
  if (o.format && kind !== "doughnut") config.options.scales[o.horizontal ? "x" : "y"].ticks.callback = (v) => format(v);
  // Bars as wide as their slot allows, and the last label (today) always
  // shown: every nth label counted back from it.
  if (kind === "bar" && !o.horizontal) datasets.forEach((d) => { d.categoryPercentage = 0.9; d.barPercentage = 0.9; });
  if (o.lastLabel && kind !== "doughnut") {
    const longest = Math.max(...labels.map((l) => String(l).length));
    Object.assign(config.options.scales.x.ticks, { autoSkip: false, maxRotation: 0,
      // As many labels as fit the chart's width (about 7 px a character).
      callback: function (v, i) {
        const fit = Math.max(2, Math.floor(this.chart.width / (longest * 7 + 16)));
        const step = Math.max(1, Math.ceil(labels.length / fit));
        return (labels.length - 1 - i) % step === 0 ? labels[i] : "";
      } });
  }
  liveCharts.set(new Chart(canvas, config), false);
  const figures = h("table", { class: "figures" },
    h("caption", { class: "visually-hidden", text: title }),
    h("thead", {}, h("tr", {}, h("th", { scope: "col", text: o.labelHeading || "" }), series.map((s) => h("th", { scope: "col", text: s.label })))),
    h("tbody", {}, labels.map((l, j) => h("tr", {}, h("th", { scope: "row", text: l }), series.map((s) => h("td", { text: format(s.data[j]) }))))));
  const plot = h("div", { class: "plot" }, canvas);
  // A bar per row (iterations) needs room by rows, not a fixed height (set
  // through the CSSOM: the page's CSP allows no style attribute).
  if (o.horizontal) plot.style.height = `${Math.min(80 + 44 * labels.length, 480)}px`;
  return h("figure", { class: "chart", "data-chart": title },
    h("figcaption", { text: title }),
    plot,
    h("details", {}, h("summary", { text: "Figures" }), figures));
}

// A day as the charts label it ("26 Nov"); the figures are per UTC day.
function dayLabel(iso) {
  const d = new Date(iso + "T00:00:00Z");
  return isNaN(d) ? iso : d.toLocaleDateString(undefined, { day: "numeric", month: "short", timeZone: "UTC" });
}

// Credits as a chart's figure (microcredits are whole: six places at most).
function creditFigure(v) {
  return Number(v).toLocaleString(undefined, { maximumFractionDigits: 6 });
}

// A box a chart is loaded into: a loading state, then the chart, an empty
// state or what went wrong.
function chartBox(load) {
  const box = h("div", { class: "chart-box" }, loading("Loading the chart…"));
  load().then((nodes) => box.replaceChildren(...kids([nodes])))
    .catch((err) => box.replaceChildren(h("p", { class: "form-error", text: plain({ message: err.message }) })));
  return box;
}

// Campaign outcomes: one bar per iteration, stacked by members' outcome.
function campaignOutcomes(iterations) {
  const its = [...iterations].sort((a, b) => a.sequence - b.sequence);
  const outcomes = Object.keys((its[0] || { counts: {} }).counts).filter((k) => k !== "total" && its.some((it) => it.counts[k] > 0));
  if (!outcomes.length) return empty("No members yet: the outcomes chart fills in as iterations run.");
  return chart("Outcomes per iteration", "bar", its.map((it) => `Iteration ${it.sequence} (${it.channel})`),
    outcomes.map((k, i) => ({ label: k.replace(/_/g, " "), data: its.map((it) => it.counts[k]), colour: statusColour(k, i) })),
    { stacked: true, horizontal: true, labelHeading: "Iteration", legend: true });
}

// Credits over time: the balance at each day's end and what was charged.
function creditsOverTime(days) {
  return h("div", { class: "charts" }, chartBox(async () => {
    const d = await api("GET", "/api/v1/stats/credits?" + q({ businessId: biz(), days: days || 30 }));
    if (!d.days.some((x) => x.balanceMicrocredits || x.chargedMicrocredits || x.grantedMicrocredits)) {
      return empty(`No credits granted or charged in the last ${d.days.length} days.`);
    }
    const labels = d.days.map((x) => dayLabel(x.date));
    return [
      chart("Balance at each day's end (credits)", "line", labels, [{ label: "Balance", data: d.days.map((x) => x.balanceMicrocredits / 1e6) }],
        { format: creditFigure, labelHeading: "Day" }),
      chart("Credits granted and charged per day", "bar", labels, [
        { label: "Granted", data: d.days.map((x) => x.grantedMicrocredits / 1e6), colour: statusColour("completed", 0) },
        { label: "Charged", data: d.days.map((x) => x.chargedMicrocredits / 1e6), colour: statusColour("failed", 1) },
      ], { format: creditFigure, labelHeading: "Day" }),
    ];
  }));
}

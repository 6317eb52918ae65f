#!/usr/bin/env python3
"""Each bug check of issue 50 (point 6) fails without its fix: the console
is served with that one fix undone and tests/browser/everyday.py must then
fail at that bug's check (and not pass). The console's assets are built
into the binary, so the undone file is given to the browser instead of the
embedded one (support.py's SWITCHBOARD_TEST_CONSOLE_ASSETS, a Playwright
route); the server is the same binary. A fix that lives in the server (the
API's 120-character limit on agent names) is checked by the API tests.

Not part of ./dev test (about a minute and a half a case, a dozen cases):
run it after changing a fix or its check. Each case names the text of the
fix as it is now; a case whose text is gone fails, so the list follows the
code. docs/console.md lists the cases and what each run showed.
Usage: tests/browser/unfixed.py [BINARY] [CASE…]
"""
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ASSETS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "host", "src", "console", "assets")

# (case, [(file under assets/, the fix's text now, the text without the fix)], what the failing run must show)
CASES = [
    ("long-agent-name", [("console.css", "td { overflow-wrap: anywhere; }", "td { overflow-wrap: break-word; }")],
     "a 120-character agent name does not widen the agents page"),
    ("inbox-spill", [("console.css", ".turn { overflow-wrap: anywhere; min-width: 0; }", ".turn { }"),
                     ("console.css", ".conversation-meta { font-size: var(--t-sm); overflow-wrap: anywhere; min-width: 0; }", ".conversation-meta { font-size: var(--t-sm); }"),
                     ("console.css", "h1, h2, h3, p, li, dd, label, legend, summary, q, .cell { overflow-wrap: anywhere; }", "")],
     "the long sender and URL stay inside their cards and bubbles"),
    ("number-with-an-agent", [("js/agents.js", "disabled: !!holder,", "disabled: false,")],
     "a number that has an agent is not offered to a new one"),
    ("category-counts", [("js/contacts.js", "nodes.push(bulkForm(list, cats, refresh)", "nodes.push(bulkForm(list, cats, find)")],
     'gold.filter(has_text="2").wait_for()'),
    ("campaign-listed", [("js/campaigns.js", "    form.reset();\n    chosen.clear();", "    chosen.clear();")],
     "a created campaign is listed at once and the form is emptied"),
    ("setup-link-in-view", [("js/core.js", "  if (at) at.before(box); else main().prepend(box);\n  box.scrollIntoView({ block: \"center\" });\n"
                             "  box.querySelector(\"output\").focus({ preventScroll: true });\n  toast(`${title}: shown once, here.`);",
                             "  main().prepend(box);\n  box.querySelector(\"output\").focus();"),
                            ("js/core.js", 'h("output", { id, class: "key", tabindex: "-1", text: secret })', 'h("output", { id, class: "key", text: secret })')],
     "the one-time setup link is shown in view"),
    ("hidden-fields-agent", [("console.css", "[hidden] { display: none !important; }", "")],
     "a chat app agent shows neither photoapp nor voice fields"),
    ("opening-label-on-voice", [("js/campaigns.js", 'form.querySelector("#cmp-opening-box").hidden = c !== "chatapp";',
                                 'form.querySelector("#cmp-opening").hidden = form.querySelector("label[for=cmp-opening]").hidden = c !== "chatapp";'),
                                ("console.css", "[hidden] { display: none !important; }", "")],
     "a voice campaign shows no opening message field"),
    ("call-retries-on-chatapp", [("js/campaigns.js", 'form.querySelector("#cmp-retries-label").textContent = c === "voice" ? "Retries of a busy, unanswered or failed call" : "Retries of an opening message that failed";', "")],
     "retries of openings, not of calls"),
    ("key-suffix", [("console.css", "td code.key-display { word-break: normal; white-space: nowrap; }", "")],
     "an API key's suffix stays on one line"),
    ("weekly-bars", [("js/overview.js", "const weekly = days > 31;", "const weekly = false;")],
     "90 days are 13 weekly bars"),
    ("today-label", [("js/overview.js", '(i === all.length - 1 ? (weekly ? "This week" : "Today") : weekly', "(weekly")],
     "the daily bars' last label is today"),
    ("today-tick", [("js/charts.js", 'if (o.lastLabel && kind !== "doughnut")', "if (false)")],
     "the axis labels the last"),
    ("one-outcome-legend", [("js/charts.js", '|| kind === "doughnut" || !!o.legend,', '|| kind === "doughnut",')],
     "an outcomes chart of one outcome has its legend"),
    ("people-rows", [("js/keys.js", 'h("div", { id: "users" }, table(["Email", "Standing", "Role", ""], items, "Nobody yet.")),',
                      # A line each, as before: the address, the standing, then the role form and removal.
                      'h("ul", { class: "plain", id: "users" }, items.map((tr) => { const [e, s, r, x] = tr.children; const f = r.querySelector("form");'
                      ' if (!f) return h("li", {}, ...e.childNodes, " ", ...s.childNodes, " ", ...r.childNodes);'
                      ' f.prepend(h("strong", {}, ...e.childNodes), " ", ...s.childNodes, " "); f.append(" ", ...x.childNodes); return h("li", {}, f); })),')],
     "the people who can log in line up in columns"),
    ("phone-header", [("console.css", "  .who { display: none; }\n", "  .who { order: 1; max-width: none; margin-left: auto; flex: 1 1 0; text-align: right; }\n")],
     "the phone's header bar shows no cut-short 'owner …'"),
]


def undo(edits, folder):
    files = {}
    for name, fixed, unfixed in edits:
        if name not in files:
            with open(os.path.join(ASSETS, name)) as f:
                files[name] = f.read()
        n = files[name].count(fixed)
        if n != 1:
            raise SystemExit(f"{name}: the fix's text is there {n} times, not once: {fixed!r}")
        files[name] = files[name].replace(fixed, unfixed)
    for name, text in files.items():
        path = os.path.join(folder, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def run(case, binary):
    name, edits, expect = case
    with tempfile.TemporaryDirectory(prefix=f"unfixed-{name}-") as folder:
        folder = os.path.join(folder, "assets")
        undo(edits, folder)
        # Screenshots of its own, so that runs side by side do not share a folder.
        env = dict(os.environ, SWITCHBOARD_TEST_CONSOLE_ASSETS=folder, SWITCHBOARD_TEST_SCREENSHOTS=os.path.join(folder, "screenshots"))
        out = subprocess.run([sys.executable, os.path.join(HERE, "everyday.py"), binary], env=env, capture_output=True, text=True, timeout=900)
    text = out.stdout + out.stderr
    failed_here = out.returncode != 0 and expect in text and f"ok - {expect}" not in text
    lines = [line for line in text.splitlines() if line.startswith("ok - ")]
    last = lines[-1] if lines else "(none)"
    why = [line for line in text.splitlines() if "Error" in line][-1:] or ["(no error)"]
    return name, failed_here, f"after {last[5:][:90]!r}: {why[0][:240]}"


def main():
    args = sys.argv[1:]
    binary = args.pop(0) if args and os.path.sep in args[0] else os.path.join(os.path.dirname(os.path.dirname(HERE)), "target", "debug", "switchboard")
    cases = [c for c in CASES if not args or c[0] in args]
    with ThreadPoolExecutor(max_workers=int(os.environ.get("UNFIXED_JOBS", "2"))) as pool:
        results = list(pool.map(lambda c: run(c, binary), cases))
    for name, ok, said in results:
        print(f"{'fails without its fix' if ok else 'DID NOT FAIL AT ITS CHECK'}: {name}: {said}", flush=True)
    bad = [name for name, ok, _ in results if not ok]
    print(f"{len(results) - len(bad)} passed, {len(bad)} failed")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

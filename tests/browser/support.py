"""What the console's browser test stands on: the tools it installs, the
server's admin commands and plain HTTP, and the checks every page gets
(sweep(): no sideways scroll, no "null", "undefined" or "request failed",
no console error, the header's height budget, no action a viewer may not
take, axe-core's serious and critical rules, a screenshot of each page at
each width under target/browser/screenshots/<suite>/), and drive(), which
starts a seeded server and a browser for a suite. tests/browser/console.py and the other suites beside it drive the
pages with them."""
import csv
import json
import re
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(TARGET, "debug", "switchboard")
# The servers and admin commands started here inherit it: a plugin's secret
# setting is stored only encrypted, under this key (docs/configuration.md).
os.environ.setdefault("SWITCHBOARD_SETTINGS_KEY", "5eed" * 16)
PASSWORD = "correct horse battery"
# Every wait of the page is bounded (ms).
WAIT_MS = 20_000


def ensure_tools():
    chromium = shutil.which("chromium")
    if chromium is None:
        subprocess.run(["apt-get", "update", "-q"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-q", "chromium"], check=True, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        chromium = shutil.which("chromium")
    try:
        import playwright  # noqa: F401
    except ImportError:
        # Only the Python driver: the browser is Debian's (no download).
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "playwright==1.65.2"], check=True)
    return chromium


# axe-core, the accessibility checker every page of every suite runs
# (installed from npm beside the build's output when missing, as playwright
# is from PyPI; it is a test tool, not part of the console).
AXE_VERSION = "4.11.4"
AXE_DIR = os.path.join(TARGET, "browser", "axe")


def axe_source():
    path = os.path.join(AXE_DIR, "node_modules", "axe-core", "axe.min.js")
    if not os.path.exists(path):
        os.makedirs(AXE_DIR, exist_ok=True)
        subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", AXE_DIR, f"axe-core@{AXE_VERSION}"], check=True)
    with open(path) as f:
        return f.read()


# Where sweep() saves every page at every width (kept as the run's
# artifacts): target/browser/screenshots/<suite>/<who>-<page>-<width>.png.
SCREENSHOTS = os.environ.get("SWITCHBOARD_TEST_SCREENSHOTS") or os.path.join(TARGET, "browser", "screenshots", os.path.splitext(os.path.basename(sys.argv[0]))[0])

# The axe-core impacts a page may not have any of.
AXE_FAILING = ("serious", "critical")


def axe_violations(page):
    """axe-core's serious and critical violations on the page as shown
    (evaluated through the driver, so the console's Content-Security-Policy,
    which allows no injected script, stays as it is)."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.evaluate(axe_source() + "\n;0")
    found = page.evaluate("""async (failing) => {
      const r = await axe.run(document, { resultTypes: ['violations'] });
      return r.violations.filter((v) => failing.includes(v.impact))
        .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')})`);
    }""", list(AXE_FAILING))
    return found


def screenshot(page, name):
    """Saves the whole page as <SCREENSHOTS>/<name>.png and answers the path."""
    os.makedirs(SCREENSHOTS, exist_ok=True)
    path = os.path.join(SCREENSHOTS, re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") + ".png")
    page.screenshot(path=path, full_page=True)
    return path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def admin(data, *args, stdin=None):
    out = subprocess.run([BIN, "admin", "--data-dir", data, *args], check=True, capture_output=True, text=True, input=stdin)
    return json.loads(out.stdout)


def http(method, url, key=None, body=None):
    """A curl-like request: (status, parsed body)."""
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    if method != "GET":
        headers["Idempotency-Key"] = os.urandom(16).hex()
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


# Form controls without an accessible name (a <label>, aria-label or
# aria-labelledby).
UNLABELED_CONTROLS = """() => [...document.querySelectorAll('input, select, textarea')]
  .filter((el) => el.type !== 'hidden' && !el.labels.length && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby'))
  .map((el) => el.outerHTML.slice(0, 80))"""

# Visible text whose colour against its background is below WCAG AA (4.5:1).
LOW_CONTRAST = """() => {
  const rgb = (c) => (c.match(/[0-9.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = (el) => {
    for (; el; el = el.parentElement) {
      const c = rgb(getComputedStyle(el).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own || !el.getClientRects().length || el.closest('[hidden]')) continue;
    const style = getComputedStyle(el);
    if (style.visibility === 'hidden' || style.opacity === '0') continue;
    const a = lum(rgb(style.color).slice(0, 3)), b = lum(background(el));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < 4.5 && !el.disabled) out.push(`${el.tagName} "${el.textContent.trim().slice(0, 30)}" ${ratio.toFixed(2)}`);
  }
  return out;
}"""


# What a page must never show (issue 39): a null or undefined turned into
# text, or the generic "request failed" of an error without a message.
BAD_TEXT = r"\b(null|undefined)\b|request failed"

# The header's height budget (px): one line at desktop widths, a compact
# bar with a Menu button on a phone.
HEADER_BUDGET = {1280: 56, 375: 64}

# Buttons a viewer (read scopes only) may be offered: nothing that writes.
VIEWER_BUTTONS = {"Log out", "Menu", "Search", "Filter", "Next page", "Older movements",
                  # The inbox's views (they only filter the list).
                  "All", "Unassigned", "Open", "Resolved"}

# Every script error and console error of every page (filled by main()).
ERRORS = []


def nav(page, name):
    if page.locator("#menu").is_visible():
        page.locator("#menu").click()
    page.get_by_role("navigation").get_by_role("link", name=name, exact=True).click()


def sweep(page, base, routes, width, viewer=False, dark=False):
    """The checks every page passes at a width: no sideways page scroll, no
    bad text, no console error, the header within its budget, no serious or
    critical axe-core violation, and for a viewer no button that writes;
    each page is saved as a screenshot. dark: with the system's dark
    colour scheme (console.css's dark tokens)."""
    page.set_viewport_size({"width": width, "height": 812 if width < 700 else 800})
    page.emulate_media(color_scheme="dark" if dark else "light")
    for route in routes:
        before = len(ERRORS)
        # A fresh load: a hash change alone would leave the last page's
        # heading in place while the next one loads.
        page.goto("about:blank")
        page.goto(f"{base}/console/{route}")
        page.locator("main h1").wait_for()
        page.wait_for_load_state("networkidle")
        who = ("viewer" if viewer else "owner") + (" dark" if dark else "")
        wide = page.evaluate("document.documentElement.scrollWidth")
        if wide > width:
            print("too wide:", page.evaluate("""(w) => [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > w)
              .filter((e) => { for (let p = e.parentElement; p; p = p.parentElement) if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(p).overflowX)) return false; return true; })
              .slice(0, 8).map((e) => e.tagName + '.' + e.className + '#' + e.id + ' ' + Math.round(e.getBoundingClientRect().right))""", width))
        check(wide <= width, f"{who} {route} at {width} px: no sideways scroll ({wide} px)")
        bad = page.evaluate("(re) => [...document.body.innerText.matchAll(new RegExp('.{0,40}(' + re + ').{0,40}', 'gi'))].map((m) => m[0])", BAD_TEXT)
        if bad:
            print(page.evaluate("document.body.innerHTML")[:6000])
        check(not bad, f"{who} {route} at {width} px: no text null, undefined or request failed ({bad})")
        header = page.evaluate("document.querySelector('header').getBoundingClientRect().height")
        check(header <= HEADER_BUDGET[width], f"{who} {route} at {width} px: the header is {header:.0f} px (budget {HEADER_BUDGET[width]})")
        new = [e for e in ERRORS[before:] if not e.startswith("Failed to load resource: the server responded with a status of 4")]
        check(not new, f"{who} {route} at {width} px: no console error ({new})")
        found = axe_violations(page)
        check(not found, f"{who} {route} at {width} px: axe-core finds no serious or critical violation ({found})")
        screenshot(page, f"{who}-{route.strip('#/') or 'overview'}-{width}")
        if viewer:
            buttons = set(page.locator("button:visible").all_inner_texts())
            check(buttons <= VIEWER_BUTTONS, f"viewer {route} at {width} px: no action a viewer may not take ({sorted(buttons - VIEWER_BUTTONS)})")
            editable = page.evaluate("""() => [...document.querySelectorAll('main textarea, main input:not([type=search]), main form:not([role=search]) select')]
              .filter((el) => !el.disabled && el.getClientRects().length).map((el) => el.name || el.id)""")
            check(not editable, f"viewer {route} at {width} px: no editable field ({editable})")
    page.emulate_media(color_scheme="light")


def login(page, base, email):
    """Logs `email` in to the seeded business (drive()'s "Browser Co") with
    the suites' one password, and waits for its overview."""
    page.goto(f"{base}/console/")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("heading", name="Browser Co").wait_for()


def one_line(page, selector):
    """The elements matching `selector` that wrap onto a second line."""
    return page.evaluate("""(sel) => [...document.querySelectorAll(sel)].filter((el) => el.getClientRects().length)
      .filter((el) => el.getBoundingClientRect().height > 1.6 * parseFloat(getComputedStyle(el).lineHeight || 24))
      .map((el) => el.textContent.trim())""", selector)



def api(base, key, method, path, body=None):
    """An API call under /api/v1 that must succeed: its `data`."""
    status, d = http(method, f"{base}/api/v1{path}", key, body)
    assert status < 300, (method, path, status, d)
    return d["data"]


def wait_api(what, f, seconds=60):
    """Polls the API (bounded) until f() answers something true."""
    deadline = time.time() + seconds
    while True:
        v = f()
        if v:
            return v
        if time.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def other_session(page, base, email):
    """A second browser session beside `page`'s, logged in as `email`, whose
    script errors count as the run's."""
    vpage = page.context.browser.new_context().new_page()
    vpage.on("pageerror", lambda e: ERRORS.append(str(e)))
    vpage.on("console", lambda m: m.type == "error" and ERRORS.append(m.text))
    vpage.set_default_timeout(WAIT_MS)
    login(vpage, base, email)
    return vpage

def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print(f"ok - {what}", flush=True)


def voice_setup(data, base, business, key):
    """A completed call with a recording and a finished two-contact voice
    campaign, made through the API (what the console then shows)."""
    admin(data, "voice", "configure", "--business", business, "--lines", "2")
    admin(data, "credits", "add", "--business", business, "--microcredits", "50000000")
    _, d = http("POST", f"{base}/api/v1/agents", key, {"businessId": business, "channel": "voice", "name": "Caller",
                "instructions": "Confirm the appointment.", "voiceSettings": {"firstGreeting": "Hello, this is Acme calling."}})
    agent = d["data"]["agent"]["id"]
    callee = "+15550007777"
    status, d = http("POST", f"{base}/api/v1/voice/calls", key, {"businessId": business, "agentId": agent, "toNumber": callee})
    assert status == 202, d
    call = d["data"]["call"]["id"] if "call" in d["data"] else d["data"]["callId"]
    _, d = http("POST", f"{base}/api/v1/contacts/categories", key, {"businessId": business, "name": "Renewals"})
    category = d["data"]["category"]["id"]
    ids = []
    for name, mobile in [("Cleo", "+15550300001"), ("Dan", "+15550300002")]:
        _, d = http("POST", f"{base}/api/v1/contacts", key, {"businessId": business, "name": name, "mobile": mobile, "categoryIds": [category]})
        ids.append(d["data"]["contact"]["id"])
    status, d = http("POST", f"{base}/api/v1/campaigns", key, {"businessId": business, "name": "Renewals", "objective": "Confirm renewals",
                     "iteration": {"channel": "voice", "agentId": agent, "contactIds": ids}})
    assert status == 201, d
    campaign = d["data"]["campaign"]["id"]
    status, d = http("PATCH", f"{base}/api/v1/campaigns/{campaign}", key, {"businessId": business, "action": "start"})
    assert status == 200, d
    deadline = time.time() + 120
    while True:
        _, c = http("GET", f"{base}/api/v1/voice/calls/{call}?businessId={business}", key)
        _, k = http("GET", f"{base}/api/v1/campaigns/{campaign}?businessId={business}", key)
        if c["data"]["call"]["status"] == "completed" and k["data"]["currentIteration"]["status"] == "completed":
            break
        if time.time() > deadline:
            raise AssertionError(f"the call or the campaign did not finish: {c} {k}")
        time.sleep(0.2)
    return {"call": call, "callee": callee, "campaign": campaign}


class Receiver:
    """A webhook receiver on loopback that answers 200 and counts POSTs."""

    def __init__(self):
        import http.server
        import threading
        hits = self.hits = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                hits.append(self.rfile.read(int(self.headers.get("content-length", 0))))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, n):
        deadline = time.time() + 30
        while len(self.hits) < n:
            if time.time() > deadline:
                raise AssertionError(f"expected {n} webhook deliveries, got {len(self.hits)}")
            time.sleep(0.1)


DATA_DIR = []

# A folder laid out as host/src/console/assets/ whose files the browser is
# given instead of the binary's embedded ones (the assets are built into
# the binary): tests/browser/unfixed.py serves the console with one fix
# undone this way, to see the fix's check fail without it.
ASSETS_ENV = "SWITCHBOARD_TEST_CONSOLE_ASSETS"


def serve_assets_from(context):
    folder = os.environ.get(ASSETS_ENV)
    if not folder:
        return

    def answer(route):
        path = urllib.parse.urlparse(route.request.url).path[len("/console/"):] or "index.html"
        if path.startswith("api/") or not os.path.isfile(os.path.join(folder, path)):
            return route.continue_()
        kind = {"js": "text/javascript", "css": "text/css", "html": "text/html"}.get(path.rsplit(".", 1)[-1], "application/octet-stream")
        with open(os.path.join(folder, path), "rb") as f:
            route.fulfill(status=200, body=f.read(), headers={"content-type": f"{kind}; charset=utf-8"})

    context.route("**/console/**", answer)


def data_dir():
    """The data dir of the server under test (for admin commands)."""
    return DATA_DIR[0]


def drive(run, name):
    """Starts the binary on a free loopback port with a fresh data dir and a
    seeded business (an owner, a viewer, a chatapp number, a messenger
    plugin with a secret setting, voice set up, a webhook receiver), opens
    chromium at 1280x800 and calls run(page, base, business, admin_key,
    voice, receiver). Every suite of tests/browser/ starts this way; the
    server and the data dir are removed when run returns or fails."""
    chromium = ensure_tools()
    from playwright.sync_api import sync_playwright
    # The screenshots of this run only (ids differ from run to run).
    shutil.rmtree(SCREENSHOTS, ignore_errors=True)

    data = tempfile.mkdtemp(prefix="switchboard-browser-")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    business = admin(data, "business", "create", "--name", "Browser Co")["businessId"]
    admin_key = admin(data, "key", "create", "--business", business, "--scopes", "all")["apiKey"]
    admin(data, "user", "create", "--business", business, "--email", "owner@example.com", "--password-stdin", stdin=PASSWORD + "\n")
    admin(data, "user", "create", "--business", business, "--email", "viewer@example.com", "--role", "viewer", "--password-stdin", stdin=PASSWORD + "\n")
    admin(data, "channel", "connect", "--business", business, "--channel", "chatapp", "--phone-number-id", "pn-browser", "--label", "Front desk")
    # A plugin folder with one messenger plugin (the sandbox adapter as a
    # plugin) that declares a secret setting.
    plugins = os.path.join(data, "plugins")
    subprocess.run([BIN, "plugin", "template", "--interface", "messenger", "--name", "acme-messenger", "--out", os.path.join(plugins, "acme-messenger")],
                   check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(plugins, "acme-messenger", "plugin.toml"), "a") as f:
        f.write("\n[settings.api-token]\nsecret = true\nrequired = true\n")
    DATA_DIR.append(data)
    server = subprocess.Popen([BIN, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data, "--plugin-dir", plugins,
                               "--carrier-setting", "step-delay-ms=10", "--campaign-minute-ms", "1000", "--sandbox-routes",
                               # The webhook receiver is on loopback.
                               "--webhook-allow-private"], stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/v1/openapi.json", timeout=2)
                break
            except Exception:
                if time.time() > deadline or server.poll() is not None:
                    raise SystemExit("the server did not start")
                time.sleep(0.1)
        voice = voice_setup(data, base, business, admin_key)
        receiver = Receiver()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True,
                                        args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"])
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                serve_assets_from(page.context)
                errors = ERRORS
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.on("console", lambda m: m.type == "error" and errors.append(m.text))
                try:
                    run(page, base, business, admin_key, voice, receiver)
                except Exception:
                    # What the page showed when an expectation failed.
                    print("page at failure:", page.url, page.locator("main").inner_text()[:2000], "script errors:", *errors, sep="\n", flush=True)
                    raise
                # Chromium logs every 4xx answer (the session check's 401, the
                # refusals this test provokes); script errors and CSP
                # violations are what count.
                real = [e for e in errors if not e.startswith("Failed to load resource: the server responded with a status of 4")]
                check(not real, f"no script errors or CSP violations ({real})")
            finally:
                browser.close()
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(data, ignore_errors=True)
    print(f"{name} passed", flush=True)


#!/usr/bin/env python3
"""`causeway html` pages rendered by headless Chromium: the script runs to the end without a console
message or an uncaught error, the charts and the timeline are drawn, a kernel named
`<img src=x onerror=alert(1)>` shows as text (escaped in the DOM dump) and never becomes an element, and
zooming, panning and hovering the timeline work (a test-only script appended to a copy of the page sends
the events and writes what it saw into the DOM).

usage: html_browser.py [CAUSEWAY]
  CAUSEWAY  the CLI (default target/debug/causeway)

The captures come from cli/tests/html.rs (`browser_fixture`, run through cargo with
CAUSEWAY_HTML_FIXTURE=DIR). Without a `chromium` (or `chromium-browser`, `google-chrome`) on PATH the test
is skipped (exit 0, a SKIP line) unless CAUSEWAY_REQUIRE_CHROMIUM=1, when it fails (ci/test.sh sets it;
.ci/run installs chromium). Any failed check: exit 1.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EVIL_ESCAPED = "&lt;img src=x onerror=alert(1)&gt;"

# Sent after the page's own script: zoom, pan, then hover every item until the tooltip names the
# hostile kernel; the results go into attributes the DOM dump shows.
HOOK = """<script>
(function () {
  var b = document.body, tl = document.getElementById("timeline");
  var r = tl.getBoundingClientRect(), x = r.left + 500, y = r.top + 40;
  b.setAttribute("data-test-before", document.querySelectorAll("#timeline rect.item").length);
  tl.dispatchEvent(new WheelEvent("wheel", {deltaY: -300, clientX: x, clientY: y, bubbles: true, cancelable: true}));
  tl.dispatchEvent(new WheelEvent("wheel", {deltaY: 300, clientX: x, clientY: y, bubbles: true, cancelable: true}));
  tl.dispatchEvent(new MouseEvent("mousedown", {clientX: x, clientY: y, bubbles: true}));
  window.dispatchEvent(new MouseEvent("mousemove", {clientX: x - 50, clientY: y, bubbles: true}));
  window.dispatchEvent(new MouseEvent("mouseup", {bubbles: true}));
  document.getElementById("reset-zoom").click();
  var items = document.querySelectorAll("#timeline rect.item"), found = 0;
  for (var i = 0; i < items.length && !found; i++) {
    var q = items[i].getBoundingClientRect();
    items[i].dispatchEvent(new MouseEvent("mousemove", {clientX: q.left + 1, clientY: q.top + 1, bubbles: true}));
    if (document.getElementById("tooltip").textContent.indexOf("onerror") >= 0) found = 1;
  }
  b.setAttribute("data-test-after", items.length);
  b.setAttribute("data-test-hover", found);
})();
</script>
"""


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def dump(browser, page):
    """(DOM dump, console/uncaught lines)"""
    p = subprocess.run(
        [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
         "--v=0", "--virtual-time-budget=3000", "--window-size=1400,1000", "--dump-dom",
         "file://" + page],
        capture_output=True, text=True, timeout=120,
    )
    console = [l for l in p.stderr.splitlines() if ":CONSOLE" in l or "Uncaught" in l]
    if p.returncode != 0:
        console.append(f"chromium exited {p.returncode}: {p.stderr[-2000:]}")
    return p.stdout, console


def main():
    browser = chromium()
    if browser is None:
        msg = "html_browser: no chromium on PATH (apt-get install chromium)"
        if os.environ.get("CAUSEWAY_REQUIRE_CHROMIUM") == "1":
            print(f"FAIL: {msg}", file=sys.stderr)
            return 1
        print(f"SKIP: {msg}")
        return 0
    cw = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target/debug/causeway")
    failures = []

    def expect(what, ok):
        if ok:
            print("ok   " + what)
        else:
            print("FAIL " + what, file=sys.stderr)
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix="cw-html-") as tmp:
        env = dict(os.environ, CAUSEWAY_HTML_FIXTURE=tmp)
        subprocess.run(
            ["cargo", "test", "--quiet", "-p", "causeway-cli", "--test", "html", "--",
             "--exact", "browser_fixture"],
            cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL,
        )
        for name in ("steps", "nosteps"):
            page = os.path.join(tmp, name + ".html")
            subprocess.run([cw, "html", "-o", page, os.path.join(tmp, name)], check=True)
            with open(page, encoding="utf-8") as f:
                text = f.read()
            hooked = os.path.join(tmp, name + "-hooked.html")
            with open(hooked, "w", encoding="utf-8") as f:
                f.write(text.replace("</body>", HOOK + "</body>", 1))
            for label, path in ((name, page), (name + " with events", hooked)):
                dom, console = dump(browser, path)
                expect(f"{label}: no console message or uncaught error {console[:3]}", not console)
                expect(f"{label}: the script ran to the end", 'data-rendered="1"' in dom)
                items = len(re.findall(r'<rect[^>]*class="item"', dom))
                expect(f"{label}: timeline items drawn ({items})", items > 0)
                expect(f"{label}: the hostile kernel name shows as text", EVIL_ESCAPED in dom)
                expect(f"{label}: no <img> element", "<img" not in dom.lower())
                expect(f"{label}: kernel table filled",
                       re.search(r'<td class="kernel-name">&lt;img', dom) is not None)
                if name == "steps":
                    bars = len(re.findall(r'class="step-bar"', dom))
                    expect(f"{label}: a bar per step ({bars})", bars == 4)
                    expect(f"{label}: gap histogram drawn", 'class="gap-bar"' in dom)
                    expect(f"{label}: the why panel names the slowest step's cause",
                           re.search(r'<li><strong>step 1: (host|dependency|device|unknown)', dom)
                           is not None)
                    expect(f"{label}: the slowest step is selected",
                           re.search(r'<option value="1"[^>]*>step 1 [^<]*slowest', dom) is not None
                           and "step 1: 5.00 \u00b5s" in dom)
                else:
                    expect(f"{label}: says there are no steps", "No steps" in dom)
                if path == hooked:
                    m = {k: re.search(rf'data-test-{k}="(\d+)"', dom) for k in ("before", "after", "hover")}
                    expect(f"{label}: the event hook ran", all(m.values()))
                    if all(m.values()):
                        expect(f"{label}: items after zoom, pan and reset",
                               int(m["after"].group(1)) == int(m["before"].group(1)) > 0)
                        expect(f"{label}: hovering shows the hostile name in the tooltip",
                               m["hover"].group(1) == "1")
    if failures:
        print(f"html_browser: {len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("html_browser: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

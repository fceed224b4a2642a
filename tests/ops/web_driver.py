"""web_driver.py - drives the fleet page in headless Chromium for tests/ops/test_web.sh.

Environment: FP_URL (serve's URL), FP_TOKENS (a file: operator token, then viewer token, one a
line), FP_ADMIN_HDR (a curl header file with the admin token), FP_SHOT (where the screenshot
goes). Every wait is a bounded poll; exit 0 or an AssertionError naming what the page showed.
"""
import json
import os
import subprocess
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

URL = os.environ["FP_URL"]
OP, VIEW = open(os.environ["FP_TOKENS"]).read().split()
HDR = os.environ["FP_ADMIN_HDR"]
SHOT = os.environ["FP_SHOT"]
N = 64


def curl(method, path, body=None):
    """The API as the test sees it: curl with the admin token's header file."""
    cmd = ["curl", "-s", "-X", method, "-H", "@" + HDR, URL + path]
    if body is not None:
        cmd[4:4] = ["-H", "Content-Type: application/json", "--data-binary", json.dumps(body)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def wait(what, fn, secs=30):
    """Polls fn every 0.1 s until it returns a true value; fails naming what after secs."""
    end = time.monotonic() + secs
    last = None
    while time.monotonic() < end:
        last = fn()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError("timed out after %d s waiting for %s (last: %r)" % (secs, what, last))


def squares(d):
    return d.execute_script("return document.querySelectorAll('#map .node').length")


def square(d, name):
    return d.find_element(By.CSS_SELECTOR, '#map .node[data-name="%s"]' % name)


def login(d, token):
    wait("the token box", lambda: d.find_element(By.ID, "token").is_displayed())
    d.find_element(By.ID, "token").send_keys(token)
    d.find_element(By.ID, "token-set").click()
    wait("%d squares" % N, lambda: squares(d) == N)


def open_node(d, name):
    square(d, name).click()
    wait("the node page of " + name, lambda: d.find_element(By.ID, "d-name").text == name)


def main():
    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1280,800", "--no-proxy-server"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    try:
        # a 1280x800 viewport (--window-size counts the window, not the page)
        d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                          {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})
        d.get(URL + "/")  # a browser's / is redirected to /ui/
        assert d.current_url == URL + "/ui/", d.current_url
        login(d, OP)
        assert squares(d) == N, squares(d)
        d.execute_script("window.__fpNoReload = 1")
        # the budget test_web.sh made, one row per rack
        wait("8 rows of budget per-rack", lambda: d.execute_script(
            "return [...document.querySelectorAll('#budgets tbody tr')]"
            ".filter(r => r.cells[0].textContent === 'per-rack').length") == 8)

        # 1. a drain clicked in the page (operator token) reaches the API
        open_node(d, "r01n01")
        d.find_element(By.ID, "d-drain").click()
        wait("'drain accepted'", lambda: d.find_element(By.ID, "d-ok").text == "drain accepted")
        n = curl("GET", "/v1/nodes/r01n01")
        holds = [(h["owner"], h["reason"]) for h in n["status"]["holds"]]
        assert holds == [("operator:web-op", "drained from the fleet page")], holds
        wait("r01n01 maintenance in the API",
             lambda: curl("GET", "/v1/nodes/r01n01")["status"]["phase"] == "maintenance")

        # 2. a phase change made through the API shows up without a reload
        curl("POST", "/v1/nodes/r02n03:drain", {"reason": "PSU swap (test_web)"})
        wait("r02n03 shown in maintenance and held",
             lambda: square(d, "r02n03").get_attribute("data-phase") == "maintenance"
             and square(d, "r02n03").get_attribute("data-holds") == "1")
        assert d.execute_script("return window.__fpNoReload") == 1, "the page reloaded"
        wait("r01n01 shown in maintenance",
             lambda: square(d, "r01n01").get_attribute("data-phase") == "maintenance")

        # the screenshot for docs/: the map with both drains and r01n01's page
        open_node(d, "r01n01")
        wait("r01n01's events", lambda: len(d.find_elements(By.CSS_SELECTOR, "#d-events tbody tr")) > 3)
        wait("r01n01's page in maintenance", lambda: d.find_element(By.ID, "d-phase").text == "maintenance")
        d.save_screenshot(SHOT)

        # 3. a viewer's drain is refused by the API and the page says so
        d.find_element(By.ID, "logout").click()
        login(d, VIEW)
        open_node(d, "r03n01")
        d.find_element(By.ID, "d-drain").click()
        err = wait("the refusal", lambda: d.find_element(By.ID, "d-err").text)
        want = "drain r03n01 refused: 403: token web-view has role viewer; " \
               "POST /v1/nodes/{name}:drain needs operator"
        assert err == want, err
        assert curl("GET", "/v1/nodes/r03n01")["status"]["holds"] == []

        # no CSP violation or script error on the way (the favicon is served, so no 404 either)
        bad = [e for e in d.get_log("browser") if e["level"] == "SEVERE"
               and "r03n01:drain" not in e["message"]]
        assert not bad, bad
    finally:
        d.quit()
    print("web_driver: ok")


if __name__ == "__main__":
    sys.exit(main())

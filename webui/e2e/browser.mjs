// What the browser tests share: Debian's Chromium, headless, driven by
// playwright-core, and the desktop session of test.mjs and inspect.mjs.
import { before, after } from "node:test";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

// openPage launches the browser and opens a page with options (viewport,
// touch…); its actions wait at most 20 s. Close the browser when done.
export async function openPage(options) {
  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
  const page = await browser.newPage(options);
  page.setDefaultTimeout(20000);
  return { browser, page };
}

// The server under test and where screenshots go (run.sh sets them).
export const URL = process.env.BATON_URL;
export const KEY = process.env.BATON_KEY;
export const ART = process.env.ARTIFACTS || "artifacts";

// desktopSession opens, before the tests of the file that calls it, a
// 1280 × 900 page of the web UI, hands it to onPage, and closes it after
// them. ui.errors collects the page's errors and console errors; ui.shot
// saves a full-page screenshot; ui.step runs a test's body and, if it
// fails, saves a screenshot named failPrefix + the step's name;
// ui.waitStatus waits for the thread's status.
export function desktopSession(failPrefix, onPage) {
  const ui = { page: undefined, browser: undefined, errors: [] };
  before(async () => {
    assert.ok(URL && KEY, "BATON_URL and BATON_KEY must be set (run ./run.sh)");
    ({ browser: ui.browser, page: ui.page } = await openPage({ viewport: { width: 1280, height: 900 } }));
    ui.page.on("pageerror", (e) => ui.errors.push(`page error: ${e.message}`));
    ui.page.on("console", (m) => { if (m.type() === "error") ui.errors.push(`console: ${m.text()}`); });
    onPage(ui.page);
  });
  after(async () => {
    await ui.browser?.close();
  });
  ui.shot = async (name) => {
    await ui.page.screenshot({ path: `${ART}/${name}.png`, fullPage: true });
  };
  ui.step = async (name, fn) => {
    try {
      await fn();
    } catch (e) {
      await ui.shot(`${failPrefix}${name}`).catch(() => {});
      throw e;
    }
  };
  ui.waitStatus = async (status, timeout = 30000) => {
    await ui.page.waitForFunction((s) => document.getElementById("status").dataset.status === s, status, { timeout });
  };
  return ui;
}

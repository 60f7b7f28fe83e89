// The web UI on a phone: a 390 × 844 screen (an iPhone's), touch, against
// the same `baton serve` as test.mjs (run.sh starts it). Log in, start a
// thread, get an answer — nothing wider than the screen, the composer on
// it; the favicon; errors shown as sentences that say what to do.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { openPage } from "./browser.mjs";

const URL = process.env.BATON_URL;
const KEY = process.env.BATON_KEY;
const ART = process.env.ARTIFACTS || "artifacts";
const W = 390, H = 844;
const errors = [];
const missing = [];
let browser;
let page;

before(async () => {
  assert.ok(URL && KEY, "BATON_URL and BATON_KEY must be set (run ./run.sh)");
  ({ browser, page } = await openPage({ viewport: { width: W, height: H }, deviceScaleFactor: 2, isMobile: true, hasTouch: true }));
  page.on("pageerror", (e) => errors.push(`page error: ${e.message}`));
  page.on("response", (r) => { if (r.status() === 404) missing.push(r.url()); });
});

after(async () => {
  await browser?.close();
});

// fits fails unless the page is no wider than the screen and each test id
// is fully on it.
async function fits(...ids) {
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= W, `the page is ${width}px wide on a ${W}px screen`);
  for (const id of ids) {
    const b = await page.getByTestId(id).boundingBox();
    assert.ok(b, `${id} is not shown`);
    assert.ok(b.x >= 0 && b.x + b.width <= W + 0.5 && b.y >= 0 && b.y + b.height <= H + 0.5, `${id} is off the screen: ${JSON.stringify(b)}`);
  }
}

test("390 px: log in, start a thread and get an answer on one screen", async () => {
  try {
    await page.goto(URL);
    await fits("api-key", "login");
    await page.getByTestId("api-key").fill(KEY);
    await page.getByTestId("login").tap();
    await page.getByTestId("new-thread").waitFor();
    await fits("network", "new-thread");
    await page.getByTestId("network").selectOption("support");
    await page.getByTestId("new-thread").tap();
    await page.locator("#thread:not([hidden])").waitFor();
    await page.getByTestId("input").fill("I was charged twice for order 1234");
    await page.getByTestId("send").tap();
    await page.waitForFunction(() => document.getElementById("status").dataset.status === "completed", null, { timeout: 30000 });
    const answer = page.getByTestId("assistant-message").filter({ hasText: "duplicate" }).last();
    await answer.scrollIntoViewIfNeeded();
    await fits("input", "send", "status");
    const b = await answer.boundingBox();
    assert.ok(b.x >= 0 && b.x + b.width <= W, `the answer is off the screen: ${JSON.stringify(b)}`);
    await page.screenshot({ path: `${ART}/mobile-390.png` });
  } catch (e) {
    await page.screenshot({ path: `${ART}/FAILED-mobile-390.png`, fullPage: true }).catch(() => {});
    throw e;
  }
});

test("favicon", async () => {
  assert.equal(await page.locator('link[rel="icon"]').getAttribute("href"), "/assets/favicon.svg");
  const status = await page.evaluate(async () => (await fetch("/favicon.ico")).status);
  assert.equal(status, 200);
  assert.deepEqual(missing, [], "the page asked for files that do not exist");
});

test("errors are sentences that say what to do", async () => {
  const runs = "**/v1/threads/*/runs";
  await page.route(runs, (r) => r.fulfill({
    status: 503, contentType: "application/json",
    body: JSON.stringify({ error: { type: "unavailable", message: "the database is unavailable; retry later" } }),
  }));
  await page.getByTestId("input").fill("hello");
  await page.getByTestId("send").tap();
  await page.getByText("The server is busy or restarting. Try again in a few seconds.").waitFor();
  await page.unroute(runs);
  await page.route(runs, (r) => r.abort("connectionrefused"));
  await page.getByTestId("input").fill("hello again");
  await page.getByTestId("send").tap();
  await page.getByText("The baton server cannot be reached. Check that it is running and that you are online, then try again.").waitFor();
  await page.unroute(runs);
  await fits("send");
});

test("no errors on the page", () => {
  assert.deepEqual(errors.filter((e) => !e.includes("Failed to load resource")), []);
});

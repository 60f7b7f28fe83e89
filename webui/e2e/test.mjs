// Browser tests of baton's web UI against a real `baton serve` (run.sh
// starts it): log in, send a message and watch a transfer and a background
// continuation complete live, approve an interrupt, hand a thread off.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const URL = process.env.BATON_URL;
const KEY = process.env.BATON_KEY;
const ART = process.env.ARTIFACTS || "artifacts";
const errors = [];
let browser;
let page;

async function shot(name) {
  await page.screenshot({ path: `${ART}/${name}.png`, fullPage: true });
}

// step runs fn and saves a screenshot named after the step if it fails.
async function step(name, fn) {
  try {
    await fn();
  } catch (e) {
    await shot(`FAILED-${name}`).catch(() => {});
    throw e;
  }
}

before(async () => {
  assert.ok(URL && KEY, "BATON_URL and BATON_KEY must be set (run ./run.sh)");
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.setDefaultTimeout(20000);
  page.on("pageerror", (e) => errors.push(`page error: ${e.message}`));
  page.on("console", (m) => { if (m.type() === "error") errors.push(`console: ${m.text()}`); });
});

after(async () => {
  await browser?.close();
});

async function newThread(network) {
  await page.getByTestId("network").selectOption(network);
  await page.getByTestId("new-thread").click();
  await page.locator("#thread:not([hidden])").waitFor();
  await page.waitForFunction(() => document.getElementById("status").dataset.status === "idle");
}

async function send(text) {
  await page.getByTestId("input").fill(text);
  await page.getByTestId("send").click();
}

async function waitStatus(status, timeout = 30000) {
  await page.waitForFunction((s) => document.getElementById("status").dataset.status === s, status, { timeout });
}

test("log in with an API key", () => step("login", async () => {
  await page.goto(URL);
  await page.getByTestId("api-key").fill("baton_not_a_real_key");
  await page.getByTestId("login").click();
  await page.getByText("That API key is not valid.").waitFor();
  // The refused key is not what the page logs in with: errors so far are expected.
  errors.length = 0;
  await page.getByTestId("api-key").fill(KEY);
  await page.getByTestId("login").click();
  await page.getByTestId("new-thread").waitFor();
  await shot("01-logged-in");
}));

test("send a message; watch the transfer and the background continuation complete live", () => step("background", async () => {
  await newThread("research");
  await send("How did EV sales develop in 2025?");
  await page.getByTestId("user-message").filter({ hasText: "EV sales" }).waitFor();
  // The coordinator transfers to the analyst: drawn in the timeline.
  await page.getByTestId("timeline-transfer").waitFor();
  const nodes = await page.getByTestId("timeline-node").allTextContents();
  assert.deepEqual(nodes.slice(0, 2), ["coordinator", "analyst"]);
  await page.getByTestId("transfer-notice").waitFor();
  // The slow tool goes to the background worker; the page shows it working.
  await page.getByTestId("background-notice").waitFor();
  await page.getByTestId("timeline-worker").waitFor();
  await shot("02-transfer-and-background");
  // The worker's answer arrives on the same page, and the run completes.
  await waitStatus("completed");
  const answer = page.getByTestId("assistant-message").filter({ hasText: "RPT-42" }).last();
  await answer.waitFor();
  assert.match(await answer.innerHTML(), /<strong>22%<\/strong>/, "the answer's Markdown is rendered");
  assert.equal(await page.getByTestId("background-message").count(), 0, "the background placeholder is replaced by the answer");
  await shot("03-background-completed");
}));

test("approve an interrupt", () => step("interrupt", async () => {
  await newThread("support");
  await send("I want a refund for order 1234");
  await page.getByTestId("interrupt").waitFor();
  await waitStatus("interrupted");
  const args = await page.getByTestId("interrupt-args").inputValue();
  assert.match(args, /"order_id": "1234"/);
  await shot("04-interrupt");
  await page.getByTestId("approve").click();
  await waitStatus("completed");
  await page.getByTestId("assistant-message").filter({ hasText: "has been issued" }).waitFor();
  assert.ok(await page.getByTestId("interrupt").isHidden());
  await shot("05-interrupt-approved");
}));

test("request and approve a thread handoff", () => step("thread-handoff", async () => {
  // The research thread of the first test.
  await page.getByTestId("thread-item").filter({ hasText: "research" }).first().click();
  await page.getByTestId("assistant-message").filter({ hasText: "RPT-42" }).first().waitFor();
  await page.getByTestId("request-thread-handoff").click();
  await page.getByTestId("thread-handoff-proposal").waitFor();
  assert.equal(await page.locator("#thread-handoff-title").inputValue(), "EV market report 2025");
  await shot("06-thread-handoff-proposal");
  await page.getByTestId("approve-thread-handoff").click();
  await page.getByTestId("thread-handoff-done").waitFor();
  await page.getByTestId("open-child").click();
  await page.locator("#thread-parent:not([hidden])").waitFor();
  await shot("07-child-thread");
}));

test("the Markdown renderer is safe", async () => {
  const html = await page.evaluate(() => window.batonMarkdown.render(
    "<img src=x onerror=alert(1)> **bold** [x](javascript:alert(1)) [ok](https://example.com) `<b>`"));
  assert.ok(!html.includes("<img"), html);
  assert.ok(!html.includes('href="javascript'), html);
  assert.ok(html.includes("<strong>bold</strong>"), html);
  assert.ok(html.includes('<a href="https://example.com"'), html);
  assert.ok(html.includes("<code>&lt;b&gt;</code>"), html);
});

test("no errors on the page", () => {
  assert.deepEqual(errors, []);
});

// Browser tests of the inspector in the web UI against a real `baton serve`
// (run.sh starts it): a run's steps as a waterfall (model calls, the
// transfer, a tool call, the wait for an approval), a model call's request
// and answer, "Fork from here" on a message with an edit (the fork opens,
// listed under its source, and answers like any thread), and the waterfall
// on a 390 px screen.
import { test } from "node:test";
import assert from "node:assert/strict";
import { desktopSession, URL, KEY } from "./browser.mjs";

let page;
const { errors, shot, step, waitStatus } = desktopSession("FAILED-inspect-", (p) => {
  page = p;
});

let source = "";

test("a run's steps as a waterfall; a model call's request and answer", () => step("steps", async () => {
  await page.goto(URL);
  await page.getByTestId("api-key").fill(KEY);
  await page.getByTestId("login").click();
  await page.getByTestId("new-thread").waitFor();
  await page.getByTestId("network").selectOption("support");
  await page.getByTestId("new-thread").click();
  await page.locator("#thread:not([hidden])").waitFor();
  await waitStatus("idle");
  await page.getByTestId("input").fill("I want a refund for order 1234");
  await page.getByTestId("send").click();
  await waitStatus("interrupted");
  source = await page.locator("#thread-id").textContent();
  // Reopened, the thread's stored messages carry their ids.
  await page.reload();
  await page.locator("#thread:not([hidden])").waitFor();
  await page.getByTestId("fork-here").first().waitFor();

  await page.getByTestId("run-steps").first().click();
  await page.getByTestId("step-row").nth(5).waitFor();
  const types = await page.getByTestId("step-row").evaluateAll((rows) => rows.map((r) => r.dataset.type));
  assert.deepEqual(types, ["model_call", "transfer", "model_call", "tool_call", "model_call", "approval"]);
  const labels = await page.getByTestId("step-row").allTextContents();
  assert.match(labels[0], /model · triage · scripted/);
  assert.match(labels[1], /transfer · triage · → refunds/);
  assert.match(labels[3], /tool · refunds · lookup_order/);
  assert.match(labels[5], /approval · refunds · issue_refund/);
  assert.match(await page.getByTestId("steps-summary").textContent(), /6 steps .* tokens · interrupted/);
  // Every bar lies within its track.
  const bars = await page.locator(".step .bar").evaluateAll((bs) => bs.map((b) => {
    const t = b.parentElement.getBoundingClientRect(), r = b.getBoundingClientRect();
    return r.left >= t.left - 0.5 && r.right <= t.right + 0.5 && r.width >= 1;
  }));
  assert.ok(bars.every(Boolean), "a bar leaves its track");
  await shot("inspect-01-waterfall");

  await page.getByTestId("step-row").first().click();
  await page.getByTestId("step-request").waitFor();
  assert.match(await page.getByTestId("step-request").textContent(), /system:\s+You are the first line of support/);
  assert.match(await page.getByTestId("step-request").textContent(), /user:\s+I want a refund for order 1234/);
  assert.match(await page.getByTestId("step-answer").textContent(), /transfer_to_refunds/);
  await page.getByTestId("step-row").nth(3).click();
  await page.getByTestId("step-output").waitFor();
  assert.match(await page.getByTestId("step-output").textContent(), /delivered/);
  await shot("inspect-02-step-detail");
}));

test("fork from a message, edited: the fork opens under its source and answers", () => step("fork", async () => {
  page.once("dialog", (d) => d.accept("I was charged twice for order 1234"));
  await page.getByTestId("user-message").first().getByTestId("fork-here").click();
  await page.waitForFunction((src) => {
    const id = document.getElementById("thread-id").textContent;
    return id && id !== src;
  }, source);
  const fork = await page.locator("#thread-id").textContent();
  await page.locator("#thread-parent:not([hidden])").waitFor();
  assert.match(await page.locator("#thread-parent").textContent(), /forked from/);
  await page.getByTestId("user-message").filter({ hasText: "I was charged twice for order 1234" }).waitFor();
  assert.equal(await page.getByTestId("user-message").count(), 1);
  // Listed right under its source, marked a fork.
  const order = await page.getByTestId("threads").locator("li").evaluateAll((lis) => lis.map((li) => li.dataset.id));
  assert.equal(order.indexOf(fork), order.indexOf(source) + 1, "the fork is listed under its source");
  assert.equal(await page.locator(`li[data-id="${fork}"]`).getAttribute("data-testid"), "fork-item");
  await shot("inspect-03-fork");

  await page.getByTestId("input").fill("I was charged twice on my card.");
  await page.getByTestId("send").click();
  await waitStatus("completed");
  await page.getByTestId("assistant-message").filter({ hasText: "duplicate" }).first().waitFor();
  await shot("inspect-04-fork-answered");
  // The source still waits for its decision.
  await page.locator(`li[data-id="${source}"] a`).click();
  await waitStatus("interrupted");
}));

test("390 px: the waterfall and a step fit the screen", () => step("mobile", async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  await page.evaluate((s) => { location.hash = "#/threads/" + s; }, source);
  await page.reload();
  await page.locator("#thread:not([hidden])").waitFor();
  await page.getByTestId("run-steps").first().click();
  await page.getByTestId("step-row").nth(5).waitFor();
  await page.getByTestId("step-row").first().click();
  await page.getByTestId("step-request").waitFor();
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `the page is ${width}px wide on a 390px screen`);
  for (const id of ["waterfall", "step-detail"]) {
    const b = await page.getByTestId(id).boundingBox();
    assert.ok(b && b.x >= 0 && b.x + b.width <= 390.5, `${id} is off the screen: ${JSON.stringify(b)}`);
  }
  await shot("inspect-05-mobile");
  assert.deepEqual(errors, []);
}));

// Browser tests of baton's web UI against a real `baton serve` (run.sh
// starts it): log in, send a message and watch a transfer and a background
// continuation complete live, approve an interrupt, hand a thread off
// (propose, edit, approve, the child's seed until its first turn; reload
// while a proposal is pending; reject).
import { test } from "node:test";
import assert from "node:assert/strict";
import { desktopSession, URL, KEY } from "./browser.mjs";

let page;
const { errors, shot, step, waitStatus } = desktopSession("FAILED-", (p) => {
  page = p;
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

test("type while the agent answers: the message is queued, then answered after the answer", () => step("queue", async () => {
  await newThread("research");
  await send("How did EV sales develop in 2025?");
  // The slow tool goes to the background: the agent is still answering.
  await page.getByTestId("background-notice").waitFor();
  assert.equal(await page.getByTestId("send").textContent(), "Queue");
  assert.ok(await page.getByTestId("interrupt-send").isVisible());
  await send("Thanks, great report");
  await page.locator('[data-testid="user-message"][data-strategy="enqueue"]').filter({ hasText: "Thanks, great report" }).waitFor();
  await shot("03b-queued");
  // The queued message runs once the first answer is done, then completes.
  await page.getByTestId("assistant-message").filter({ hasText: "You're welcome" }).waitFor({ timeout: 60000 });
  await waitStatus("completed", 60000);
  const answers = await page.getByTestId("assistant-message").allTextContents();
  const report = answers.findIndex((a) => a.includes("RPT-42"));
  const welcome = answers.findIndex((a) => a.includes("You're welcome"));
  assert.ok(report >= 0 && welcome > report, "the queued message is answered after the first answer");
  assert.equal(await page.getByTestId("send").textContent(), "Send");
  await shot("03c-queued-answered");
}));

test("interrupt the agent: its answer stops where it is, the new message is answered", () => step("interrupt-answer", async () => {
  await newThread("research");
  await send("How did EV sales develop in 2025?");
  await page.getByTestId("background-notice").waitFor();
  await page.getByTestId("input").fill("Thanks, that will do");
  await page.getByTestId("interrupt-send").click();
  await page.locator('[data-testid="user-message"][data-strategy="interrupt"]').waitFor();
  await page.getByTestId("assistant-message").filter({ hasText: "You're welcome" }).waitFor({ timeout: 60000 });
  await waitStatus("completed", 60000);
  // Reloaded, the thread has both messages and no run waiting.
  await page.reload();
  await page.getByTestId("user-message").filter({ hasText: "Thanks, that will do" }).waitFor();
  await waitStatus("completed");
  await shot("03d-interrupted");
}));

test("cancel a run: in the background, and waiting for approval", () => step("cancel-run", async () => {
  await newThread("research");
  await send("How did EV sales develop in 2025?");
  await page.getByTestId("background-notice").waitFor();
  await page.getByTestId("cancel-run").click();
  await waitStatus("cancelled", 30000);
  assert.ok(await page.getByTestId("cancel-run").isHidden());
  assert.equal(await page.getByTestId("send").textContent(), "Send");
  await shot("03e-cancelled");
  // Reloaded, the thread is free: a new message is answered.
  await page.reload();
  await page.getByTestId("user-message").filter({ hasText: "How did EV sales" }).waitFor();
  await newThread("support");
  await send("I want a refund for order 1234");
  await page.getByTestId("interrupt").waitFor();
  await waitStatus("interrupted");
  assert.ok(await page.getByTestId("cancel-run").isVisible());
  await page.getByTestId("cancel-run").click();
  await waitStatus("cancelled", 30000);
  await send("Hello again");
  await waitStatus("completed", 30000);
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

// proposeThreadHandoff opens a new support thread, has billing answer on
// it and proposes its thread handoff.
async function proposeThreadHandoff() {
  await newThread("support");
  await send("I was charged twice for order 1234");
  await waitStatus("completed");
  await page.getByTestId("request-thread-handoff").click();
  await page.getByTestId("thread-handoff-proposal").waitFor();
  assert.match(await page.getByTestId("thread-handoff-agent").textContent(), /billing takes over/);
  return page.evaluate(() => location.hash);
}

test("propose, edit and approve a thread handoff; the child shows its seed until its first turn ends", () => step("thread-handoff", async () => {
  const parent = await proposeThreadHandoff();
  assert.equal(await page.locator("#thread-handoff-title").inputValue(), "Double charge on order 1234");
  await shot("06-thread-handoff-proposal");
  await page.locator("#thread-handoff-title").fill("Double charge, order 1234 (edited)");
  await page.locator("#thread-handoff-md").fill("### Double charge, order 1234 (edited)\n\n- Charged twice for order 1234.\n- Refund of the second charge pending.");
  await page.getByTestId("approve-thread-handoff").click();
  // Approving switches to the child, which shows its seed.
  await page.waitForFunction((p) => location.hash !== p, parent);
  await page.locator("#thread-parent:not([hidden])").waitFor();
  assert.equal(await page.locator("#thread-title").textContent(), "Double charge, order 1234 (edited)");
  await page.getByTestId("seed-card").waitFor();
  assert.equal(await page.getByTestId("seed-agent").textContent(), "billing");
  assert.equal(await page.getByTestId("seed-parent").getAttribute("href"), parent);
  await page.getByTestId("seed-summary").filter({ hasText: "Refund of the second charge pending." }).waitFor();
  assert.ok(await page.getByTestId("thread-handoff-proposal").isHidden());
  await shot("07-child-seed");
  // The first turn starts at billing; when it ends the seed card goes.
  await send("Any news on the double charge?");
  await waitStatus("completed");
  const nodes = await page.getByTestId("timeline-node").allTextContents();
  assert.equal(nodes[0], "billing", "the child's first turn starts at the agent the summary names");
  await page.getByTestId("seed-card").waitFor({ state: "hidden" });
  await shot("08-child-after-first-turn");
  // The parent shows no pending proposal any more.
  await page.goto(URL + "/" + parent);
  await page.locator("#thread:not([hidden])").waitFor();
  await page.waitForFunction(() => document.getElementById("status").dataset.status === "completed");
  assert.ok(await page.getByTestId("thread-handoff-proposal").isHidden());
}));

test("a pending proposal shows after a reload; rejecting leaves the parent as it was", () => step("thread-handoff-reload", async () => {
  const parent = await proposeThreadHandoff();
  const title = await page.locator("#thread-handoff-title").inputValue();
  const threads = await page.getByTestId("thread-item").count();
  await page.reload();
  await page.getByTestId("thread-handoff-proposal").waitFor();
  assert.equal(await page.evaluate(() => location.hash), parent);
  assert.equal(await page.locator("#thread-handoff-title").inputValue(), title);
  assert.match(await page.getByTestId("thread-handoff-agent").textContent(), /billing takes over/);
  await shot("09-proposal-after-reload");
  await page.getByTestId("reject-thread-handoff").click();
  await page.getByTestId("thread-handoff-rejected").waitFor();
  assert.ok(await page.getByTestId("thread-handoff-proposal").isHidden());
  assert.equal(await page.evaluate(() => location.hash), parent, "a rejection stays on the parent");
  assert.ok(await page.locator("#thread-parent").isHidden());
  assert.ok(await page.getByTestId("seed-card").isHidden());
  // No child thread: the list is as it was, and a reload shows no proposal.
  await page.reload();
  await page.locator("#thread:not([hidden])").waitFor();
  await page.waitForFunction(() => document.getElementById("status").dataset.status === "completed");
  assert.equal(await page.getByTestId("thread-item").count(), threads);
  assert.ok(await page.getByTestId("thread-handoff-proposal").isHidden());
  await shot("10-proposal-rejected");
}));

test("a proposal its thread has outgrown is refused as stale; summarising again is one click", () => step("thread-handoff-stale", async () => {
  await proposeThreadHandoff();
  await send("Thanks, that's all");
  await waitStatus("completed");
  await page.getByTestId("thread-handoff-stale").waitFor();
  await page.getByTestId("approve-thread-handoff").click();
  await page.locator("#thread-handoff-error").filter({ hasText: "The thread has new messages since this summary. Summarise it again" }).waitFor();
  assert.ok(await page.locator("#thread-parent").isHidden(), "a stale approval does not switch threads");
  // The browser logs the refused request (409): expected here.
  for (let i; (i = errors.findIndex((e) => e.includes("status of 409"))) >= 0;) errors.splice(i, 1);
  await shot("11-proposal-stale");
  await page.getByTestId("repropose-thread-handoff").click();
  await page.getByTestId("thread-handoff-stale").waitFor({ state: "hidden" });
  await page.getByTestId("reject-thread-handoff").click();
  await page.getByTestId("thread-handoff-rejected").waitFor();
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

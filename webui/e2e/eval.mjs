// Browser test of baton eval's HTML report: runs `baton eval` on the
// support network's eval set with a changed network (double charges go to
// tech) against the original as baseline, writes the report with --html,
// opens the file in Chromium and checks its summary (a failed, regressed
// case) and the per-case diff of baseline and candidate. The report is one
// self-contained page: no request leaves the file.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { openPage } from "./browser.mjs";

const BIN = process.env.BATON_BIN;
const ROOT = process.env.ROOT;
const ART = process.env.ARTIFACTS || "artifacts";
const errors = [];
const requests = [];
let browser;
let page;
let dir;
let reportPath;

// baton runs the baton binary and resolves with its exit code and output.
function baton(args) {
  return new Promise((resolve) => {
    execFile(BIN, args, { cwd: ROOT, timeout: 120000 }, (err, stdout, stderr) => {
      resolve({ code: err ? err.code : 0, stdout, stderr });
    });
  });
}

before(async () => {
  assert.ok(BIN && ROOT, "BATON_BIN and ROOT must be set (run ./run.sh)");
  dir = mkdtempSync(join(tmpdir(), "baton-eval-report-"));
  const network = readFileSync(join(ROOT, "examples/support/network.yaml"), "utf8");
  const changed = join(dir, "network.yaml");
  writeFileSync(changed, network.replace("- name: transfer_to_billing", "- name: transfer_to_tech"));
  reportPath = join(ART, "eval-report.html");
  const res = await baton(["eval", "examples/support/eval.yaml", "--network", changed,
    "--baseline", "examples/support/network.yaml", "--html", reportPath]);
  assert.equal(res.code, 1, `baton eval should fail the gate:\n${res.stdout}\n${res.stderr}`);
  assert.match(res.stderr, /regressed/);
  ({ browser, page } = await openPage({ viewport: { width: 1280, height: 900 } }));
  page.on("pageerror", (e) => errors.push(`page error: ${e.message}`));
  page.on("console", (m) => { if (m.type() === "error") errors.push(`console: ${m.text()}`); });
  page.on("request", (r) => requests.push(r.url()));
});

after(async () => {
  await browser?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("the report's summary says the gate failed, with the regressed case", async () => {
  const url = pathToFileURL(reportPath).href;
  await page.goto(url);
  const summary = page.getByTestId("summary");
  await summary.waitFor();
  assert.equal(await summary.getAttribute("data-cases"), "4");
  assert.equal(await summary.getAttribute("data-regressed"), "1");
  assert.ok(Number(await summary.getAttribute("data-failed")) >= 1);
  assert.match(await page.getByTestId("summary-line").innerText(), /^FAIL\s+4 cases: \d passed, \d failed \(1 regressed\)/);
  // The metrics table sets the candidate's mean beside the baseline's.
  const transfers = page.locator('[data-testid="metrics"] tr[data-metric="transfers"] td');
  assert.equal(await transfers.count(), 4);
  assert.equal(await transfers.nth(3).innerText(), "1.00");
  await page.screenshot({ path: `${ART}/eval-report.png`, fullPage: true });
  assert.deepEqual(requests.filter((u) => u !== url), [], "the report loads nothing from elsewhere");
  assert.deepEqual(errors, []);
});

test("the regressed case shows what changed between baseline and candidate", async () => {
  const c = page.locator('[data-testid="case"][data-case="double-charge"]');
  assert.equal(await c.getAttribute("data-result"), "REGRESSED");
  assert.equal(await c.evaluate((el) => el.open), true, "a failed case is open");
  const diff = c.locator('[data-testid="diff"][data-turn="1"]');
  assert.equal(await diff.locator("th").nth(1).innerText(), "baseline");
  const row = diff.locator('tr[data-aspect="transfers"]');
  assert.equal(await row.getAttribute("data-changed"), "true");
  assert.match(await row.locator('[data-side="before"]').innerText(), /^triage→billing/);
  assert.match(await row.locator('[data-side="after"]').innerText(), /^triage→tech/);
  // Routing did not change: the same agent on both sides, not marked.
  const routing = diff.locator('tr[data-aspect="routing"]');
  assert.equal(await routing.getAttribute("data-changed"), null);
  assert.equal(await routing.locator('[data-side="after"]').innerText(), "triage");
  // The scores side by side: transfers passed on the baseline, fail now.
  const check = c.locator('[data-testid="checks"] tr[data-check="transfers"]').first();
  const cells = check.locator("td");
  assert.equal(await cells.nth(2).innerText(), "1");
  assert.equal(await cells.nth(3).innerText(), "0");
  assert.equal(await cells.nth(5).innerText(), "fail");
  assert.match(await c.getByTestId("regressions").innerText(), /turn 1 transfers: 1 → 0/);
  // A case that passes is closed, and opens on a click.
  const ok = page.locator('[data-testid="case"][data-case="small-talk"]');
  assert.equal(await ok.getAttribute("data-result"), "pass");
  assert.equal(await ok.evaluate((el) => el.open), false);
  await ok.locator("summary").click();
  assert.equal(await ok.evaluate((el) => el.open), true);
  await c.screenshot({ path: `${ART}/eval-report-case.png` });
  assert.deepEqual(errors, []);
});

// A receiver of A2A push notifications on loopback for test.mjs and
// v1.mjs: each POST is answered 204 and kept with its headers and body;
// verify checks its Standard Webhooks signature with the endpoint's own
// secret (POST /v1/webhooks/secret for the config's URL, as BATON_KEY's
// owner), as a receiver of baton's webhooks would, and that the server's
// secret (BATON_WEBHOOK_SECRET) does not verify it.
import http from "node:http";
import crypto from "node:crypto";

export const SECRET = process.env.BATON_WEBHOOK_SECRET;

// receiver starts a receiver; next(path) waits for the next notification
// to path (at most 60 s).
export async function receiver() {
  const got = [];
  const waiting = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const n = { path: req.url, url: `http://127.0.0.1:${server.address().port}${req.url}`, headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
      res.writeHead(204).end();
      const w = waiting.findIndex((w) => w.path === n.path);
      if (w >= 0) waiting.splice(w, 1)[0].resolve(n);
      else got.push(n);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    next(path) {
      const i = got.findIndex((n) => n.path === path);
      if (i >= 0) return Promise.resolve(got.splice(i, 1)[0]);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no notification to ${path} in 60 s`)), 60_000);
        waiting.push({ path, resolve: (n) => { clearTimeout(timer); resolve(n); } });
      });
    },
    // settled resolves to the next notification to path of a task that is
    // not working, with the working ones (a task's start or resumption)
    // received to path before it in .working.
    async settled(path) {
      const working = [];
      for (;;) {
        const n = await this.next(path);
        if (!isWorking(n)) return Object.assign(n, { working });
        working.push(n);
      }
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

// isWorking reports whether a notification's task (0.3's Task, 1.0's
// StreamResponse) is working.
export function isWorking(n) {
  const body = JSON.parse(n.body);
  return body.status?.state === "working" || body.task?.status?.state === "TASK_STATE_WORKING";
}

// verify reports whether a notification's webhook-signature is the
// HMAC-SHA256 of webhook-id.webhook-timestamp.body under the secret of its
// endpoint (its URL, for BATON_KEY's owner) and not under the server's.
export async function verify(n) {
  const res = await fetch(`${process.env.BATON_URL}/v1/webhooks/secret`, {
    method: "POST",
    headers: { Authorization: `Bearer ${process.env.BATON_KEY}`, "Content-Type": "application/json" },
    body: JSON.stringify({ url: n.url }),
  });
  if (res.status !== 200) throw new Error(`POST /v1/webhooks/secret: ${res.status} ${await res.text()}`);
  const { secret } = await res.json();
  return secret !== SECRET && signedWith(n, secret) && !signedWith(n, SECRET);
}

function signedWith(n, secret) {
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  const want = crypto.createHmac("sha256", key)
    .update(`${n.headers["webhook-id"]}.${n.headers["webhook-timestamp"]}.${n.body}`).digest("base64");
  return (n.headers["webhook-signature"] || "").split(" ").some((s) => s === `v1,${want}`);
}

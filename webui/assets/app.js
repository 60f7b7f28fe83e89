// baton web UI: log in with an API key, list threads, watch one live over
// Server-Sent Events (read with fetch, so that the key goes in a header),
// send messages, answer approval interrupts and hand threads off.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const md = () => window.batonMarkdown;
  const KEY = "baton.apiKey";

  const state = {
    key: sessionStorage.getItem(KEY) || "",
    networks: [],
    cursor: "",
    thread: null, // the open thread
    sub: null, // AbortController of the thread's event stream
    live: new Map(), // run_id + agent -> live bubble
    bg: new Map(), // run_id -> background bubble
    runs: new Map(), // run_id -> timeline row
    ended: new Set(), // runs whose run_end came
    proposal: null, // the thread handoff interrupt being decided
    interrupt: null,
  };

  // ---- HTTP ----------------------------------------------------------

  class APIError extends Error {
    constructor(status, type, message) {
      super(sentence(status, type, message));
      this.status = status;
      this.type = type;
      this.detail = message;
    }
  }

  // sentence words an error for a person: what happened, and what to do.
  function sentence(status, type, message) {
    const said = message ? " (" + message.replace(/[.\s]+$/, "") + ")" : "";
    switch (true) {
      case status === 0:
        return "The baton server cannot be reached. Check that it is running and that you are online, then try again.";
      case status === 401:
        return "Your API key was refused. Log in again with a valid key (baton keys create --owner NAME makes one).";
      case status === 404:
        return "This was not found: it may have been deleted, or belong to another API key. Pick another thread or start a new one.";
      case type === "stale_proposal":
        return "The thread has new messages since this summary. Summarise it again, then decide.";
      case status === 409:
        return "This thread is still busy with an earlier message" + said + ". Wait for its answer, or decide its approval, then try again.";
      case status === 413:
        return "That is too long to send. Shorten it and try again.";
      case status === 429:
        return "Too many requests at once. Wait a few seconds, then try again.";
      case status === 502:
        return "The model provider did not answer" + said + ". Your message is saved in the thread: send it again in a moment.";
      case status === 503:
        return "The server is busy or restarting. Try again in a few seconds.";
      case status === 504:
        return "The answer is taking longer than this request may wait. It goes on in the background: reopen the thread in a moment.";
      case status >= 500:
        return "Something went wrong on the server. Try again; if it keeps happening, the server's log says why.";
      case status >= 400 && !!message:
        return message.charAt(0).toUpperCase() + message.slice(1).replace(/([^.!?])$/, "$1.") + " Change it and try again.";
    }
    return "Something went wrong (" + (type || status) + "). Try again.";
  }

  // runErrorSentence words a run's error event for a person.
  function runErrorSentence(d) {
    const said = d.message ? " (" + d.message.replace(/[.\s]+$/, "") + ")" : "";
    switch (d.kind) {
      case "model_transient":
        return "The model could not answer" + said + ". Send your message again in a moment.";
      case "tool_transient":
        return "A tool failed" + said + ". Send your message again in a moment.";
      case "limit":
        return "The run stopped at a limit" + said + ". Ask a narrower question, or raise the limit in the network file.";
      case "length":
        return "The answer was cut at the model's token limit. Ask for a shorter answer, or raise max_tokens in the network file.";
      case "refusal":
        return "The model declined to answer" + said + ". Rephrase the request.";
      case "content_filter":
        return "The provider's content filter stopped the answer. Rephrase the request.";
      case "user_input":
        return "The message was not accepted" + said + ". Change it and send it again.";
    }
    return "The run failed" + said + ". Try again; if it keeps happening, the server's log says why.";
  }

  async function api(method, path, body) {
    const opts = { method, headers: { Authorization: "Bearer " + state.key } };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    let resp;
    try { resp = await fetch(path, opts); } catch (e) { throw new APIError(0, "network", ""); }
    const text = await resp.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
    if (!resp.ok) {
      const err = (data && data.error) || {};
      if (resp.status === 401) logout(sentence(401));
      throw new APIError(resp.status, err.type || "error", err.message || resp.statusText);
    }
    return data;
  }

  // sse reads an event stream with fetch. onEvent gets {id, type, data};
  // it returns the last event id when the stream ends.
  async function sse(path, opts, onEvent) {
    const headers = { Authorization: "Bearer " + state.key, Accept: "text/event-stream" };
    if (opts.lastEventId) headers["Last-Event-ID"] = opts.lastEventId;
    if (opts.body !== undefined) headers["Content-Type"] = "application/json";
    let resp;
    try {
      resp = await fetch(path, {
        method: opts.method || "GET", headers, signal: opts.signal,
        body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
      });
    } catch (e) {
      if (e.name === "AbortError") throw e;
      throw new APIError(0, "network", "");
    }
    if (!resp.ok) {
      let err = {};
      try { err = (await resp.json()).error || {}; } catch (e) { /* not JSON */ }
      if (resp.status === 401) logout(sentence(401));
      throw new APIError(resp.status, err.type || "error", err.message || resp.statusText);
    }
    if (opts.onOpen) opts.onOpen(resp);
    const reader = resp.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    let ev = { id: opts.lastEventId || "", type: "", data: [] };
    let last = opts.lastEventId || "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.search(/\r\n|\r|\n/)) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(buf[i] === "\r" && buf[i + 1] === "\n" ? i + 2 : i + 1);
        if (line === "") {
          if (ev.data.length) {
            last = ev.id;
            let data = ev.data.join("\n");
            try { data = JSON.parse(data); } catch (e) { /* plain text */ }
            onEvent({ id: ev.id, type: ev.type || "message", data });
          }
          ev = { id: last, type: "", data: [] };
          continue;
        }
        if (line[0] === ":") continue;
        const c = line.indexOf(":");
        const field = c < 0 ? line : line.slice(0, c);
        let val = c < 0 ? "" : line.slice(c + 1);
        if (val[0] === " ") val = val.slice(1);
        if (field === "data") ev.data.push(val);
        else if (field === "event") ev.type = val;
        else if (field === "id") ev.id = val;
      }
    }
    return last;
  }

  // drain follows a stream to its end without rendering it: the thread's
  // own event stream renders everything.
  function drain(path, body) {
    return sse(path, { method: "POST", body }, () => {});
  }

  // ---- login ---------------------------------------------------------

  function logout(message) {
    sessionStorage.removeItem(KEY);
    state.key = "";
    if (state.sub) state.sub.abort();
    $("app").hidden = true;
    $("logout").hidden = true;
    $("who").textContent = "";
    $("login").hidden = false;
    $("login-error").textContent = message || "";
  }

  async function login(key) {
    state.key = key;
    try {
      const nets = await api("GET", "/v1/networks");
      state.networks = nets.data;
    } catch (e) {
      logout(e.status === 401 ? "That API key is not valid. Check it, or make one with baton keys create --owner NAME." : e.message);
      return false;
    }
    sessionStorage.setItem(KEY, key);
    $("login").hidden = true;
    $("app").hidden = false;
    $("logout").hidden = false;
    $("who").textContent = "key " + key.slice(0, 12) + "…";
    const sel = $("network");
    sel.textContent = "";
    for (const n of state.networks) {
      const o = document.createElement("option");
      o.value = n.name;
      o.textContent = n.name;
      sel.appendChild(o);
    }
    await loadThreads(true);
    route();
    return true;
  }

  // ---- threads list --------------------------------------------------

  async function loadThreads(reset) {
    if (reset) { state.cursor = ""; $("threads").textContent = ""; }
    const page = await api("GET", "/v1/threads?limit=30" + (state.cursor ? "&cursor=" + encodeURIComponent(state.cursor) : ""));
    for (const th of page.data) $("threads").appendChild(threadItem(th));
    nestForks();
    state.cursor = page.next_cursor || "";
    $("more-threads").hidden = !page.has_more;
  }

  function threadItem(th) {
    const li = document.createElement("li");
    li.dataset.id = th.id;
    li.dataset.testid = "thread-item";
    li.setAttribute("data-testid", "thread-item");
    const a = document.createElement("a");
    a.href = "#/threads/" + th.id;
    a.append(make("span", "name", th.name || "Thread " + th.id.slice(-6)),
      make("span", "meta", th.network + " · " + new Date(th.created_at).toLocaleString()));
    li.appendChild(a);
    if (th.metadata && th.metadata.fork && th.parent_id) {
      li.classList.add("fork");
      li.dataset.parent = th.parent_id;
      li.setAttribute("data-testid", "fork-item");
    }
    if (state.thread && state.thread.id === th.id) li.classList.add("active");
    return li;
  }

  // nestForks moves each fork in the list right under its source (and
  // the source's other forks).
  function nestForks() {
    const list = $("threads");
    for (const li of [...list.querySelectorAll("li.fork")]) {
      const parent = list.querySelector('li[data-id="' + cssEscape(li.dataset.parent) + '"]');
      if (!parent) continue;
      let after = parent;
      while (after.nextElementSibling && after.nextElementSibling.dataset.parent === parent.dataset.id && after.nextElementSibling !== li) after = after.nextElementSibling;
      after.after(li);
    }
  }

  function markActive() {
    for (const li of $("threads").children) li.classList.toggle("active", !!state.thread && li.dataset.id === state.thread.id);
  }

  // ---- thread view ---------------------------------------------------

  function route() {
    const m = /^#\/threads\/([\w.-]+)$/.exec(location.hash);
    if (m) openThread(m[1]);
  }

  async function openThread(id) {
    if (state.sub) state.sub.abort();
    state.live.clear(); state.bg.clear(); state.runs.clear(); state.ended.clear();
    state.proposal = null; state.interrupt = null;
    $("messages").textContent = "";
    $("timeline").textContent = "";
    $("interrupt").hidden = true;
    $("thread-handoff").hidden = true;
    $("thread-handoff-done").hidden = true;
    $("seed").hidden = true;
    $("steps").hidden = true;
    $("send-error").textContent = "";
    let th;
    try {
      th = await api("GET", "/v1/threads/" + encodeURIComponent(id));
    } catch (e) {
      $("empty").hidden = false;
      $("thread").hidden = true;
      $("empty").firstElementChild.textContent = e.status === 404 ? "This thread was not found: it may belong to another API key. Pick one from the list, or start a new one." : e.message;
      return;
    }
    state.thread = th;
    $("empty").hidden = true;
    $("thread").hidden = false;
    showThreadHead(th);
    markActive();
    subscribe(th.id);
  }

  function showThreadHead(th) {
    $("thread-title").textContent = th.name || "Thread " + th.id.slice(-6);
    $("thread-network").textContent = th.network;
    $("thread-id").textContent = th.id;
    const parent = th.parent_id;
    $("thread-parent").hidden = !parent;
    $("parent-how").textContent = th.metadata && th.metadata.fork ? "forked from" : "handed off from";
    if (parent) {
      $("parent-link").textContent = parent.slice(-8);
      $("parent-link").href = "#/threads/" + parent;
    }
    const net = state.networks.find((n) => n.name === th.network);
    $("thread-handoff-btn").hidden = !(net && net.thread_handoff);
    setAgent(th.active_agent);
    state.runID = th.run ? th.run.id : "";
    if (th.run) {
      setStatus(th.run.status, th.run.active);
      if (th.run.status === "interrupted" && th.run.interrupt) showInterrupt(th.run.interrupt);
    } else {
      setStatus("idle");
    }
    const pending = (th.interrupts || []).find((i) => i.kind === "thread_handoff");
    if (!pending) hideProposal();
    else if (!state.proposal || state.proposal.id !== pending.id) showProposal(proposalOf(pending));
    showSeed(th);
  }

  const statusText = {
    idle: "idle", running: "running", suspended: "background", interrupted: "waiting for approval",
    completed: "completed", failed: "failed", cancelled: "cancelled",
  };

  function setStatus(s) {
    const el = $("status");
    el.textContent = statusText[s] || s;
    el.className = "badge s-" + s;
    el.dataset.status = s;
    // While the agent answers, a message is queued (multitask_strategy
    // enqueue) or interrupts the answer; a run waiting for approval waits.
    $("send").disabled = s === "interrupted";
    $("send").textContent = answering(s) ? "Queue" : "Send";
    $("interrupt-send").hidden = !answering(s);
    // A run that answers, works in the background or waits for approval
    // can be cancelled.
    $("cancel-run").hidden = !(answering(s) || s === "interrupted") || !state.runID;
  }

  function answering(s) {
    return s === "running" || s === "suspended";
  }

  function setAgent(a) {
    $("agent").textContent = a ? "▶ " + a : "";
  }

  // subscribe follows the thread's events, reconnecting with
  // Last-Event-ID until another thread is opened.
  async function subscribe(threadID) {
    const ctl = new AbortController();
    state.sub = ctl;
    let last = "";
    let wait = 500;
    while (!ctl.signal.aborted) {
      try {
        last = await sse("/v1/threads/" + encodeURIComponent(threadID) + "/events",
          { signal: ctl.signal, lastEventId: last, onOpen: () => { wait = 500; } },
          (ev) => onThreadEvent(threadID, ev));
      } catch (e) {
        if (ctl.signal.aborted) return;
        if (e instanceof APIError && e.status !== 503) return;
      }
      await new Promise((r) => setTimeout(r, wait));
      wait = Math.min(wait * 2, 8000);
    }
  }

  async function loadMessages(threadID) {
    const box = $("messages");
    box.textContent = "";
    $("timeline").textContent = "";
    state.live.clear(); state.bg.clear(); state.runs.clear();
    let after = 0;
    const msgs = [];
    for (let i = 0; i < 20; i++) {
      const page = await api("GET", "/v1/threads/" + threadID + "/messages?limit=500&after=" + after);
      msgs.push(...page.data);
      if (!page.has_more) break;
      after = page.next_cursor;
    }
    const results = new Map();
    for (const m of msgs) for (const p of m.parts) if (p.type === "tool_result") results.set(p.call_id, p);
    for (const m of msgs) {
      const run = runOf(m.id);
      if (m.metadata && m.metadata.continuation) {
        if (m.status !== "completed") {
          timelineWorker(run, m.status);
          backgroundBubble(run, m.draft || "");
        } else {
          timelineWorker(run, "completed");
        }
        continue;
      }
      if (m.role === "user") {
        userBubble(m.text);
        forkButton($("messages").lastElementChild, m);
      } else if (m.role === "assistant") {
        timelineAgent(run, m.agent);
        const b = bubble(m.agent);
        if (m.text) setBubbleText(b, m.text, true);
        for (const p of m.parts) if (p.type === "tool_call") toolChip(b, p.name, p.arguments, results.get(p.call_id));
        forkButton(b.el, m);
      }
    }
    box.scrollTop = box.scrollHeight;
  }

  // runOf returns the run id of a message id ("RUN-m3", "RUN-c4").
  function runOf(id) {
    const m = /^(.*)-[mc]\d+$/.exec(id || "");
    return m ? m[1] : "";
  }

  function onThreadEvent(threadID, ev) {
    if (!state.thread || state.thread.id !== threadID) return;
    const d = ev.data || {};
    // Drafts name their message, whose id starts with its run's.
    const run = d.run_id || runOf(d.message_id);
    switch (ev.type) {
      case "thread":
        state.thread = d;
        showThreadHead(d);
        loadMessages(threadID).catch((e) => { $("send-error").textContent = e.message; });
        break;
      case "resync":
        openThread(threadID);
        break;
      case "run_start":
        state.ended.delete(run);
        state.runID = run;
        // A new turn on the parent: the pending summary no longer covers it.
        if (state.proposal && !d.resumed) { state.proposal.stale = true; $("thread-handoff-stale").hidden = false; }
        setStatus("running");
        if (!d.resumed) timelineRun(run);
        timelineAgent(run, d.agent);
        setAgent(d.agent);
        break;
      case "agent_start":
        timelineAgent(run, d.agent);
        setAgent(d.agent);
        break;
      case "text_delta": {
        const b = liveBubble(run, d.agent, true);
        b.raw = (b.raw || "") + d.delta;
        b.body.textContent = b.raw;
        b.el.classList.add("streaming");
        scroll();
        break;
      }
      case "message": {
        const bg = state.bg.get(run);
        if (bg) { bg.el.remove(); state.bg.delete(run); }
        const b = liveBubble(run, d.agent, true);
        setBubbleText(b, d.text, true);
        b.el.classList.remove("streaming");
        b.final = true;
        scroll();
        break;
      }
      case "tool_call": {
        const b = liveBubble(run, d.agent);
        toolChip(b, d.name, d.arguments, null, d.id);
        break;
      }
      case "tool_result": {
        const chip = document.querySelector('[data-call="' + cssEscape(d.id) + '"]');
        if (chip) setResult(chip, d.output, d.error);
        break;
      }
      case "transfer":
        timelineTransfer(run, d.from, d.to, d.reason);
        notice("⇒ " + d.from + " transferred to " + d.to + (d.reason ? ": " + d.reason : ""), "transfer", "transfer-notice");
        closeLive(run);
        break;
      case "transfer_rejected":
        notice("✗ transfer " + d.from + " → " + d.to + " rejected: " + d.error, "warn");
        break;
      case "suspended":
        closeLive(run);
        setStatus("suspended");
        timelineWorker(run, "queued");
        notice("Handed to a background worker before " + (d.calls || []).length + " slow call(s); the answer streams here when it is ready", "bg", "background-notice");
        backgroundBubble(run, "");
        break;
      case "draft": {
        // A final draft repeats the answer, which its message event brings;
        // drafts may also trail the run's end (they come from the store).
        if (d.final || d.status === "completed" || d.status === "error" || state.ended.has(run)) break;
        setStatus("suspended");
        timelineWorker(run, d.status);
        const b = backgroundBubble(run, d.text || "");
        b.el.dataset.status = d.status;
        scroll();
        break;
      }
      case "interrupt":
        closeLive(run);
        setStatus("interrupted");
        showInterrupt(d.interrupt);
        break;
      case "error":
        notice("✗ " + runErrorSentence(d), "warn");
        break;
      case "run_end": {
        closeLive(run);
        if (d.status !== "suspended") state.ended.add(run);
        else state.ended.delete(run);
        setStatus(d.status);
        timelineEnd(run, d.status);
        if (d.status !== "suspended") {
          const bg = state.bg.get(run);
          if (bg) { bg.el.remove(); state.bg.delete(run); }
          const row = state.runs.get(run);
          if (row && row.querySelector(".worker")) timelineWorker(run, null);
        }
        if (d.status === "completed" || d.status === "failed" || d.status === "cancelled") $("interrupt").hidden = true;
        if (d.status === "completed" && !$("seed").hidden) refreshSeed(threadID).catch(() => {});
        break;
      }
      case "thread_handoff_proposed":
        if (!state.proposal || state.proposal.id !== d.id) showProposal(proposalOf(d));
        break;
      case "thread_handoff_decided":
        if (state.proposal && state.proposal.id === d.interrupt_id) hideProposal();
        if (d.applied) showThreadHandoffDone(d);
        break;
      case "shutdown":
        notice("The server is restarting; reconnecting…", "warn");
        break;
    }
  }

  function cssEscape(s) {
    return String(s).replace(/["\\]/g, "\\$&");
  }

  function scroll() {
    const box = $("messages");
    box.scrollTop = box.scrollHeight;
  }

  function userBubble(text, strategy) {
    const el = make("div", "msg user", undefined, "user-message");
    if (strategy) {
      el.dataset.strategy = strategy;
      el.appendChild(make("div", "who", strategy === "enqueue" ? "queued: sent once the answer is done" : "interrupting the answer"));
    }
    el.appendChild(make("div", "body", text));
    $("messages").appendChild(el);
    scroll();
  }

  function bubble(agent) {
    const el = make("div", "msg assistant", undefined, "assistant-message");
    el.dataset.agent = agent || "";
    const body = make("div", "body md");
    const tools = make("div", "tools");
    el.append(make("div", "who", agent || "assistant"), body, tools);
    $("messages").appendChild(el);
    return { el, body, tools, raw: "", done: false };
  }

  // liveBubble returns the bubble of the agent's current model turn; with
  // text, a bubble whose turn is over (its message or tool calls came)
  // gives way to a new one.
  function liveBubble(run, agent, text) {
    const k = run + "\u0000" + agent;
    let b = state.live.get(k);
    if (!b || b.done || text && (b.final || b.hasTools)) {
      b = bubble(agent);
      state.live.set(k, b);
    }
    return b;
  }

  function closeLive(run) {
    for (const [k, b] of state.live) if (k.startsWith(run + "\u0000")) b.done = true;
  }

  function setBubbleText(b, text, markdown) {
    b.raw = text;
    if (markdown) b.body.innerHTML = md().render(text); // escaped by the renderer
    else b.body.textContent = text;
  }

  function backgroundBubble(run, text) {
    let b = state.bg.get(run);
    if (!b) {
      b = bubble("background worker");
      b.el.classList.add("background");
      b.el.setAttribute("data-testid", "background-message");
      state.bg.set(run, b);
    }
    if (text) setBubbleText(b, text, true);
    else b.body.textContent = "working…";
    return b;
  }

  function toolChip(b, name, args, result, callID) {
    const chip = document.createElement("details");
    chip.className = "tool" + (/^transfer_to_/.test(name) ? " transfer-call" : "");
    chip.setAttribute("data-testid", "tool-call");
    if (callID) chip.dataset.call = callID;
    b.hasTools = true;
    const sum = document.createElement("summary");
    sum.textContent = "→ " + name;
    const pre = document.createElement("pre");
    pre.textContent = pretty(args);
    chip.append(sum, pre);
    b.tools.appendChild(chip);
    if (result) setResult(chip, result.is_error ? "" : result.text, result.is_error ? result.text : "");
    return chip;
  }

  function setResult(chip, output, error) {
    const sum = chip.querySelector("summary");
    sum.textContent += error ? "  ✗" : "  ✓";
    chip.classList.add(error ? "failed" : "done");
    chip.appendChild(make("pre", "result", "← " + pretty(error || output)));
  }

  function pretty(v) {
    if (v === undefined || v === null) return "";
    if (typeof v === "string") {
      try { return JSON.stringify(JSON.parse(v), null, 2); } catch (e) { return v; }
    }
    return JSON.stringify(v, null, 2);
  }

  function notice(text, kind, testid) {
    $("messages").appendChild(make("div", "notice " + (kind || ""), text, testid));
    scroll();
  }

  // ---- timeline ------------------------------------------------------

  function timelineRun(run) {
    let row = state.runs.get(run);
    if (row) return row;
    row = make("div", "run");
    row.dataset.run = run;
    const label = make("span", "run-label mono", run ? run.slice(-6) : "run");
    label.title = run;
    row.append(label, make("div", "chain"), make("span", "run-end"));
    if (run) {
      const btn = make("button", "ghost run-steps", "Steps", "run-steps");
      btn.type = "button";
      btn.title = "The run's steps: model calls, tools, transfers, waits";
      btn.addEventListener("click", () => showSteps(run));
      row.appendChild(btn);
    }
    $("timeline").appendChild(row);
    state.runs.set(run, row);
    row.lastAgent = "";
    return row;
  }

  // make returns a new tag element with class cls and, when given, text
  // and a data-testid.
  function make(tag, cls, text, testid) {
    const n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined) n.textContent = text;
    if (testid) n.setAttribute("data-testid", testid);
    return n;
  }

  function timelineAgent(run, agent) {
    if (!agent) return;
    const row = timelineRun(run);
    if (row.lastAgent === agent) return;
    const chain = row.querySelector(".chain");
    if (row.lastAgent) chain.appendChild(make("span", "edge", "→"));
    const n = make("span", "agent-node", agent, "timeline-node");
    n.dataset.agent = agent;
    chain.appendChild(n);
    row.lastAgent = agent;
  }

  function timelineTransfer(run, from, to, reason) {
    const row = timelineRun(run);
    const chain = row.querySelector(".chain");
    if (row.lastAgent !== from) timelineAgent(run, from);
    const e = make("span", "edge transfer", "⇒", "timeline-transfer");
    e.title = reason || "transfer";
    chain.appendChild(e);
    const n = make("span", "agent-node", to, "timeline-node");
    n.dataset.agent = to;
    chain.appendChild(n);
    row.lastAgent = to;
  }

  function timelineWorker(run, status) {
    const row = timelineRun(run);
    let w = row.querySelector(".worker");
    if (!w) {
      w = make("span", "worker", "", "timeline-worker");
      row.querySelector(".chain").appendChild(w);
    }
    if (status) {
      w.textContent = "⚙ background: " + status;
      w.dataset.status = status;
    } else if (w.dataset.status !== "completed") {
      w.textContent = "⚙ background: done";
      w.dataset.status = "completed";
    }
  }

  function timelineEnd(run, status) {
    const row = timelineRun(run);
    const end = row.querySelector(".run-end");
    end.textContent = { completed: "✓ completed", failed: "✗ failed", cancelled: "⊘ cancelled", interrupted: "waiting for approval", suspended: "in the background" }[status] || status;
    end.dataset.status = status;
  }

  // ---- inspector: steps and forks -------------------------------------

  const stepNames = {
    model_call: "model", tool_call: "tool", agent_tool_call: "agent tool", transfer: "transfer",
    approval: "approval", background: "background",
  };

  function fmtMS(ms) {
    if (ms >= 1000) return (ms / 1000).toFixed(ms >= 10000 ? 0 : 1) + " s";
    if (ms >= 1) return ms.toFixed(ms >= 100 ? 0 : 1) + " ms";
    return Math.round(ms * 1000) + " µs";
  }

  // showSteps shows a run's steps as a waterfall: each step a bar placed
  // by its start and sized by its duration on the run's span.
  async function showSteps(run) {
    const th = state.thread;
    if (!th) return;
    const box = $("waterfall");
    box.textContent = "";
    $("step-detail").hidden = true;
    $("steps-run").textContent = run.slice(-8);
    $("steps-run").title = run;
    $("steps").hidden = false;
    let data;
    try {
      data = await api("GET", "/v1/threads/" + encodeURIComponent(th.id) + "/runs/" + encodeURIComponent(run) + "/steps");
    } catch (e) {
      $("steps-summary").textContent = e.message;
      return;
    }
    const t0 = Date.parse(data.started_at);
    let end = t0;
    for (const st of data.data) end = Math.max(end, Date.parse(st.started_at) + st.duration_ms);
    const span = Math.max(end - t0, 1);
    $("steps-summary").textContent = data.data.length + (data.data.length === 1 ? " step · " : " steps · ") + fmtMS(span) + " · " + data.tokens.input + " in / " + data.tokens.output + " out tokens · " + data.status;
    for (const st of data.data) {
      const row = make("div", "step" + (st.sub ? " sub" : ""), undefined, "step-row");
      row.dataset.type = st.type;
      row.dataset.id = st.id;
      row.tabIndex = 0;
      const what = st.type === "model_call" ? st.model : st.type === "transfer" ? "→ " + st.name : st.name || "";
      const label = make("span", "label", stepNames[st.type] + " · " + st.agent + (what ? " · " + what : ""));
      label.title = label.textContent;
      const track = make("span", "track");
      const bar = make("span", "bar");
      const left = Math.max(0, Date.parse(st.started_at) - t0) / span * 100;
      bar.style.left = Math.min(left, 99.5) + "%";
      bar.style.width = Math.min(st.duration_ms / span * 100, 100 - Math.min(left, 99.5)) + "%";
      track.appendChild(bar);
      let figs = fmtMS(st.duration_ms) + (st.ongoing ? " …" : "");
      if (st.tokens) figs += " · " + st.tokens.input + "/" + st.tokens.output + " tok";
      if (st.first_token_ms) figs += " · ttft " + fmtMS(st.first_token_ms);
      if (st.error) figs += " · error";
      row.append(label, track, make("span", "figs", figs));
      const open = () => showStep(run, st.id, row);
      row.addEventListener("click", open);
      row.addEventListener("keydown", (e) => { if (e.key === "Enter") open(); });
      box.appendChild(row);
    }
  }

  // showStep opens one step in full: a model call's request and answer, a
  // tool call's arguments and output, a wait's interrupt.
  async function showStep(run, id, row) {
    for (const r of $("waterfall").children) r.classList.toggle("selected", r === row);
    const box = $("step-detail");
    box.textContent = "";
    box.hidden = false;
    let st;
    try {
      st = await api("GET", "/v1/threads/" + encodeURIComponent(state.thread.id) + "/runs/" + encodeURIComponent(run) + "/steps/" + encodeURIComponent(id));
    } catch (e) {
      box.appendChild(make("p", "error", e.message));
      return;
    }
    const d = st.detail || {};
    const section = (title, text, testid) => {
      box.append(make("h4", "", title), make("pre", "", text, testid));
    };
    box.appendChild(make("div", "meta", [stepNames[st.type], st.agent, st.model || st.name, fmtMS(st.duration_ms), st.request_id].filter(Boolean).join(" · ")));
    if (d.request) {
      const req = d.request;
      let text = "";
      if (req.system) text += "system:\n" + req.system + "\n\n";
      for (const m of req.messages || []) {
        text += m.role + (m.agent ? " (" + m.agent + ")" : "") + ":\n";
        for (const p of m.parts || []) {
          if (p.type === "text" || p.type === "reasoning") text += p.text + "\n";
          else if (p.type === "tool_call") text += "→ " + p.name + " " + JSON.stringify(p.arguments) + "\n";
          else if (p.type === "tool_result") text += "← " + p.name + ": " + p.text + "\n";
        }
        text += "\n";
      }
      if (d.dropped_messages) text = "(" + d.dropped_messages + " older messages left out)\n\n" + text;
      if (req.tools && req.tools.length) text += "tools: " + req.tools.map((t) => t.name).join(", ");
      section("Request", text.trim(), "step-request");
    }
    if (d.answer) {
      let text = "";
      for (const p of d.answer.message.parts || []) {
        if (p.type === "text") text += p.text + "\n";
        else if (p.type === "reasoning") text += "(reasoning) " + p.text + "\n";
        else if (p.type === "tool_call") text += "→ " + p.name + " " + JSON.stringify(p.arguments) + "\n";
      }
      text += "\nfinish: " + (d.answer.finish_reason || "") + " · usage " + JSON.stringify(d.answer.usage);
      section("Answer", text.trim(), "step-answer");
    }
    if (d.arguments !== undefined) section("Arguments", pretty(d.arguments), "step-arguments");
    if (d.output !== undefined) section(d.is_error ? "Error" : "Output", pretty(d.output), "step-output");
    if (d.interrupt) section("Waiting for", pretty(d.interrupt), "step-interrupt");
    for (const a of d.attempts || []) section("Attempt " + a.attempt + " failed", a.error + " (" + fmtMS(a.duration_ms) + ")");
    if (st.error) section("Error", st.error);
  }

  // forkButton adds "Fork from here" to the bubble of a stored message.
  function forkButton(el, m) {
    if (!el || !m.id) return;
    const btn = make("button", "ghost fork-here", "Fork from here", "fork-here");
    btn.type = "button";
    btn.title = "A new thread with the history up to this message (edit it if you like)";
    btn.addEventListener("click", () => forkAt(m));
    el.insertBefore(btn, el.firstChild);
  }

  async function forkAt(m) {
    const th = state.thread;
    const body = { at: m.id };
    if (m.role === "user") {
      const text = window.prompt("Fork from here. Edit the message, or keep it:", m.text);
      if (text === null) return;
      if (text !== m.text && text.trim()) body.edit = { text };
    }
    try {
      const fork = await api("POST", "/v1/threads/" + encodeURIComponent(th.id) + "/fork", body);
      await loadThreads(true);
      location.hash = "#/threads/" + fork.id;
    } catch (e) {
      $("send-error").textContent = e.message;
    }
  }

  $("steps-close").addEventListener("click", () => { $("steps").hidden = true; });

  // ---- interrupts ----------------------------------------------------

  function showInterrupt(intr) {
    if (!intr) return;
    state.interrupt = intr;
    const box = $("interrupt-actions");
    box.textContent = "";
    for (const ar of intr.action_requests || []) {
      const div = make("div", "action");
      const h = make("div", "action-name", ar.name + (ar.description ? " — " + ar.description : ""));
      const ta = document.createElement("textarea");
      ta.rows = 4;
      ta.value = JSON.stringify(ar.args, null, 2);
      ta.dataset.call = ar.call_id || "";
      ta.setAttribute("data-testid", "interrupt-args");
      ta.setAttribute("aria-label", "Arguments of " + ar.name);
      div.append(h, ta);
      box.appendChild(div);
    }
    $("interrupt-error").textContent = "";
    $("interrupt").hidden = false;
  }

  async function decide(kind) {
    const intr = state.interrupt;
    if (!intr) return;
    let body;
    if (kind === "edit") {
      const decisions = [];
      for (const ta of $("interrupt-actions").querySelectorAll("textarea")) {
        let args;
        try { args = JSON.parse(ta.value); } catch (e) {
          $("interrupt-error").textContent = "The arguments are not valid JSON (" + e.message + "). Fix them, then approve again.";
          return;
        }
        decisions.push({ type: "edit", call_id: ta.dataset.call, args });
      }
      body = { decisions, stream: true };
    } else if (kind === "reject") {
      body = { type: "reject", message: $("reject-reason").value, stream: true };
    } else {
      body = { type: "approve", stream: true };
    }
    for (const b of ["approve", "edit-approve", "reject"]) $(b).disabled = true;
    try {
      await sse("/v1/interrupts/" + encodeURIComponent(intr.interrupt_id || intr.id) + "/decision",
        { method: "POST", body, onOpen: () => { $("interrupt").hidden = true; state.interrupt = null; } }, () => {});
    } catch (e) {
      $("interrupt-error").textContent = e.message;
    } finally {
      for (const b of ["approve", "edit-approve", "reject"]) $(b).disabled = false;
    }
  }

  // ---- thread handoff ------------------------------------------------
  //
  // A proposal is a stored interrupt of kind thread_handoff: it shows after
  // a reload (the thread's pending interrupts) and on every device (the
  // thread's events), and it is decided through the one interrupt route.

  // proposalOf reads the proposal of an interrupt as GET /v1/interrupts/{id}
  // shows it or as POST …/handoff answers it.
  function proposalOf(x) {
    return { id: x.interrupt_id || x.id, payload: x.payload || {}, stale: !!x.stale };
  }

  function showProposal(p) {
    state.proposal = p;
    const pl = p.payload;
    const args = (pl.action_requests && pl.action_requests[0] && pl.action_requests[0].args) || {};
    const title = pl.title || (args.summary_json && args.summary_json.title) || "";
    const markdown = pl.summary_md || args.summary_md || "";
    p.title = title; p.markdown = markdown;
    $("thread-handoff-title").value = title;
    $("thread-handoff-md").value = markdown;
    $("thread-handoff-preview").innerHTML = md().render(markdown);
    $("thread-handoff-agent").textContent = "On approval, " + (pl.assistant_id || args.assistant_id) + " takes over in the new thread.";
    $("thread-handoff-stale").hidden = !p.stale;
    $("thread-handoff-error").textContent = "";
    $("thread-handoff").hidden = false;
  }

  function hideProposal() {
    state.proposal = null;
    $("thread-handoff").hidden = true;
  }

  async function requestThreadHandoff(replace) {
    const th = state.thread;
    $("thread-handoff-error").textContent = "";
    $("thread-handoff-btn").disabled = true;
    $("thread-handoff-repropose").disabled = true;
    try {
      const p = await api("POST", "/v1/threads/" + th.id + "/handoff", replace ? { replace: true } : {});
      if (state.thread && state.thread.id === th.id) showProposal(proposalOf(p));
    } catch (e) {
      (replace ? $("thread-handoff-error") : $("send-error")).textContent = e.message;
    } finally {
      $("thread-handoff-btn").disabled = false;
      $("thread-handoff-repropose").disabled = false;
    }
  }

  async function decideThreadHandoff(approve) {
    const p = state.proposal;
    if (!p) return;
    let decision = { type: "reject" };
    if (approve) {
      const title = $("thread-handoff-title").value.trim();
      const markdown = $("thread-handoff-md").value.trim();
      const args = {};
      if (title !== p.title.trim()) args.title = title;
      if (markdown !== p.markdown.trim()) args.summary_md = markdown;
      decision = Object.keys(args).length ? { type: "edit", args } : { type: "approve" };
    }
    for (const b of ["thread-handoff-approve", "thread-handoff-reject"]) $(b).disabled = true;
    try {
      const out = await api("POST", "/v1/interrupts/" + encodeURIComponent(p.id) + "/decision", { decisions: [decision] });
      hideProposal();
      if (out.applied) {
        await loadThreads(true);
        location.hash = "#/threads/" + out.child_thread_id; // switch to the child
      } else {
        notice(out.message || "Thread handoff rejected.", "", "thread-handoff-rejected");
      }
    } catch (e) {
      if (e.type === "stale_proposal") $("thread-handoff-stale").hidden = false;
      $("thread-handoff-error").textContent = e.type === "conflict"
        ? "This proposal was already decided, here or on another device (" + e.detail + "). Reload the thread to see the outcome."
        : e.message;
    } finally {
      for (const b of ["thread-handoff-approve", "thread-handoff-reject"]) $(b).disabled = false;
    }
  }

  // showThreadHandoffDone says, on a parent, that its proposal was approved
  // (by another tab or device), with a link to the child.
  function showThreadHandoffDone(out) {
    const box = $("thread-handoff-done");
    box.textContent = "";
    box.append(document.createTextNode((out.message || "Thread handoff approved.") + " "));
    const a = document.createElement("a");
    a.href = "#/threads/" + out.child_thread_id;
    a.textContent = "Open the new thread";
    a.setAttribute("data-testid", "open-child");
    box.appendChild(a);
    box.hidden = false;
  }

  // showSeed shows, on a child thread whose first turn has not ended, the
  // summary it starts with, its parent and the agent taking over.
  async function showSeed(th) {
    const h = (th.metadata || {}).handoff;
    const seeded = h && h.pending && h.child_thread_id === th.id;
    $("seed").hidden = !seeded;
    if (!seeded) return;
    $("seed-agent").textContent = h.assistant_id;
    $("seed-parent").textContent = "thread " + h.source_thread_id.slice(-8);
    $("seed-parent").href = "#/threads/" + h.source_thread_id;
    $("seed-summary").textContent = "";
    try {
      const intr = await api("GET", "/v1/interrupts/" + encodeURIComponent(h.handoff_id));
      const out = intr.outcome || {};
      if (state.thread && state.thread.id === th.id) $("seed-summary").innerHTML = md().render(out.summary_md || "");
    } catch (e) { /* the card shows without the summary */ }
  }

  // refreshSeed reads the thread again after a completed run, until its seed
  // is cleared (the clean-up may land just after the run's end).
  async function refreshSeed(threadID) {
    for (let i = 0; i < 10 && !$("seed").hidden; i++) {
      const th = await api("GET", "/v1/threads/" + encodeURIComponent(threadID));
      if (!state.thread || state.thread.id !== threadID) return;
      const h = (th.metadata || {}).handoff;
      if (!h || !h.pending) { $("seed").hidden = true; return; }
      await new Promise((r) => setTimeout(r, 300));
    }
  }

  // ---- sending -------------------------------------------------------

  // send sends the typed message. While the agent answers, it goes to the
  // thread's queue (enqueue), or with strategy "interrupt" stops the answer
  // where it is and runs next; the thread's events show its run.
  async function send(strategy) {
    const th = state.thread;
    const text = $("input").value.trim();
    if (!th || !text) return;
    $("send-error").textContent = "";
    $("input").value = "";
    if (answering($("status").dataset.status)) {
      strategy = strategy || "enqueue";
      userBubble(text, strategy);
      try {
        await api("POST", "/v1/threads/" + th.id + "/runs", { input: text, multitask_strategy: strategy });
      } catch (e) {
        $("send-error").textContent = e.message;
      }
      return;
    }
    userBubble(text);
    state.runID = ""; // until the new run's run_start
    setStatus("running");
    try {
      await drain("/v1/threads/" + th.id + "/runs", { input: text, stream: true });
    } catch (e) {
      $("send-error").textContent = e.message;
      setStatus(state.thread && state.thread.run ? state.thread.run.status : "idle");
    }
  }

  // cancelRun cancels the thread's current run: it stops at its next safe
  // boundary, keeping what it said, and ends cancelled; the thread's
  // events show its end.
  async function cancelRun() {
    const th = state.thread;
    if (!th || !state.runID) return;
    $("send-error").textContent = "";
    $("cancel-run").disabled = true;
    try {
      const run = await api("POST", "/v1/threads/" + th.id + "/runs/" + state.runID + "/cancel");
      setStatus(run.status);
      $("interrupt").hidden = true;
    } catch (e) {
      $("send-error").textContent = e.message;
    } finally {
      $("cancel-run").disabled = false;
    }
  }

  // ---- wiring --------------------------------------------------------

  $("login-form").addEventListener("submit", (e) => {
    e.preventDefault();
    login($("api-key").value.trim());
  });
  $("logout").addEventListener("click", () => logout(""));
  $("new-thread").addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const th = await api("POST", "/v1/threads", { network: $("network").value });
      $("threads").prepend(threadItem(th));
      location.hash = "#/threads/" + th.id;
    } catch (err) {
      $("send-error").textContent = err.message;
    }
  });
  $("more-threads").addEventListener("click", () => loadThreads(false));
  $("composer").addEventListener("submit", (e) => { e.preventDefault(); send(); });
  $("interrupt-send").addEventListener("click", () => send("interrupt"));
  $("cancel-run").addEventListener("click", () => cancelRun());
  $("input").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); if (!$("send").disabled) send(); }
  });
  $("approve").addEventListener("click", () => decide("approve"));
  $("edit-approve").addEventListener("click", () => decide("edit"));
  $("reject").addEventListener("click", () => decide("reject"));
  $("thread-handoff-btn").addEventListener("click", () => requestThreadHandoff(false));
  $("thread-handoff-repropose").addEventListener("click", () => requestThreadHandoff(true));
  $("thread-handoff-approve").addEventListener("click", () => decideThreadHandoff(true));
  $("thread-handoff-reject").addEventListener("click", () => decideThreadHandoff(false));
  $("thread-handoff-md").addEventListener("input", () => { $("thread-handoff-preview").innerHTML = md().render($("thread-handoff-md").value); });
  window.addEventListener("hashchange", route);

  if (state.key) login(state.key);
  else $("login").hidden = false;
})();

// The live view's page: one EventSource of state snapshots (at most ten a
// second), rendered into the panels; buttons post actions.
"use strict";

const $ = (id) => document.getElementById(id);
const esc = (s) => String(s ?? "").replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
const set = (id, text) => { const e = $(id); if (e.textContent !== String(text)) e.textContent = text; };
const pct = (a, b) => (b > 0 ? Math.min(100, (100 * a) / b) : 0);
const ago = (t) => { const s = (Date.now() - new Date(t).getTime()) / 1000; return s < 1 ? "just now" : s.toFixed(0) + " s ago"; };
const mini = (used, cap) => `<span class="mini"><i class="${used >= cap ? "full" : ""}" style="width:${pct(used, cap)}%"></i></span>${used}/${cap}`;
const watches = (w) => esc(w.Key + (w.LabelSelector ? " · " + w.LabelSelector : "") + (w.FieldSelector ? " · " + w.FieldSelector : "") + (w.SendInitialEvents ? " · sendInitialEvents" : "") + " · RV \"" + w.RequestedRV + "\"");

let state = null;

function render(s) {
  state = s;
  set("etcd-revision", s.etcd.error ? "– (" + s.etcd.error + ")" : s.etcd.revision);
  set("etcd-compacted", s.etcd.compacted || "never");

  const c = s.cacher;
  if (!c) {
    set("ring-len", "the API server is restarting");
  } else {
    set("ring-len", `${c.ring.Len} / ${c.ring.Capacity}`);
    $("ring-fill").style.width = pct(c.ring.Len, c.ring.Capacity) + "%";
    set("ring-rvs", c.ring.Len ? `${c.ring.OldestRV} → ${c.ring.NewestRV}` : "empty");
    set("ring-resizes", c.ring.Resizes);
    set("cache-rv", `${c.resourceVersion} · ${c.objects}`);
    set("budget", c.budgetLeftMs.toFixed(1) + " ms of 100 ms");
    $("budget-fill").style.width = pct(c.budgetLeftMs, 100) + "%";
    set("dispatched", c.dispatched);
    set("blocked", c.blocked);
    set("terminated", c.terminated);
    set("bookmarks", c.bookmarksSent);
    $("cw-rows").innerHTML = (c.watchers || []).map((w) =>
      `<tr data-id="${w.ID}"><td>${w.ID}</td><td>${watches(w)}</td><td class="num">${w.StartRV}</td><td>${mini(w.InputUsed, w.InputCapacity)}</td><td>${mini(w.ResultUsed, w.ResultCapacity)}</td><td class="num">${w.Sent}</td><td class="num">${w.Bookmarks}</td><td class="num">${w.LastRV}</td></tr>`).join("") || `<tr><td colspan="8" class="muted">none</td></tr>`;
    $("cw-ended").innerHTML = (c.ended || []).slice().reverse().map((w) =>
      `<tr class="ended" data-id="${w.ID}"><td>${w.ID}</td><td>${watches(w)}</td><td class="num">${w.Sent}</td><td>${mini(w.InputUsed, w.InputCapacity)}</td><td class="${w.Ended.startsWith("too slow") ? "why-slow" : ""}">${esc(w.Ended)} <span class="muted">${ago(w.EndedAt)}</span></td></tr>`).join("") || `<tr><td colspan="5" class="muted">none yet</td></tr>`;
  }

  $("streams").innerHTML = (s.streams.open || []).map((t) =>
    `<tr><td>${t.id}</td><td>${esc(t.client)}</td><td>${esc(decodeURIComponent(t.path))}</td><td class="num">${t.frames}</td><td class="num">${t.flushes}</td><td class="num">${t.bytes}</td></tr>`).join("") || `<tr><td colspan="6" class="muted">no watch open</td></tr>`;
  set("streams-closed", (s.streams.closed || []).slice(-5).map((t) => `#${t.id} (${t.frames} frames)`).join(", ") || "none");

  const r = s.informer.reflector;
  const phase = $("reflector-phase");
  set("reflector-phase", r.Phase);
  phase.className = "phase " + (r.Phase.startsWith("watching") ? "watching" : r.Phase.startsWith("backing") ? "backing" : r.Phase.includes("list") ? "listing" : "");
  set("reflector-since", r.PhaseSince && !r.PhaseSince.startsWith("0001") ? "since " + ago(r.PhaseSince) : "");
  set("reflector-rv", r.LastSyncResourceVersion || "–");
  set("reflector-lists", r.Lists);
  set("reflector-watches", r.Watches);
  set("reflector-errors", r.Errors);
  set("reflector-lasterror", r.LastError ? "last error (" + ago(r.LastErrorAt) + "): " + r.LastError : "");
  set("fifo-depth", s.informer.queueLen);
  set("indexer-objects", s.informer.objects);
  set("indexer-rv", s.informer.storeRV || "–");
  const keys = s.informer.indexKeys || {};
  set("indexer-keys", Object.keys(keys).sort().map((k) => `${k}: ${keys[k]}`).join(" · ") || "empty");
  const h = s.informer.handler;
  set("handler-calls", `${h.adds} · ${h.updates} · ${h.deletes}`);
  set("handler-lag", `${h.lastLagMs.toFixed(1)} · ${h.p50LagMs.toFixed(1)} · ${h.p99LagMs.toFixed(1)} ms`);

  $("mine").innerHTML = (s.watchers || []).map((w) =>
    `<tr data-id="${w.id}"><td>${w.id}</td><td>${esc(w.kind)}</td><td>${esc(w.options)}</td><td class="num">${w.received}</td><td>${esc(w.last)}</td><td class="${w.ended ? "err" : ""}">${esc(w.ended || "running")}</td><td>${w.ended ? "" : `<button data-do="stop-watcher" data-id="${w.id}">stop</button>`}</td></tr>`).join("") || `<tr><td colspan="7" class="muted">add one with the buttons above</td></tr>`;

  const rc = s.real;
  $("real-none").hidden = !!rc;
  $("real-on").hidden = !rc;
  if (rc) {
    set("real-server", rc.server);
    set("real-written", rc.written);
    set("real-failed", rc.failed);
    set("real-objects", rc.objects);
    const rk = rc.indexKeys || {};
    set("real-keys", Object.keys(rk).sort().map((k) => `${k}: ${rk[k]}`).join(" · ") || "empty");
    set("real-rv", `${rc.lastSyncRV || "–"} · ${rc.storeRV || "–"}`);
    set("real-fifo", rc.queueLen);
    set("real-calls", `${rc.handler.adds} · ${rc.handler.updates} · ${rc.handler.deletes}`);
    set("real-lag", `${rc.handler.lastLagMs.toFixed(1)} · ${rc.handler.p50LagMs.toFixed(1)} · ${rc.handler.p99LagMs.toFixed(1)} ms`);
    $("real-metrics").innerHTML = (rc.metrics || []).map((m) =>
      `<tr data-metric="${esc(m.name)}"><td><code>${esc(m.name)}</code></td><td class="num">${m.found ? m.value : "–"}</td><td>${esc(m.shows)}</td><td>${esc(m.twin)}</td></tr>`).join("") || `<tr><td colspan="4" class="muted">${esc(rc.metricsError || "not read yet")}</td></tr>`;
    set("real-note", rc.metricsNote + (rc.metricsError ? " · last read failed: " + rc.metricsError : rc.metricsAt && !rc.metricsAt.startsWith("0001") ? " · read " + ago(rc.metricsAt) : ""));
  }

  const lines = (es) => (es || []).slice().reverse().map((e) =>
    `<li><span class="muted">${new Date(e.at).toLocaleTimeString()}</span> <span class="layer">${esc(e.layer)}</span> ${esc(e.text)}${e.path ? ` <span class="path">${esc(e.path.join(" → "))}</span>` : ""}</li>`).join("");
  $("log").innerHTML = lines(s.log);
  $("events").innerHTML = lines(s.events);
}

async function act(params) {
  const q = new URLSearchParams(params);
  const res = $("result");
  res.className = "result";
  res.textContent = "…";
  try {
    const r = await fetch("/api/action?" + q, { method: "POST", headers: { "X-Lab-View": "1" } });
    const body = await r.json();
    res.textContent = body.message;
    res.className = "result" + (body.ok ? "" : " bad");
  } catch (e) {
    res.textContent = String(e);
    res.className = "result bad";
  }
}

document.addEventListener("click", (ev) => {
  const b = ev.target.closest("button[data-do]");
  if (!b) return;
  const p = { do: b.dataset.do };
  if (b.dataset.kind) p.kind = b.dataset.kind;
  if (b.dataset.id) p.id = b.dataset.id;
  if (p.do === "burst") p.n = $("burst-n").value;
  if (p.do === "restart") p.others = $("others").checked ? 5 : 0;
  act(p);
});

function connect() {
  const es = new EventSource("/api/events");
  es.onopen = () => { set("conn", "live"); $("conn").className = "conn ok"; };
  es.onmessage = (m) => render(JSON.parse(m.data));
  es.onerror = () => { set("conn", "disconnected: is scripts/labs view still running?"); $("conn").className = "conn bad"; };
}
connect();

// The flinksql dashboard: plain JavaScript over the REST API (Flink's
// paths, and /jobs/:id/operators for the per-operator figures). It
// re-renders the current page every few seconds.
"use strict";

const refreshMs = Number(new URLSearchParams(location.search).get("refresh")) || 2000;

async function get(path) {
  const r = await fetch(path);
  if (!r.ok) throw new Error(path + ": " + r.status);
  return r.json();
}

function esc(s) {
  return String(s).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}

function bytes(n) {
  if (n === undefined || n === null || n < 0) return "-";
  const u = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + u[i];
}

function ms(n) { return n === undefined || n < 0 ? "-" : n < 1000 ? n + " ms" : (n / 1000).toFixed(1) + " s"; }
function time(t) { return t > 0 ? new Date(t).toLocaleTimeString() : "-"; }
function wm(v) {
  const n = Number(v);
  if (!isFinite(n) || n <= -9007199254740991) return "No Watermark";
  if (n >= 9007199254740991) return "MAX";
  return new Date(n).toISOString();
}
function rate(v) { return (Math.round(v * 10) / 10).toString(); }

async function jobsPage() {
  const data = await get("jobs/overview");
  let html = "<h2>Jobs</h2><table id='jobs'><tr><th>Name</th><th>Id</th><th>State</th><th>Start</th><th>Duration</th><th>Tasks</th></tr>";
  for (const j of data.jobs) {
    html += `<tr class="job" data-id="${esc(j.jid)}"><td><a href="#/job/${esc(j.jid)}">${esc(j.name)}</a></td><td>${esc(j.jid)}</td>` +
      `<td class="state-${esc(j.state)}">${esc(j.state)}</td><td>${time(j["start-time"])}</td><td>${ms(j.duration)}</td><td class="num">${j.tasks.total}</td></tr>`;
  }
  if (data.jobs.length === 0) html += "<tr><td colspan=6>No jobs.</td></tr>";
  return html + "</table>";
}

// layout places the vertices in columns by their longest distance from a
// source.
function layout(nodes) {
  const depth = {};
  const byId = {};
  for (const n of nodes) byId[n.id] = n;
  const d = id => {
    if (depth[id] !== undefined) return depth[id];
    const n = byId[id];
    depth[id] = 0;
    let m = 0;
    for (const i of (n.inputs || [])) m = Math.max(m, d(i.id) + 1);
    return (depth[id] = m);
  };
  const cols = {};
  for (const n of nodes) (cols[d(n.id)] = cols[d(n.id)] || []).push(n);
  const pos = {};
  const W = 240, H = 70, GX = 70, GY = 20;
  let maxRows = 0;
  for (const [c, list] of Object.entries(cols)) {
    list.forEach((n, r) => { pos[n.id] = {x: 10 + c * (W + GX), y: 10 + r * (H + GY)}; });
    maxRows = Math.max(maxRows, list.length);
  }
  return {pos, W, H, width: 20 + Object.keys(cols).length * (W + GX), height: 20 + maxRows * (H + GY)};
}

function graphSVG(job, ops) {
  const nodes = job.plan.nodes;
  const L = layout(nodes);
  const rateOf = {};
  for (const v of job.vertices) rateOf[v.id] = v;
  let svg = `<svg id="graph-svg" width="${L.width}" height="${L.height}" xmlns="http://www.w3.org/2000/svg">` +
    `<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>`;
  for (const n of nodes) {
    for (const i of (n.inputs || [])) {
      const a = L.pos[i.id], b = L.pos[n.id];
      const x1 = a.x + L.W, y1 = a.y + L.H / 2, x2 = b.x, y2 = b.y + L.H / 2;
      svg += `<path class="edge" d="M${x1},${y1} C${x1 + 35},${y1} ${x2 - 35},${y2} ${x2},${y2}"/>` +
        `<text class="edge-label" x="${(x1 + x2) / 2 - 20}" y="${(y1 + y2) / 2 - 4}">${esc(i.ship_strategy)}</text>`;
    }
  }
  for (const n of nodes) {
    const p = L.pos[n.id];
    const v = rateOf[n.id];
    const name = n.description.length > 38 ? n.description.slice(0, 36) + "…" : n.description;
    svg += `<g class="node" data-vertex="${esc(n.id)}"><rect x="${p.x}" y="${p.y}" width="${L.W}" height="${L.H}"/>` +
      `<text x="${p.x + 8}" y="${p.y + 18}">${esc(name)}</text>` +
      `<text x="${p.x + 8}" y="${p.y + 36}">Parallelism: ${n.parallelism}</text>` +
      `<text x="${p.x + 8}" y="${p.y + 54}">in ${v.metrics["read-records"]} · out ${v.metrics["write-records"]}</text></g>`;
  }
  return svg + "</svg>";
}

async function overviewTab(id, job) {
  const ops = (await get(`jobs/${id}/operators`)).operators;
  let html = `<h3>Operator graph</h3><div id="graph">${graphSVG(job, ops)}</div>`;
  html += "<h3>Operators</h3><table id='operators'><tr><th>Vertex</th><th>Operator</th><th>Records in</th><th>Records out</th>" +
    "<th>In/s</th><th>Out/s</th><th>Input watermark</th><th>Late dropped</th><th>State (live)</th><th>State (last checkpoint)</th></tr>";
  for (const o of ops) {
    const live = (o.stateMemoryBytes || 0) + (o.stateDiskBytes || 0);
    const tp = Math.max(o.numRecordsInPerSecond || 0, o.numRecordsOutPerSecond || 0);
    html += `<tr class="operator"><td>${esc(o.vertex)}</td><td>${esc(o.name)}</td><td class="num">${o.numRecordsIn ?? "-"}</td>` +
      `<td class="num">${o.numRecordsOut ?? "-"}</td><td class="num">${rate(o.numRecordsInPerSecond || 0)}</td>` +
      `<td class="num throughput" data-value="${tp}">${rate(o.numRecordsOutPerSecond || 0)}</td>` +
      `<td>${o.currentInputWatermark !== undefined ? wm(o.currentInputWatermark) : wm(o.currentOutputWatermark)}</td>` +
      `<td class="num">${o.numLateRecordsDropped ?? "-"}</td>` +
      `<td class="num">${live ? bytes(live) + (o.stateEntries ? " (" + o.stateEntries + " entries)" : "") : "-"}</td>` +
      `<td class="num">${o.checkpointStateSize !== undefined ? bytes(o.checkpointStateSize) : "-"}</td></tr>`;
  }
  html += "</table><h3>Backpressure</h3><table id='backpressure'><tr><th>Vertex</th><th>Level</th><th>Backpressured</th><th>Idle</th><th>Busy</th></tr>";
  for (const v of job.vertices) {
    const bp = await get(`jobs/${id}/vertices/${v.id}/backpressure`);
    const avg = k => bp.subtasks.length ? bp.subtasks.reduce((s, x) => s + x[k], 0) / bp.subtasks.length : 0;
    html += `<tr class="bp-${esc(bp.backpressureLevel)}"><td>${esc(v.name)}</td><td>${esc(bp.backpressureLevel)}</td>` +
      `<td class="num">${(avg("ratio") * 100).toFixed(0)} %</td><td class="num">${(avg("idleRatio") * 100).toFixed(0)} %</td>` +
      `<td class="num">${(avg("busyRatio") * 100).toFixed(0)} %</td></tr>`;
  }
  return html + "</table>";
}

async function checkpointsTab(id) {
  let cp;
  try { cp = await get(`jobs/${id}/checkpoints`); } catch (e) { return "<p id='no-checkpoints'>Checkpointing is not enabled for this job.</p>"; }
  const c = cp.counts;
  let html = `<h3>Counts</h3><table id="checkpoint-counts"><tr><th>Triggered</th><th>In progress</th><th>Completed</th><th>Failed</th><th>Restored</th></tr>` +
    `<tr><td class="num">${c.total}</td><td class="num">${c.in_progress}</td><td class="num" id="completed-count">${c.completed}</td>` +
    `<td class="num">${c.failed}</td><td class="num">${c.restored}</td></tr></table>`;
  const lc = cp.latest.completed, lf = cp.latest.failed, lr = cp.latest.restored, ls = cp.latest.savepoint;
  html += "<h3>Latest</h3><ul>" +
    `<li>Completed: ${lc ? `#${lc.id} at ${time(lc.latest_ack_timestamp)}, ${bytes(lc.checkpointed_size)} checkpointed of ${bytes(lc.state_size)}, ${ms(lc.end_to_end_duration)} (${esc(lc.external_path || "")})` : "none"}</li>` +
    `<li>Failed: ${lf ? `#${lf.id} at ${time(lf.failure_timestamp)}: ${esc(lf.failure_message)}` : "none"}</li>` +
    `<li>Savepoint: ${ls ? esc(ls.external_path) : "none"}</li>` +
    `<li>Restored: ${lr ? `#${lr.id}${lr.is_savepoint ? " (savepoint)" : ""} at ${time(lr.restore_timestamp)} from ${esc(lr.external_path || "")}` : "none"}</li></ul>`;
  html += "<h3>History</h3><table id='checkpoints'><tr><th>ID</th><th>Status</th><th>Type</th><th>Trigger</th><th>Latest ack</th><th>Duration</th>" +
    "<th>Checkpointed size</th><th>Full size</th><th>Acknowledged</th></tr>";
  for (const h of cp.history) {
    html += `<tr class="checkpoint" data-id="${h.id}" data-status="${esc(h.status)}"><td>${h.id}</td><td>${esc(h.status)}</td>` +
      `<td>${h.is_incremental ? "Incremental" : "Full"}${h.is_final ? " (final)" : ""}</td><td>${time(h.trigger_timestamp)}</td>` +
      `<td>${time(h.latest_ack_timestamp)}</td><td class="num">${ms(h.end_to_end_duration)}</td><td class="num">${bytes(h.checkpointed_size)}</td>` +
      `<td class="num">${bytes(h.state_size)}</td><td class="num">${h.num_acknowledged_subtasks}/${h.num_subtasks}</td></tr>`;
    if (h.status === "FAILED") html += `<tr><td></td><td colspan=8>${esc(h.failure_message || "")}</td></tr>`;
  }
  html += "</table>";
  if (lc) {
    const d = await get(`jobs/${id}/checkpoints/details/${lc.id}`);
    html += `<h3>Checkpoint ${lc.id} per operator</h3><table id="checkpoint-operators"><tr><th>Vertex</th><th>Operator</th><th>Subtasks</th>` +
      "<th>Checkpointed size</th><th>Full size</th><th>Sync</th><th>Async</th></tr>";
    for (const [vid, t] of Object.entries(d.tasks)) {
      for (const o of (t.operators || [])) {
        html += `<tr><td>${esc(vid)}</td><td>${esc(o.name || (o.index < 0 ? "source" : "#" + o.index))}</td><td class="num">${o.subtasks}</td>` +
          `<td class="num">${bytes(o.checkpointed_size)}</td><td class="num">${bytes(o.state_size)}</td><td class="num">${ms(o.sync_duration)}</td>` +
          `<td class="num">${ms(o.async_duration)}</td></tr>`;
      }
    }
    html += "</table>";
  }
  return html;
}

async function exceptionsTab(id) {
  const ex = await get(`jobs/${id}/exceptions`);
  const entries = ex.exceptionHistory.entries;
  if (entries.length === 0) return "<p id='no-exceptions'>No exceptions.</p>";
  let html = "<table id='exceptions'><tr><th>Time</th><th>Exception</th></tr>";
  for (const e of entries) html += `<tr class="exception"><td>${time(e.timestamp)}</td><td><pre>${esc(e.stacktrace)}</pre></td></tr>`;
  return html + "</table>";
}

async function jobPage(id, tab) {
  const job = await get(`jobs/${id}`);
  const tabs = ["overview", "checkpoints", "exceptions"];
  let html = `<h2>${esc(job.name)} <span class="state-${esc(job.state)}" id="job-state">${esc(job.state)}</span></h2>` +
    `<p>Id ${esc(job.jid)} · started ${time(job["start-time"])} · ${ms(job.duration)}` +
    (job.state === "RUNNING" ? ` · <button id="cancel">Cancel</button>` : "") + "</p><div class='tabs'>";
  for (const t of tabs) html += `<a href="#/job/${esc(id)}/${t}" id="tab-${t}" class="${t === tab ? "active" : ""}">${t[0].toUpperCase() + t.slice(1)}</a>`;
  html += "</div><div id='tab'>";
  if (tab === "checkpoints") html += await checkpointsTab(id);
  else if (tab === "exceptions") html += await exceptionsTab(id);
  else html += await overviewTab(id, job);
  return html + "</div>";
}

let timer = null;
async function render() {
  clearTimeout(timer);
  const parts = location.hash.replace(/^#\/?/, "").split("/");
  const main = document.getElementById("main");
  try {
    main.innerHTML = parts[0] === "job" && parts[1] ? await jobPage(parts[1], parts[2] || "overview") : await jobsPage();
    const cancel = document.getElementById("cancel");
    if (cancel) cancel.onclick = async () => { await fetch(`jobs/${parts[1]}?mode=cancel`, {method: "PATCH"}); render(); };
    document.getElementById("status").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (e) {
    document.getElementById("status").textContent = "error: " + e.message;
  }
  timer = setTimeout(render, refreshMs);
}

window.addEventListener("hashchange", render);
get("config").then(c => { document.getElementById("version").textContent = c["flink-version"]; }).catch(() => {});
render();

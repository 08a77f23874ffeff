/// The dashboard's page, script and style, embedded in the binary (no CDN: the machines opq runs on may
/// have no internet). Plain HTML, CSS and JavaScript; the page carries the snapshot it was served with,
/// so it renders at once, then follows `/api/events` (server-sent events) without reloading.
enum DashboardAssets {
    /// The page, with `initial` (a snapshot's JSON, or `null`) embedded for the first render.
    static func page(initial: String) -> String {
        // JSONEncoder escapes "/", so the JSON cannot close the script element early.
        html.replacingOccurrences(of: "__SNAPSHOT__", with: initial)
    }

    static let html = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <title>opq dashboard</title>
        <link rel="stylesheet" href="/dashboard.css">
        </head>
        <body>
        <header><h1>opq</h1><span id="summary"></span><span id="status">connecting…</span></header>
        <main>
        <section class="wide"><h2>Jobs</h2><table id="jobs"><thead><tr><th>job</th><th>first operation</th><th>progress</th><th>ETA</th><th>outcome</th></tr></thead><tbody></tbody></table></section>
        <section class="wide"><h2>Task stream <small>(last 60 s; one row per worker slot; click a bar)</small></h2><div id="stream"></div><div id="legend"></div></section>
        <section><h2>Workers</h2><table id="workers"><thead><tr><th>worker</th><th>slots</th><th>labels</th><th>last heartbeat</th><th>host</th></tr></thead><tbody></tbody></table></section>
        <section><h2>Queues</h2><table id="queues"><thead><tr><th>queue</th><th>state</th><th>cap</th><th>pending</th><th>ready</th><th>running</th><th>done</th><th>failed</th></tr></thead><tbody></tbody></table></section>
        <section class="wide"><h2>Recent failures</h2><div id="failures"></div></section>
        <section class="wide" id="details-section" hidden><h2>Operation <span id="details-title"></span></h2><div id="details"></div></section>
        </main>
        <script>window.OPQ_INITIAL = __SNAPSHOT__;</script>
        <script src="/dashboard.js"></script>
        </body>
        </html>
        """

    static let style = """
        body { font: 14px/1.4 system-ui, sans-serif; margin: 0; background: #f6f7f9; color: #222; }
        header { display: flex; gap: 1.5em; align-items: baseline; padding: .6em 1.2em; background: #223; color: #eee; }
        header h1 { margin: 0; font-size: 1.3em; }
        #status { margin-left: auto; font-size: .9em; color: #9c9; }
        #status.down { color: #f88; }
        main { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; padding: 1em; }
        section { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: .6em .9em; min-width: 0; }
        section.wide { grid-column: 1 / -1; }
        h2 { font-size: 1em; margin: 0 0 .5em; } h2 small { font-weight: normal; color: #777; }
        table { border-collapse: collapse; width: 100%; }
        th, td { text-align: left; padding: .2em .5em; border-bottom: 1px solid #eee; white-space: nowrap; }
        th { font-weight: 600; color: #555; }
        .progress { display: flex; width: 240px; height: 12px; background: #e4e6ea; border-radius: 3px; overflow: hidden; display: inline-flex; vertical-align: middle; margin-right: .5em; }
        .progress span { height: 100%; }
        .succeeded { background: #3a3; } .failed { background: #d33; } .cancelled { background: #999; }
        .running { background: #36c; } .retry { background: #e90; } .lost { background: #a4c; }
        .outcome-failed { color: #c22; font-weight: 600; } .outcome-succeeded { color: #292; } .outcome-running { color: #36c; }
        #stream { position: relative; }
        .lane { display: flex; align-items: center; height: 16px; margin: 2px 0; }
        .lane-label { width: 110px; font-size: 11px; color: #555; overflow: hidden; text-overflow: ellipsis; }
        .lane-track { position: relative; flex: 1; height: 14px; background: #f0f1f3; }
        .bar { position: absolute; top: 1px; height: 12px; min-width: 2px; border-radius: 2px; cursor: pointer; }
        #legend span { display: inline-block; padding: 0 .6em; margin-right: .4em; color: #fff; border-radius: 3px; font-size: 11px; }
        .failure { border-left: 3px solid #d33; padding: .2em .7em; margin: .4em 0; cursor: pointer; }
        pre { background: #f3f3f3; padding: .4em; margin: .3em 0; max-height: 10em; overflow: auto; font-size: 12px; white-space: pre-wrap; }
        .empty { color: #888; }
        .state-pending { background: #c8cbd2; color: #333 !important; } .state-ready { background: #e9d9a6; color: #333 !important; }
        .state-dispatched, .state-executing { background: #36c; } .state-succeeded { background: #3a3; }
        .state-failed { background: #d33; } .state-cancelled { background: #999; }
        .graph { overflow: auto; max-height: 80vh; }
        svg .node { cursor: pointer; }
        svg .node rect { fill: #c8cbd2; stroke: #fff; }
        svg .node text { font-size: 12px; fill: #fff; }
        svg .node.pending text, svg .node.ready text { fill: #333; }
        svg .node.ready rect { fill: #e9d9a6; }
        svg .node.dispatched rect, svg .node.executing rect { fill: #36c; }
        svg .node.succeeded rect { fill: #3a3; } svg .node.failed rect { fill: #d33; } svg .node.cancelled rect { fill: #999; }
        svg .node.barrier rect { stroke: #555; stroke-dasharray: 3 2; }
        svg .edge { fill: none; stroke: #99a; stroke-width: 1.2; }
        svg .more text { fill: #777; font-size: 12px; }
        #story td.text { white-space: normal; }
        .event-failed .event, .event-requeued .event, .event-retry .event { color: #c22; font-weight: 600; }
        .event-succeeded .event { color: #292; } .event-cancelled .event { color: #777; font-weight: 600; }
        """

    static let script = #"""
        "use strict";
        const $ = (id) => document.getElementById(id);
        const esc = (s) => String(s ?? "").replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
        const OUTCOMES = ["succeeded", "failed", "cancelled", "running", "retry", "lost"];
        const WINDOW = 60;
        let latest = null;

        function duration(s) {
          if (s == null || !isFinite(s)) return "–";
          if (s < 1) return (s * 1000).toFixed(0) + " ms";
          if (s < 120) return s.toFixed(1) + " s";
          if (s < 7200) return (s / 60).toFixed(1) + " min";
          return (s / 3600).toFixed(1) + " h";
        }

        function progress(c, total) {
          const part = (n, cls) => n > 0 ? `<span class="${cls}" style="width:${(100 * n / total).toFixed(2)}%"></span>` : "";
          return `<span class="progress">${part(c.succeeded, "succeeded")}${part(c.failed, "failed")}${part(c.cancelled, "cancelled")}${part(c.executing + c.dispatched, "running")}</span>`;
        }

        function jobOutcome(j) {
          if (!j.isFinished) return ["running", "running"];
          if (j.counts.failed > 0) return ["failed", `failed (${j.counts.failed})`];
          if (j.counts.cancelled > 0) return ["cancelled", `cancelled (${j.counts.cancelled})`];
          return ["succeeded", "succeeded"];
        }

        function renderJobs(s) {
          const rows = s.jobs.slice().reverse().map((j) => {
            const total = Math.max(1, j.counts.pending + j.counts.ready + j.counts.dispatched + j.counts.executing + j.counts.succeeded + j.counts.failed + j.counts.cancelled);
            const done = j.counts.succeeded + j.counts.failed + j.counts.cancelled;
            const [cls, text] = jobOutcome(j);
            const eta = j.isFinished ? "done in " + duration(j.finishedAt - j.firstSeen) : duration(j.etaSeconds);
            return `<tr class="job" data-job="${j.id}"><td><a href="/jobs/${j.id}" title="the job's graph">#${j.id}</a></td><td class="name">${esc(j.name)}</td><td>${progress(j.counts, total)}<span class="count">${done} / ${total}</span></td><td class="eta">${eta}</td><td class="outcome outcome-${cls}">${text}</td></tr>`;
          });
          $("jobs").tBodies[0].innerHTML = rows.join("") || `<tr><td colspan="5" class="empty">no jobs yet</td></tr>`;
        }

        function renderWorkers(s) {
          const rows = s.workers.map((w) => {
            const labels = Object.entries(w.labels).map(([k, v]) => `${esc(k)}=${esc(v)}`).join(" ") || "–";
            const slots = `<span class="progress" style="width:80px"><span class="running" style="width:${(100 * w.used / Math.max(1, w.slots)).toFixed(0)}%"></span></span>${w.used} / ${w.slots}`;
            return `<tr class="worker" data-worker="${esc(w.id)}"><td>${esc(w.id)}</td><td>${slots}</td><td>${labels}</td><td>${duration(Math.max(0, s.time - w.lastSeen))} ago</td><td>${esc(w.host)}${w.pid ? " pid " + w.pid : ""}</td></tr>`;
          });
          $("workers").tBodies[0].innerHTML = rows.join("") || `<tr><td colspan="5" class="empty">no workers</td></tr>`;
        }

        function renderQueues(s) {
          const rows = s.queues.map((q) => {
            const c = q.counts;
            return `<tr class="queue"><td>${esc(q.name)}</td><td>${q.isSuspended ? "suspended" : "running"}</td><td>${q.maxConcurrent < 0 ? "none" : q.maxConcurrent}</td><td>${c.pending}</td><td>${c.ready}</td><td>${c.dispatched + c.executing}</td><td>${c.succeeded}</td><td>${c.failed}</td></tr>`;
          });
          $("queues").tBodies[0].innerHTML = rows.join("") || `<tr><td colspan="8" class="empty">no queues</td></tr>`;
        }

        function renderStream(s) {
          const start = s.time - WINDOW;
          const lanes = new Map();
          for (const w of s.workers) for (let i = 0; i < w.slots; i++) lanes.set(`${w.id}\u0000${i}`, []);
          for (const t of s.tasks) {
            if ((t.end ?? s.time) < start) continue;
            const key = `${t.worker}\u0000${t.lane}`;
            if (!lanes.has(key)) lanes.set(key, []);
            lanes.get(key).push(t);
          }
          const html = [];
          for (const [key, tasks] of [...lanes.entries()].sort()) {
            const [worker, lane] = key.split("\u0000");
            const bars = tasks.map((t) => {
              const left = Math.max(0, (t.start - start) / WINDOW * 100);
              const width = Math.max(0.15, ((t.end ?? s.time) - Math.max(t.start, start)) / WINDOW * 100);
              const title = `${t.name || "operation " + t.operation} (op ${t.operation}, job ${t.job}, attempt ${t.attempt}): ${t.outcome}, ${duration((t.end ?? s.time) - t.start)}`;
              return `<div class="bar ${t.outcome}" data-op="${t.operation}" style="left:${left.toFixed(2)}%;width:${width.toFixed(2)}%" title="${esc(title)}"></div>`;
            });
            html.push(`<div class="lane"><span class="lane-label">${esc(worker)} #${lane}</span><div class="lane-track">${bars.join("")}</div></div>`);
          }
          $("stream").innerHTML = html.join("") || `<p class="empty">no workers</p>`;
        }

        function renderFailures(s) {
          const items = s.failures.slice(-10).reverse().map((f) => {
            const status = f.exitCode != null ? `exit status ${f.exitCode}` : f.signal != null ? `signal ${f.signal}` : esc(f.reason);
            const tail = f.stderrTail || f.stdoutTail || f.message;
            return `<div class="failure" data-op="${f.operation}"><b>${esc(f.name || "operation " + f.operation)}</b> — op ${f.operation}, job ${f.job}, queue ${esc(f.queue)}, worker ${esc(f.worker ?? "–")}, attempt ${f.attempt}: <span class="outcome-failed">${status}</span> (${esc(f.reason)})${tail ? `<pre>${esc(tail)}</pre>` : ""}</div>`;
          });
          $("failures").innerHTML = items.join("") || `<p class="empty">no failures</p>`;
        }

        function render(s) {
          if (!s) { $("summary").textContent = "waiting for the coordinator's first snapshot…"; return; }
          latest = s;
          const slots = s.workers.reduce((n, w) => n + w.slots, 0), used = s.workers.reduce((n, w) => n + w.used, 0);
          const h = s.totals.dispatchLatency;
          $("summary").textContent = `${s.workers.length} workers · ${used} / ${slots} slots busy · ${s.totals.messagesPerSecond.toFixed(0)} msg/s · mean wait ready → running ${duration(h.count ? h.sum / h.count : null)} · ${s.totals.retries} retries · ${s.totals.workersLost} workers lost`;
          renderJobs(s); renderWorkers(s); renderQueues(s); renderStream(s); renderFailures(s);
        }

        async function showOperation(id) {
          const response = await fetch(`/api/operations/${id}`);
          const body = await response.json();
          $("details-section").hidden = false;
          $("details-title").innerHTML = `<a href="/operations/${id}" title="its whole story">${id}</a>` + (body.name ? ` — ${esc(body.name)}` : "");
          if (!response.ok) { $("details").innerHTML = `<p class="empty">${esc(body.error)}</p>`; return; }
          const story = (body.story?.entries ?? []).slice(-12).map((e) => `<li>${esc(e.text)}</li>`).join("");
          const rows = body.attempts.map((a) => `<tr><td>${a.attempt}</td><td>${esc(a.worker)} #${a.lane}</td><td>${a.readyAt != null ? duration(a.start - a.readyAt) : "–"}</td><td>${duration((a.end ?? latest.time) - a.start)}</td><td class="outcome-${a.outcome}">${esc(a.outcome)}${a.reason ? " (" + esc(a.reason) + ")" : ""}</td></tr>`);
          const f = body.failure;
          $("details").innerHTML = `<p>job <a href="/jobs/${body.job}">${body.job}</a>, queue ${esc(body.queue)}</p>${story ? `<ol class="story">${story}</ol>` : ""}<table><thead><tr><th>attempt</th><th>slot</th><th>waited (ready → running)</th><th>ran</th><th>outcome</th></tr></thead><tbody>${rows.join("")}</tbody></table>`
            + (f ? `<p class="outcome-failed">failed: ${esc(f.reason)}${f.exitCode != null ? ", exit status " + f.exitCode : ""}</p>${f.stdoutTail ? "<h3>stdout</h3><pre>" + esc(f.stdoutTail) + "</pre>" : ""}${f.stderrTail ? "<h3>stderr</h3><pre>" + esc(f.stderrTail) + "</pre>" : ""}` : "");
        }

        document.addEventListener("click", (e) => {
          const target = e.target.closest("[data-op]");
          if (target) showOperation(target.dataset.op);
        });
        $("legend").innerHTML = OUTCOMES.map((o) => `<span class="${o}">${o}</span>`).join("");
        render(window.OPQ_INITIAL);
        if (window.EventSource) {
          const events = new EventSource("/api/events");
          events.addEventListener("snapshot", (e) => render(JSON.parse(e.data)));
          events.onopen = () => { $("status").textContent = "live"; $("status").className = ""; };
          events.onerror = () => { $("status").textContent = "disconnected — retrying"; $("status").className = "down"; };
        }
        """#
}

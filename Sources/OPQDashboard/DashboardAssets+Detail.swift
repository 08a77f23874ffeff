/// The pages of one job (its graph, `/jobs/ID`) and one operation (its story, `/operations/ID`). Like the
/// dashboard, each page carries the JSON it was served with and renders it at once, then refreshes it
/// from `/api/...` every two seconds.
extension DashboardAssets {
    /// The page of `kind` (`graph` or `story`) with `initial` (the API's JSON) embedded.
    static func detailPage(title: String, kind: String, initial: String) -> String {
        // JSONEncoder escapes "/", so the JSON cannot close the script element early.
        detailHTML.replacingOccurrences(of: "__TITLE__", with: title)
            .replacingOccurrences(of: "__KIND__", with: kind)
            .replacingOccurrences(of: "__DATA__", with: initial)
    }

    static let detailHTML = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <title>opq — __TITLE__</title>
        <link rel="stylesheet" href="/dashboard.css">
        </head>
        <body>
        <header><h1><a href="/" style="color:inherit;text-decoration:none">opq</a></h1><span id="summary">__TITLE__</span><span id="status"></span></header>
        <main><section class="wide"><h2 id="heading"></h2><div id="detail"></div></section></main>
        <script>window.OPQ_KIND = "__KIND__"; window.OPQ_DETAIL = __DATA__;</script>
        <script src="/detail.js"></script>
        </body>
        </html>
        """

    static let detailScript = #"""
        "use strict";
        const $ = (id) => document.getElementById(id);
        const esc = (s) => String(s ?? "").replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
        const STATES = ["pending", "ready", "dispatched", "executing", "succeeded", "failed", "cancelled"];
        const W = 170, H = 26, GAP_X = 70, GAP_Y = 10;

        function counted(states) {
          return STATES.filter((s) => states[s]).map((s) => `${states[s]} ${s}`).join(", ");
        }

        // Layers left to right, nodes top to bottom; an edge from each dependency to its dependent.
        function renderGraph(g) {
          $("heading").textContent = `Job ${g.job}: ${g.operations} operations` + (g.laidOut < g.operations ? ` (the first ${g.laidOut} laid out)` : "");
          const where = new Map();
          let height = 0;
          const nodes = [];
          g.layers.forEach((layer, column) => {
            const x = column * (W + GAP_X);
            layer.nodes.forEach((n, row) => {
              const y = row * (H + GAP_Y);
              where.set(n.id, [x, y]);
              const label = n.name || `operation ${n.id}`;
              const title = `${label} (op ${n.id}): ${n.state}${n.attempt ? ", attempt " + n.attempt : ""}${n.worker ? " on " + n.worker : ""}`;
              nodes.push(`<g class="node ${n.state}${n.isBarrier ? " barrier" : ""}" data-op="${n.id}" transform="translate(${x},${y})"><title>${esc(title)}</title><rect width="${W}" height="${H}" rx="4"></rect><text x="8" y="17">${esc(label.length > 22 ? label.slice(0, 21) + "…" : label)}</text></g>`);
            });
            let bottom = layer.nodes.length * (H + GAP_Y);
            const hidden = counted(layer.hiddenStates);
            if (hidden) {
              nodes.push(`<g class="more" transform="translate(${x},${bottom})"><text x="4" y="14">+ ${esc(hidden)}</text></g>`);
              bottom += H;
            }
            height = Math.max(height, bottom);
          });
          const edges = g.edges.filter((e) => where.has(e.from) && where.has(e.to)).map((e) => {
            const [x1, y1] = where.get(e.from), [x2, y2] = where.get(e.to);
            const sx = x1 + W, sy = y1 + H / 2, tx = x2, ty = y2 + H / 2, mid = (sx + tx) / 2;
            return `<path class="edge" d="M${sx},${sy} C${mid},${sy} ${mid},${ty} ${tx},${ty}"></path>`;
          });
          const width = Math.max(1, g.layers.length) * (W + GAP_X);
          const more = g.hiddenLayers ? `<p class="empty">${g.hiddenLayers} more layers: ${esc(counted(g.hiddenLayerStates))}</p>` : "";
          const legend = `<div id="legend">${STATES.map((s) => `<span class="state-${s}">${s}</span>`).join("")}</div>`;
          $("detail").innerHTML = `${legend}<div class="graph"><svg id="graph" width="${width}" height="${height + 4}" xmlns="http://www.w3.org/2000/svg">${edges.join("")}${nodes.join("")}</svg></div>${more}`;
        }

        function when(t, start) {
          return t == null ? "" : `+${(t - start).toFixed(3)} s`;
        }

        // The operation's story: one row per event, in the coordinator's causal order (event numbers).
        function renderStory(d) {
          const s = d.story;
          $("heading").innerHTML = `Operation ${d.operation}${d.name ? " — " + esc(d.name) : ""} <small>job <a href="/jobs/${d.job}">${d.job}</a>, queue ${esc(d.queue)}${s ? ", now " + esc(s.state) : ""}</small>`;
          if (!s) { $("detail").innerHTML = `<p class="empty">no story: the coordinator's event log no longer holds this operation</p>`; return; }
          const start = s.entries.find((e) => e.time != null)?.time ?? 0;
          const rows = s.entries.map((e) => `<tr class="story-entry event-${esc(e.event)}" data-sequence="${e.sequence}"><td>${e.sequence}</td><td>${when(e.time, start)}</td><td class="event">${esc(e.event)}</td><td>${e.attempt || ""}</td><td>${esc(e.worker ?? "")}</td><td class="text">${esc(e.text)}</td></tr>`);
          const gap = s.omitted ? `<p class="empty">${s.omitted} entries left out in the middle</p>` : "";
          const partial = s.isComplete ? "" : `<p class="empty">the event log no longer holds its first events: the story starts later</p>`;
          const deps = s.dependencies.length ? `<p>depends on ${s.dependencies.map((id) => `<a href="/operations/${id}">${id}</a>`).join(", ")}</p>` : "";
          const f = d.failure;
          const output = f ? `${f.stdoutTail ? "<h3>stdout</h3><pre>" + esc(f.stdoutTail) + "</pre>" : ""}${f.stderrTail ? "<h3>stderr</h3><pre>" + esc(f.stderrTail) + "</pre>" : ""}` : "";
          $("detail").innerHTML = `${partial}${deps}<table id="story"><thead><tr><th>#</th><th>time</th><th>event</th><th>attempt</th><th>worker</th><th>what happened</th></tr></thead><tbody>${rows.join("")}</tbody></table>${gap}${output}`;
        }

        const render = window.OPQ_KIND === "graph" ? renderGraph : renderStory;
        render(window.OPQ_DETAIL);
        document.addEventListener("click", (e) => {
          const node = e.target.closest("g.node[data-op]");
          if (node) window.location.href = `/operations/${node.dataset.op}`;
        });
        const source = window.OPQ_KIND === "graph" ? `/api/jobs/${window.OPQ_DETAIL.job}/graph` : `/api/operations/${window.OPQ_DETAIL.operation}`;
        setInterval(async () => {
          try {
            const response = await fetch(source);
            if (response.ok) { render(await response.json()); $("status").textContent = "live"; $("status").className = ""; }
            else { $("status").textContent = `HTTP ${response.status}`; $("status").className = "down"; }
          } catch { $("status").textContent = "disconnected — retrying"; $("status").className = "down"; }
        }, 2000);
        """#
}

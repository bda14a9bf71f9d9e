// causeway html: draws the embedded capture data. Text from the capture is set with textContent only.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("causeway-data").textContent);
  var SVGNS = "http" + "://www.w3.org/2000/svg"; // a namespace name, never fetched
  var KINDS = ["call", "NVTX range", "kernel", "memcpy", "memset", "graph"];
  var COLORS = ["#4e79a7", "#9c755f", "#59a14f", "#e15759", "#f28e2b", "#b07aa1"];

  function $(id) { return document.getElementById(id); }
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function sv(tag, attrs, text) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function tip(node, text) { node.appendChild(sv("title", {}, text)); return node; }
  function fmt(ns) {
    if (ns === null || ns === undefined) return "\u2014";
    var a = Math.abs(ns);
    if (a < 1e3) return Math.round(ns) + " ns";
    if (a < 1e6) return (ns / 1e3).toPrecision(3) + " \u00b5s";
    if (a < 1e9) return (ns / 1e6).toPrecision(3) + " ms";
    return (ns / 1e9).toPrecision(3) + " s";
  }
  function plural(n, w) { return n + " " + w + (n === 1 ? "" : /s$/.test(w) ? "es" : "s"); }
  function empty(parent, text) { parent.appendChild(el("p", text, "empty")); }
  function maxOf(a) { var m = 0; for (var i = 0; i < a.length; i++) if (a[i] > m) m = a[i]; return m; }

  // ---- header ----------------------------------------------------------------------------------------
  var bound = D.clock.bound_ns_max;
  var clockLine = "device clock: " + D.clock.conversion +
    (D.clock.conversion === "none" ? " (no device intervals)" :
      bound === null || bound === undefined ? "" :
        "; conversion bound p50 \u00b1" + fmt(D.clock.bound_ns_p50) + ", max \u00b1" + fmt(bound));
  function headerSection() {
    document.title = "causeway: " + D.capture;
    $("capture-name").textContent = D.capture;
    var h = $("header");
    var t = el("table");
    var head = el("tr");
    ["pid", "exe", "host", "level", "backend", "entries", "dropped", "torn", "overwritten", "open calls",
      "device dropped", "device w/o host time"].forEach(function (c) { head.appendChild(el("th", c)); });
    t.appendChild(head);
    D.processes.forEach(function (p) {
      var r = el("tr");
      [p.pid, p.exe, p.host, p.level, p.backend, p.entries, p.dropped, p.torn, p.overwritten, p.open,
        p.device_dropped, p.unplaced_device].forEach(function (v) { r.appendChild(el("td", v)); });
      t.appendChild(r);
    });
    h.appendChild(el("div", plural(D.processes.length, "process") + " (causeway " + D.version + ")" +
      (D.pid !== null ? "; charts show pid " + D.pid : "; nothing to chart")));
    h.appendChild(t);
    h.appendChild(el("div", clockLine, "uncertain"));
    var d = D.device;
    h.appendChild(el("div", "device intervals: " + d.intervals + " read, " + d.associated +
      " tied to their call, " + d.unassociated + " unassociated, " + d.untimed + " untimed, " +
      d.not_timed + " not timed by the backend, " + d.dropped + " dropped by the backend, " +
      d.unconverted + " not on the host clock; ring entries dropped: " + d.entries_dropped,
      (d.unassociated || d.untimed || d.dropped || d.entries_dropped || d.not_timed) ? "uncertain" : ""));
    D.warnings.forEach(function (w) { h.appendChild(el("div", "warning: " + w, "uncertain")); });
  }

  function uncertainty() {
    var lost = D.device.entries_dropped + D.device.dropped;
    return "Clock: " + clockLine.replace("device clock: ", "") + ". " +
      (lost ? lost + " records dropped (ring entries and backend records): the figures miss that work. " :
        "No records dropped. ");
  }

  // ---- step chart --------------------------------------------------------------------------------------
  var S = D.steps.steps;
  function barChart(container, n, height, draw) {
    var W = Math.max(800, Math.min(4000, n * 3));
    var left = 60, plotW = W - left - 110, top = 8, plotH = height - 30;
    var svg = sv("svg", { width: W, height: height, "class": "bars" });
    svg.appendChild(sv("line", { x1: left, y1: top + plotH, x2: left + plotW, y2: top + plotH, "class": "axis" }));
    svg.appendChild(sv("line", { x1: left, y1: top, x2: left, y2: top + plotH, "class": "axis" }));
    draw(svg, { left: left, top: top, w: plotW, h: plotH, bw: plotW / Math.max(1, n) });
    container.appendChild(svg);
  }
  // The y-axis of a bar chart: the largest value, unless a few values dwarf the rest (a warm-up step
  // of seconds among steps of milliseconds would leave every other bar one pixel high): then 1.5 x
  // the 90th percentile, and bars above it are cut, marked and labelled with their value.
  function axisFor(values) {
    var v = values.filter(function (x) { return x > 0; }).sort(function (a, b) { return a - b; });
    var max = v.length ? v[v.length - 1] : 1;
    var p90 = v.length ? v[Math.max(0, Math.ceil(0.9 * v.length) - 1)] : 0;
    if (v.length >= 5 && p90 > 0 && max > 4 * p90) return { ymax: 1.5 * p90, capped: true };
    return { ymax: max || 1, capped: false };
  }
  // A bar that goes past the axis: a notch at the top and its value.
  function offScale(svg, x, w, top, value) {
    svg.appendChild(sv("path", { d: "M" + x + " " + (top + 6) + "l" + w / 2 + " -6l" + w / 2 + " 6", fill: "#fff",
      stroke: "#333", "class": "cut" }));
    svg.appendChild(sv("text", { x: x + w + 2, y: top + 9, "class": "cut-label" }, fmt(value)));
  }
  function stepSection() {
    var c = $("step-chart");
    var cap = $("step-caption");
    if (!S.length) {
      empty(c, "No steps: " + (D.steps.notes.length ? D.steps.notes.join("; ") :
        "no NVTX range repeats") + ". The timeline below shows the whole capture.");
      cap.textContent = uncertainty();
      return;
    }
    var walls = S.map(function (s) { return s.wall_ns; });
    var axis = axisFor(walls), ymax = axis.ymax;
    barChart(c, S.length, 220, function (svg, g) {
      var y = function (v) { return g.top + g.h - Math.min(v, ymax) / ymax * g.h; };
      S.forEach(function (s, i) {
        var w = Math.max(0.5, g.bw * 0.85);
        var r = sv("rect", { x: g.left + i * g.bw, y: y(s.wall_ns), width: w,
          height: g.top + g.h - y(s.wall_ns), fill: i === D.steps.slowest ? "#e15759" : "#4e79a7", "class": "step-bar" });
        tip(r, "step " + s.index + " (thread " + s.tid + "): " + fmt(s.wall_ns));
        r.addEventListener("click", function () { selectStep(i); });
        svg.appendChild(r);
        if (s.wall_ns > ymax) offScale(svg, g.left + i * g.bw, w, g.top, s.wall_ns);
      });
      var labels = ["min", "median", "p99", "max"], colors = ["#59a14f", "#333", "#f28e2b", "#e15759"];
      // Labels from the top (max) down, at least 11 px apart.
      var ly = -1e9;
      [3, 2, 1, 0].forEach(function (k) {
        var v = D.steps.wall[k];
        if (v <= ymax) svg.appendChild(sv("line", { x1: g.left, x2: g.left + g.w, y1: y(v), y2: y(v), stroke: colors[k], "class": "ref" }));
        ly = Math.max(y(v) + 4, ly + 11);
        svg.appendChild(sv("text", { x: g.left + g.w + 4, y: ly }, labels[k] + " " + fmt(v) + (v > ymax ? " (off scale)" : "")));
      });
      svg.appendChild(sv("text", { x: 2, y: g.top + 10 }, fmt(ymax)));
      svg.appendChild(sv("text", { x: g.left, y: g.top + g.h + 16 }, "steps in order (" + S.length + "); click a bar to see it below" +
        (axis.capped ? "; the axis stops at 1.5 \u00d7 the 90th percentile, taller bars are cut and labelled" : "")));
    });
    cap.textContent = "Wall time per step: " + D.steps.selection + ". Step windows are exact host clock readings. " +
      uncertainty() + D.steps.notes.join(" ");
  }

  function stacked(container, parts, names, colors, title) {
    barChart(container, S.length, 180, function (svg, g) {
      var tot = S.map(function (s) { var t = 0; parts.forEach(function (p) { t += s[p] || 0; }); return t; });
      var axis = axisFor(tot), ymax = axis.ymax;
      S.forEach(function (s, i) {
        var y0 = g.top + g.h, w = Math.max(0.5, g.bw * 0.85);
        parts.forEach(function (p, k) {
          var h = Math.min((s[p] || 0) / ymax * g.h, y0 - g.top);
          y0 -= h;
          var r = sv("rect", { x: g.left + i * g.bw, y: y0, width: w, height: h, fill: colors[k] });
          tip(r, "step " + s.index + " " + names[k] + ": " + fmt(s[p]));
          svg.appendChild(r);
        });
        if (tot[i] > ymax) offScale(svg, g.left + i * g.bw, w, g.top, tot[i]);
      });
      svg.appendChild(sv("text", { x: 2, y: g.top + 10 }, fmt(ymax)));
      svg.appendChild(sv("text", { x: g.left, y: g.top + g.h + 16 }, title +
        (axis.capped ? " (the axis stops at 1.5 \u00d7 the 90th percentile; taller bars cut and labelled)" : "")));
    });
    var lg = el("div", null, "legend");
    names.forEach(function (n, k) {
      var s = el("span"); var i = el("i"); i.style.background = colors[k]; s.appendChild(i);
      s.appendChild(document.createTextNode(n)); lg.appendChild(s);
    });
    container.appendChild(lg);
  }
  function budgetSection() {
    var cap = $("budget-caption");
    if (!S.length) { empty($("budget-chart"), "No steps."); return; }
    stacked($("budget-chart"), ["launch_ns", "sync_ns", "other_ns"], ["launch calls", "sync calls", "other host time"],
      ["#4e79a7", "#e15759", "#bab0ac"], "host time per step: launch + sync + other = wall");
    var dev = D.steps.device_timed && S[0].busy_ns !== null;
    if (dev) {
      stacked($("device-chart"), ["busy_ns", "idle_ns"], ["device busy", "device idle"], ["#59a14f", "#e8e8e8"],
        "device time per step: busy + idle = wall");
    } else {
      empty($("device-chart"), "No device spans on the host clock: device busy/idle needs a level-3 capture.");
    }
    cap.textContent = "Host figures are exact host clock readings (depth-0 calls of the step's thread, clipped to the step). " +
      (dev ? "Device busy/idle may each be off by up to 2 \u00d7 " + fmt(D.steps.bound_ns) +
        " (the largest span conversion bound of any step). " : "") + uncertainty();
  }

  // ---- gaps ----------------------------------------------------------------------------------------------
  function gapSection() {
    var G = D.gaps, c = $("gap-chart");
    if (!G.count) {
      empty(c, G.spans ? "Fewer than two device spans: no gaps." : "No device spans on the host clock: gaps need a level-3 capture.");
    } else {
      var ks = G.bins.map(function (b) { return b[0]; });
      var kmin = ks.length ? Math.min.apply(null, ks) : 0, kmax = ks.length ? Math.max.apply(null, ks) : 0;
      var nb = kmax - kmin + 2; // + the zero bin
      var counts = G.bins.map(function (b) { return b[1]; }).concat([G.zero]);
      var ymax = maxOf(counts) || 1;
      barChart(c, nb * 12, 220, function (svg, g) {
        var bw = g.w / nb;
        var y = function (v) { return g.top + g.h - v / ymax * g.h; };
        var bar = function (i, n, label) {
          var r = sv("rect", { x: g.left + i * bw + 1, y: y(n), width: Math.max(1, bw - 2), height: g.top + g.h - y(n), fill: "#76b7b2", "class": "gap-bar" });
          tip(r, label + ": " + plural(n, "gap"));
          svg.appendChild(r);
        };
        bar(0, G.zero, "0 ns (back to back)");
        svg.appendChild(sv("text", { x: g.left + 2, y: g.top + g.h + 14 }, "0"));
        G.bins.forEach(function (b) {
          var i = b[0] - kmin + 1;
          bar(i, b[1], "[" + fmt(Math.pow(2, b[0])) + ", " + fmt(Math.pow(2, b[0] + 1)) + ")");
        });
        var step = Math.max(1, Math.ceil((kmax - kmin + 1) / 10));
        for (var k = kmin; k <= kmax + 1; k += step) {
          svg.appendChild(sv("text", { x: g.left + (k - kmin + 1) * bw, y: g.top + g.h + 14 }, fmt(Math.pow(2, k))));
        }
        var xs = function (v) { return v <= 0 ? g.left + bw / 2 : g.left + (Math.log2(v) - kmin + 1) * bw; };
        [["p50", G.p50_ns, "#333"], ["p99", G.p99_ns, "#f28e2b"], ["p99.9", G.p999_ns, "#e15759"]].forEach(function (m, j) {
          var x = xs(m[1]);
          svg.appendChild(sv("line", { x1: x, x2: x, y1: g.top, y2: g.top + g.h, stroke: m[2], "class": "ref" }));
          svg.appendChild(sv("text", { x: x + 3, y: g.top + 10 + 12 * j }, m[0] + " " + fmt(m[1])));
        });
        svg.appendChild(sv("text", { x: 2, y: g.top + 10 }, String(ymax)));
      });
    }
    $("gap-caption").textContent = "Log\u2082 bins of the gaps between consecutive device spans of all streams (pid " + D.pid +
      "): " + plural(G.count, "gap") + " among " + plural(G.spans, "span") + ", p50 " + fmt(G.p50_ns) + ", p99 " +
      fmt(G.p99_ns) + ", p99.9 " + fmt(G.p999_ns) + ", max " + fmt(G.max_ns) + "; " + G.overlaps +
      " spans overlapped earlier work (concurrency, not gaps). Each gap may be off by up to 2 \u00d7 " +
      fmt(G.bound_ns) + " (the largest span bound). " + uncertainty();
  }

  // ---- why ------------------------------------------------------------------------------------------------
  function whySection() {
    var C = D.steps.causes || [], ul = $("why-list");
    C.forEach(function (c) {
      var li = el("li");
      li.appendChild(el("strong", "step " + c.index + ": " + c.cause + (c.complete ? "" : " (incomplete)")));
      li.appendChild(document.createTextNode(" \u2014 " + c.detail));
      ul.appendChild(li);
    });
    if (!C.length) empty($("sec-why"), "No steps to explain.");
    $("why-caption").textContent = "From the capture's dependency graph (program order, issue, stream order, " +
      "event waits, host waits): host = issued late, dependency = waited for a predecessor, device = ready " +
      "but the device was busy, unknown = a record the chain needs is not in the capture. The full chain: " +
      "causeway why --step N.";
  }

  // ---- kernels --------------------------------------------------------------------------------------------
  function kernelSection() {
    var K = D.kernels, t = $("kernel-table");
    var hr = el("tr");
    ["kernel", K.source === "device" ? "count" : "launches", "total", "p50", "p99"].forEach(function (h) { hr.appendChild(el("th", h)); });
    t.tHead.appendChild(hr);
    K.rows.forEach(function (k) {
      var r = el("tr");
      r.appendChild(el("td", k.name, "kernel-name"));
      r.appendChild(el("td", k.count));
      [k.total_ns, k.p50_ns, k.p99_ns].forEach(function (v) { r.appendChild(el("td", fmt(v))); });
      t.tBodies[0].appendChild(r);
    });
    if (!K.rows.length) empty($("sec-kernels"), "No kernels launched.");
    $("kernel-caption").textContent = (K.source === "device" ?
      "Device time per kernel name (all processes), largest total first. Durations are exact with CUPTI; with the events backend each is an upper bound. " :
      "No device intervals: kernel executions requested (launches), most first; no device times. ") +
      (K.more ? K.more + " more kernel names not shown. " : "") + uncertainty();
  }

  // ---- timeline -------------------------------------------------------------------------------------------
  var T = D.timeline, ROW = 14, LANE_GAP = 6, LABEL = 190, AXIS = 22, MAX_DRAWN = 6000;
  var tl = $("timeline"), sel = $("step-select"), view = [0, 1], home = [0, 1], base = 0, svgRoot = null;
  var laneY = [], y = AXIS;
  T.lanes.forEach(function (l) { laneY.push(y); y += l.rows * ROW + LANE_GAP; });
  var TH = y + 4;
  var tipEl = $("tooltip");

  function selectStep(i) {
    sel.value = String(i);
    showWindow();
    tl.scrollIntoView({ block: "nearest" });
  }
  function showWindow() {
    var v = sel.value, note = $("timeline-note");
    if (v === "all" || !S.length) {
      home = [0, Math.max(1, T.end_ns)];
      base = 0;
      note.textContent = (S.length ? "" : "No steps: showing the whole capture. ") +
        (T.left_out ? T.left_out + " of " + T.total + " items left out (only the first " + T.items.length + " in time order are embedded)." : "");
    } else {
      var s = S[+v], pad = Math.max(1, Math.round(s.wall_ns * 0.03));
      home = [s.begin_ns - pad, s.end_ns + pad];
      base = s.begin_ns;
      note.textContent = s.embedded ? "step " + s.index + ": " + fmt(s.wall_ns) :
        "step " + s.index + " is not embedded (over the page's cap of items); " + T.left_out + " of " + T.total + " items left out.";
    }
    view = home.slice();
    draw();
  }
  function draw() {
    var W = Math.max(600, tl.clientWidth || 1000), PW = W - LABEL - 10;
    var v0 = view[0], v1 = view[1], span = Math.max(1e-9, v1 - v0);
    var X = function (t) { return LABEL + (t - v0) / span * PW; };
    var svg = sv("svg", { width: W, height: TH, id: "timeline-svg" });
    T.lanes.forEach(function (l, i) {
      svg.appendChild(sv("rect", { x: 0, y: laneY[i] - 2, width: W, height: l.rows * ROW + 3, fill: i % 2 ? "#f4f6f8" : "#fff" }));
      svg.appendChild(sv("text", { x: 4, y: laneY[i] + 10, "class": "lane-label" }, l.label));
    });
    // Time axis.
    var tick = Math.pow(10, Math.floor(Math.log10(span / 6)));
    if (span / tick > 12) tick *= 5; else if (span / tick > 6) tick *= 2;
    // Tick labels: time since the step's begin (or the capture's first timestamp).
    for (var t = base + Math.ceil((v0 - base) / tick) * tick; t <= v1; t += tick) {
      svg.appendChild(sv("line", { x1: X(t), x2: X(t), y1: AXIS - 6, y2: TH, stroke: "#e3e6ea" }));
      svg.appendChild(sv("text", { x: X(t) + 2, y: 12 }, fmt(t - base)));
    }
    if (sel.value !== "all" && S.length) {
      var s = S[+sel.value];
      svg.appendChild(sv("rect", { x: X(s.begin_ns), y: AXIS - 4, width: Math.max(1, X(s.end_ns) - X(s.begin_ns)), height: TH - AXIS + 4,
        fill: "none", stroke: "#e15759", "stroke-dasharray": "3 3" }));
    }
    var clip = sv("clipPath", { id: "plot-clip" });
    clip.appendChild(sv("rect", { x: LABEL, y: 0, width: PW, height: TH }));
    svg.appendChild(clip);
    var g = sv("g", { "clip-path": "url(#plot-clip)" });
    var visible = [];
    for (var i = 0; i < T.items.length; i++) {
      var it = T.items[i];
      if (it[3] >= v0 && it[2] <= v1) visible.push(i);
    }
    var minW = visible.length > MAX_DRAWN ? span / PW : 0, skipped = 0, drawn = 0;
    visible.forEach(function (i) {
      var it = T.items[i];
      if (it[3] - it[2] < minW && drawn >= MAX_DRAWN / 2) { skipped++; return; }
      if (drawn >= MAX_DRAWN * 2) { skipped++; return; }
      drawn++;
      var x0 = Math.max(LABEL - 2, X(it[2])), x1 = Math.min(W + 2, X(it[3]));
      var r = sv("rect", { x: x0, y: laneY[it[0]] + it[1] * ROW, width: Math.max(1, x1 - x0), height: ROW - 2,
        fill: COLORS[it[5]], "class": "item", "data-i": i, opacity: it[7] ? 0.5 : 1 });
      g.appendChild(r);
      if (x1 - x0 > 40) {
        var name = T.names[it[4]], chars = Math.floor((x1 - x0 - 4) / 6.5);
        g.appendChild(sv("text", { x: x0 + 2, y: laneY[it[0]] + it[1] * ROW + 10, "class": "item-label", fill: "#fff", "pointer-events": "none" },
          name.length > chars ? name.slice(0, Math.max(1, chars - 1)) + "\u2026" : name));
      }
    });
    svg.appendChild(g);
    tl.replaceChildren(svg);
    svgRoot = svg;
    $("timeline-caption").textContent = "pid " + D.pid + ": " + plural(drawn, "item") + " drawn" +
      (skipped ? " (" + skipped + " narrower than a pixel not drawn at this zoom)" : "") +
      ". Threads: NVTX ranges on top, calls below by depth; streams: kernels, copies, memsets, graphs (overlapping spans on further rows). " +
      "Mouse wheel zooms, drag pans, hover for details. Device spans are placed on the host clock within their bound (shown on hover). " +
      uncertainty();
  }
  function describe(i) {
    var it = T.items[i];
    var s = T.names[it[4]] + "\n" + KINDS[it[5]] + " \u00b7 " + fmt(it[3] - it[2]) +
      (it[7] ? " (never ended: drawn to the capture's end)" : "") +
      "\nbegins at " + fmt(it[2] - base) + (sel.value === "all" ? " after the capture's first timestamp" : " after the step's begin");
    if (it[5] >= 2) s += "\nbound \u00b1" + fmt(it[6]) + " per edge";
    return s;
  }
  function timelineSection() {
    if (S.length) {
      S.forEach(function (s, i) {
        var o = el("option", "step " + s.index + " \u2014 " + fmt(s.wall_ns) + (i === D.steps.slowest ? " (slowest)" : "") +
          (s.embedded ? "" : " (not embedded)"));
        o.value = String(i);
        sel.appendChild(o);
      });
      sel.value = String(D.steps.slowest === null ? 0 : D.steps.slowest);
    } else {
      var o = el("option", "whole capture (no steps)");
      o.value = "all";
      sel.appendChild(o);
    }
    sel.addEventListener("change", showWindow);
    $("reset-zoom").addEventListener("click", function () { view = home.slice(); draw(); });
    tl.addEventListener("wheel", function (e) {
      e.preventDefault();
      var W = tl.clientWidth || 1000, PW = W - LABEL - 10;
      var rect = tl.getBoundingClientRect();
      var f = Math.min(1, Math.max(0, (e.clientX - rect.left - LABEL) / PW));
      var span = view[1] - view[0], at = view[0] + f * span;
      var ns = Math.max(10, span * Math.exp(e.deltaY * 0.002));
      view = [at - f * ns, at + (1 - f) * ns];
      draw();
    }, { passive: false });
    var drag = null;
    tl.addEventListener("mousedown", function (e) { drag = { x: e.clientX, v: view.slice() }; tl.classList.add("dragging"); });
    window.addEventListener("mouseup", function () { drag = null; tl.classList.remove("dragging"); });
    window.addEventListener("mousemove", function (e) {
      if (drag) {
        var PW = (tl.clientWidth || 1000) - LABEL - 10, d = (e.clientX - drag.x) / PW * (drag.v[1] - drag.v[0]);
        view = [drag.v[0] - d, drag.v[1] - d];
        draw();
        return;
      }
      var t = e.target;
      if (t && t.getAttribute && t.getAttribute("class") === "item" && svgRoot && svgRoot.contains(t)) {
        tipEl.textContent = describe(+t.getAttribute("data-i"));
        tipEl.hidden = false;
        tipEl.style.left = (e.clientX + 12) + "px";
        tipEl.style.top = (e.clientY + 12) + "px";
      } else {
        tipEl.hidden = true;
      }
    });
    window.addEventListener("resize", draw);
    showWindow();
  }

  headerSection();
  stepSection();
  whySection();
  budgetSection();
  gapSection();
  kernelSection();
  timelineSection();
  document.body.setAttribute("data-rendered", "1");
})();

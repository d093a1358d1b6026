// The site's one cell viewer (cell/): draws a cell of any run from that run's evidence file
// (runs/ID/evidence.js, loaded by a script tag so that the page works from file:// as on any
// host). `#RUN/decode-8k-x4` shows the cell's first repetition, `#RUN/decode-8k-x4/r2` its
// second, `#RUN/decode-8k-x4/warnings` scrolls to a section, `#RUN` lists the run's cells.
// Every text from the data goes in with textContent, never as markup.
(function () {
  "use strict";
  var view = document.getElementById("cell-view");
  if (!view || !window.DecompressionStream) return;
  var data, runId = null, missing = null;
  var root = view.getAttribute("data-root") || "";
  var listing = view.cloneNode(true);
  // A run id as the site writes one (a folder name): nothing else becomes a script's path.
  var RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
  var baseTitle = document.title;
  var SVG = "http://www.w3.org/2000/svg";
  var OUTCOMES = [
    ["finished", "#0072b2"],
    ["cancelled at the window's end", "#009e73"],
    ["failed", "#d55e00"],
  ];
  var SERIES = ["#0072b2", "#e69f00", "#009e73", "#cc79a7"];
  var WIDTH = 720, LEFT = 44, RIGHT = 12;

  function text(i) { return data.texts[i]; }

  // The file is gzip in basE91 (see src/units/base91.rs): unpacked here, in memory
  // (file:// allows no fetch).
  var B91 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&()*+,./:;<=>?@[]^_`{|}~\"";
  function base91(text) {
    var bytes = new Uint8Array(Math.ceil(text.length * 14 / 16) + 1), len = 0, v = -1, b = 0, n = 0;
    for (var i = 0; i < text.length; i++) {
      var d = B91.indexOf(text.charAt(i));
      if (d < 0) continue;
      if (v < 0) { v = d; continue; }
      v += d * 91;
      b |= v << n;
      n += (v & 8191) > 88 ? 13 : 14;
      do { bytes[len++] = b & 255; b >>>= 8; n -= 8; } while (n > 7);
      v = -1;
    }
    if (v >= 0) bytes[len++] = (b | v << n) & 255;
    return bytes.subarray(0, len);
  }
  function unpack(text) {
    var stream = new Blob([base91(text)]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(JSON.parse);
  }

  // Lanes come as columns in whole milliseconds (each send after the one before, first token
  // and end after their send): back to rows [send, first, end, outcome, requests] in seconds.
  function laneRows(c) {
    if (!c) return [];
    var t = 0;
    return c[0].map(function (d, i) {
      t += d;
      return [t / 1000, c[1][i] === null ? null : (t + c[1][i]) / 1000, (t + c[2][i]) / 1000, c[3][i], c[4][i]];
    });
  }

  // Milliseconds to a tenth as the run page writes them: "1,234.5 ms".
  function ms1(v) {
    var parts = Number(v).toFixed(1).split(".");
    return parts[0].replace(/\B(?=(\d{3})+(?!\d))/g, ",") + "." + parts[1] + " ms";
  }

  // A distribution's [p50, p90, p99, max] numbers as text; a percentile its requests do not
  // support (null) says how many it needs, and the largest of those it has.
  function statsText(s) {
    var q = s.q, needs = data.percentile_needs;
    var p = function (i) { return q[i] === null ? "needs " + needs[i - 1] + " requests (max of " + s.count + ": " + ms1(q[3]) + ")" : ms1(q[i]); };
    return { count: s.count, p50: ms1(q[0]), p90: p(1), p99: p(2), max: ms1(q[3]), hist: s.hist };
  }

  // The gauge comes as columns (each time in milliseconds after the one before): back to
  // rows [time in seconds, running, waiting].
  function gaugeRows(c) {
    if (!c) return [];
    var t = 0;
    return c[0].map(function (d, i) { t += d; return [t / 1000, c[1][i], c[2][i] === undefined ? null : c[2][i]]; });
  }

  // Empty fields are left out of the data file: read them as empty.
  function filled(cell) {
    ["neighbours", "uncertainty", "tool_figures", "warnings", "reps"].forEach(function (k) { cell[k] = cell[k] || []; });
    cell.detail = cell.detail || "";
    cell.reps.forEach(function (r) {
      r.lanes = laneRows(r.lanes);
      ["ttft", "answer_ttft", "tbt"].forEach(function (k) { if (r[k]) r[k] = statsText(r[k]); });
      r.gauge = gaugeRows(r.gauge);
      ["formulas", "prefill", "lanes", "gauge", "throughput", "outcomes", "token_sources"].forEach(function (k) { r[k] = r[k] || []; });
      r.requests = r.requests || 0;
      r.lane_group = r.lane_group || 1;
      r.span = r.span || 0;
      r.target = cell.concurrency;
    });
    return cell;
  }

  function tokens(n) { return Number(n).toLocaleString("en-US"); }

  function subtitle(cell) {
    return cell.phase === "prefill" ? "prefill of a " + tokens(cell.context) + "-token prompt"
      : cell.concurrency + " request" + (cell.concurrency === 1 ? "" : "s") + " at once, " + tokens(cell.context) + "-token context";
  }

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    (children || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      e.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    });
    return e;
  }

  function svg(tag, attrs, children) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    (children || []).forEach(function (c) {
      e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return e;
  }

  function fixed(v, d) { return Number(v).toFixed(d); }
  function secs(t) { return fixed(t, 2) + " s"; }

  // 1, 2 or 5 times a power of ten, about span / 6.
  function tickStep(span) {
    var raw = Math.max(span / 6, 1e-9);
    var p = Math.pow(10, Math.floor(Math.log10(raw)));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) if (steps[i] * p >= raw) return steps[i] * p;
    return 10 * p;
  }

  function axisLabel(v) {
    return Math.abs(v - Math.round(v)) < 1e-9 ? Math.round(v).toLocaleString("en-US") : fixed(v, 1);
  }

  function chartFrame(cls, height, title, desc) {
    return svg("svg", { class: "chart " + cls, role: "img", viewBox: "0 0 " + WIDTH + " " + height,
      preserveAspectRatio: "xMidYMid meet" }, [svg("title", {}, [title]), svg("desc", {}, [desc])]);
  }

  function xAxis(s, y, span, x, desc) {
    s.appendChild(svg("line", { x1: LEFT, y1: y, x2: WIDTH - RIGHT, y2: y, stroke: "currentColor" }));
    var step = tickStep(span);
    for (var t = 0; t <= span + 1e-9; t += step) {
      s.appendChild(svg("text", { x: fixed(x(t), 1), y: y + 15, "font-size": 12, "text-anchor": "middle",
        fill: "currentColor" }, [axisLabel(t)]));
    }
    s.appendChild(svg("text", { x: (LEFT + WIDTH - RIGHT) / 2, y: y + 31, "font-size": 12,
      "text-anchor": "middle", fill: "currentColor" }, [desc]));
  }

  // Every request from send to end: thin until its first token, thick after, coloured by how
  // it ended; the measurement window shaded.
  function timeline(rep) {
    if (!rep.lanes.length || rep.span <= 0) return null;
    var laneH = Math.min(24, Math.max(2, 300 / rep.lanes.length));
    var top = 8, plotH = laneH * rep.lanes.length, height = Math.round(top + plotH + 36);
    var x = function (t) { return LEFT + (WIDTH - LEFT - RIGHT) * Math.min(1, Math.max(0, t / rep.span)); };
    var s = chartFrame("timeline", height, "Every request of the cell, from send to end",
      rep.requests + " requests" + (rep.lane_group > 1 ? ", " + rep.lane_group + " to a lane" : "") +
      "; thin until the first token, thick while streaming, coloured by how each ended; the shaded band is the measurement window.");
    if (rep.window) {
      s.appendChild(svg("rect", { x: fixed(x(rep.window[0]), 1), y: top, width: fixed(Math.max(0.5, x(rep.window[1]) - x(rep.window[0])), 1),
        height: fixed(plotH, 1), fill: "currentColor", "fill-opacity": 0.08 },
        [svg("title", {}, ["measurement window: " + secs(rep.window[0]) + " to " + secs(rep.window[1])])]));
    }
    var thick = Math.max(1.5, laneH * 0.7);
    rep.lanes.forEach(function (l, i) {
      var send = l[0], first = l[1] === null ? l[2] : l[1], end = l[2], o = OUTCOMES[l[3]], n = l[4];
      var y = fixed(top + laneH * (i + 0.5), 1);
      var who = rep.lane_group === 1 ? "request " + (i + 1)
        : "requests " + (i * rep.lane_group + 1) + "–" + (i * rep.lane_group + n);
      var title = who + ": sent at " + secs(send) + ", first token at " + (l[1] === null ? "none" : secs(l[1])) +
        ", ended at " + secs(end) + " (" + o[0] + ")";
      s.appendChild(svg("g", {}, [
        svg("title", {}, [title]),
        svg("line", { x1: fixed(x(send), 1), y1: y, x2: fixed(x(first), 1), y2: y, stroke: "currentColor", "stroke-opacity": 0.45 }),
        svg("line", { x1: fixed(x(first), 1), y1: y, x2: fixed(Math.max(x(end), x(first) + 1), 1), y2: y, stroke: o[1], "stroke-width": fixed(thick, 1) }),
      ]));
    });
    xAxis(s, top + plotH, rep.span, x, "seconds from the first request");
    return s;
  }

  // Lines over time: `series` of {label, points: [[t, v]]}, from zero up.
  function lineChart(cls, title, xDesc, yDesc, series) {
    var all = [].concat.apply([], series.map(function (s) { return s.points; }));
    if (!all.length) return null;
    var t0 = Math.min.apply(null, all.map(function (p) { return p[0]; }));
    var t1 = Math.max.apply(null, all.map(function (p) { return p[0]; }));
    var top = Math.max.apply(null, all.map(function (p) { return p[1]; })) * 1.1 || 1;
    var height = 240, plotTop = 12, plotH = 180;
    var span = Math.max(t1 - t0, 1e-9);
    var x = function (t) { return LEFT + (WIDTH - LEFT - RIGHT) * (t - t0) / span; };
    var y = function (v) { return plotTop + plotH * (1 - v / top); };
    var s = chartFrame(cls, height, title, series.map(function (se) { return se.label + ": " + se.points.length + " points"; }).join("; ") + ".");
    series.forEach(function (se, i) {
      var pts = se.points.map(function (p) { return fixed(x(p[0]), 1) + "," + fixed(y(p[1]), 1); }).join(" ");
      s.appendChild(svg("polyline", { points: pts, fill: "none", stroke: SERIES[i % SERIES.length], "stroke-width": 2 },
        [svg("title", {}, [se.label])]));
      s.appendChild(svg("text", { x: WIDTH - RIGHT, y: plotTop + 14 * (i + 1), "font-size": 12, "text-anchor": "end",
        fill: SERIES[i % SERIES.length] }, [se.label]));
    });
    s.appendChild(svg("text", { x: 4, y: plotTop + 10, "font-size": 12, fill: "currentColor" }, [axisLabel(Math.round(top))]));
    s.appendChild(svg("text", { x: 4, y: plotTop + plotH - 2, "font-size": 12, fill: "currentColor" }, [yDesc]));
    xAxis(s, plotTop + plotH, span, function (t) { return x(t0 + t); }, xDesc);
    return s;
  }

  // Equal-width bins from [least, most, counts] as [lo, hi, count], edges to a tenth of a ms.
  function bins(hist) {
    var width = (hist[1] - hist[0]) / Math.max(1, hist[2].length);
    var tenth = function (v) { return Math.round(v * 10) / 10; };
    return hist[2].map(function (n, i) { return [tenth(hist[0] + width * i), tenth(hist[0] + width * (i + 1)), n]; });
  }

  function histogram(d, what) {
    d = Object.assign({}, d, { bins: bins(d.hist) });
    var w = 360, h = 170, top = 8, plotH = h - top - 36;
    var most = Math.max(1, Math.max.apply(null, d.bins.map(function (b) { return b[2]; })));
    var barW = (w - LEFT - RIGHT) / Math.max(1, d.bins.length);
    var s = svg("svg", { class: "chart histogram", role: "img", viewBox: "0 0 " + w + " " + h, preserveAspectRatio: "xMidYMid meet" },
      [svg("title", {}, ["Histogram of " + what]), svg("desc", {}, [d.count + " requests; p50 " + d.p50 + ", max " + d.max + "."])]);
    d.bins.forEach(function (b, i) {
      var bh = plotH * b[2] / most;
      s.appendChild(svg("rect", { x: fixed(LEFT + barW * i + 0.5, 1), y: fixed(top + plotH - bh, 1), width: fixed(Math.max(0.5, barW - 1), 1),
        height: fixed(bh, 1), fill: "#0072b2" }, [svg("title", {}, [b[0] + " ms to " + b[1] + " ms: " + b[2] + " request" + (b[2] === 1 ? "" : "s")])]));
    });
    var y = top + plotH;
    s.appendChild(svg("line", { x1: LEFT, y1: y, x2: w - RIGHT, y2: y, stroke: "currentColor" }));
    if (d.bins.length) {
      s.appendChild(svg("text", { x: LEFT, y: y + 15, "font-size": 12, fill: "currentColor" }, [d.bins[0][0] + " ms"]));
      s.appendChild(svg("text", { x: w - RIGHT, y: y + 15, "font-size": 12, "text-anchor": "end", fill: "currentColor" }, [d.bins[d.bins.length - 1][1] + " ms"]));
    }
    s.appendChild(svg("text", { x: w / 2, y: y + 31, "font-size": 12, "text-anchor": "middle", fill: "currentColor" }, [what]));
    s.appendChild(svg("text", { x: 4, y: top + 10, "font-size": 12, fill: "currentColor" }, [String(most)]));
    return s;
  }

  function table(label, head, rows) {
    var thead = el("thead", {}, [el("tr", {}, head.map(function (h) {
      return el("th", { scope: "col", class: h[1] ? "num" : "" }, [h[0]]);
    }))]);
    var tbody = el("tbody", {}, rows.map(function (r) {
      return el("tr", r.noisy ? { class: "noisy" } : {}, r.cells.map(function (c, i) {
        return i === 0 ? el("th", { scope: "row" }, [c]) : el("td", { class: head[i][1] ? "num" : "" }, [c]);
      }));
    }));
    return el("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": label }, [el("table", {}, [thead, tbody])]);
  }

  function section(id, title, children) {
    return el("section", id ? { id: id } : {}, [el("h2", {}, [title])].concat(children));
  }

  function figure(chart, caption) {
    return chart ? el("figure", { class: "chart", tabindex: "0" }, [chart, el("figcaption", {}, caption)]) : null;
  }

  function cellHref(slug, rep) { return "#" + runId + "/" + slug + (rep > 1 ? "/r" + rep : ""); }
  function runHref() { return root + "runs/" + runId + "/index.html"; }

  function header(cell, rep) {
    var nav = el("nav", { class: "cell-nav", "aria-label": "Neighbouring cells" }, cell.neighbours.map(function (n) {
      var other = data.cells[n[1]];
      return el("a", { href: cellHref(other.slug, 1) }, [text(n[0]) + ": " + other.name]);
    }).concat([el("a", { href: root + "leaderboards/" + cell.board + "/index.html" }, ["Leaderboard " + cell.name])]));
    var out = [el("p", { class: "kicker" }, [el("a", { href: runHref() }, [data.title]), " · ", el("a", { href: "#" + runId }, ["cells"])]),
      el("h1", {}, [cell.name]),
      el("p", { class: "subtitle" }, [el("span", { class: "status " + cell.status }, [text(cell.status_label)]), " · " + subtitle(cell)]), nav];
    if (cell.reps.length > 1) {
      out.push(el("nav", { class: "cell-nav reps", "aria-label": "Repetitions" }, ["Repetition: "].concat(cell.reps.map(function (r) {
        var attrs = { href: cellHref(cell.slug, r.rep) };
        if (r === rep) attrs["aria-current"] = "page";
        return el("a", attrs, [String(r.rep) + (r.instance ? " (server process " + r.instance + ")" : "")]);
      }))));
    }
    return out;
  }

  function outcomeSections(cell) {
    if (cell.status === "looped") {
      var l = cell.looped || [];
      return [section(null, "Looped", [el("p", {}, ["The model kept repeating the same text, so the measurement was discarded." + (cell.detail ? " " + cell.detail + "." : "")]),
        l[3] ? el("pre", { class: "excerpt" }, [l[3]]) : null])];
    }
    if (cell.status === "over_capacity") {
      var measured = cell.detail && cell.detail.indexOf("measured") === 0;
      return [section(null, "Over capacity", [el("p", {}, [(measured ? "Measured and set aside: " + cell.detail.slice(9) : "Not run" + (cell.detail ? ": " + cell.detail : "")) + "."])])];
    }
    if (cell.status === "error" && cell.error) {
      return [section(null, "Error", [el("p", {}, ["The server or the connection failed" + (cell.error[0] ? " (HTTP " + cell.error[0] + ")" : "") + ":"]),
        el("pre", { class: "excerpt" }, [cell.error[1]])])];
    }
    return [];
  }

  function figures(cell, rep) {
    var out = [];
    if (cell.status !== "valid") return out;
    var note = cell.measured ? null : el("p", { class: "note" }, ["As reported by " + data.bench_tool + "; this site did not compute them from raw records."]);
    if (rep && rep.formulas.length) {
      out.push(section(null, "Figures" + (cell.reps.length > 1 ? " of repetition " + rep.rep : ""), [note, table("How each figure was computed",
        [["Figure"], ["Value", true], ["Formula"], ["Numbers"]],
        rep.formulas.map(function (f) { return { cells: [text(f[0]), f[1], text(f[2]), text(f[3])] }; }))]));
    } else if (note) {
      out.push(section(null, "Figures", [note]));
    }
    if (cell.uncertainty.length) {
      out.push(section("uncertainty", "Uncertainty", [el("p", { class: "note" }, [cell.repetitions > 1
        ? "This cell was measured " + cell.repetitions + " times: each figure is the mean of the repetitions, and its interval covers the noise from one run to the next. A coefficient of variation (CV) above 10% is marked noisy."
        : "This cell was measured once: these intervals describe the spread within one window (its requests, or its throughput in 5-second batches) and do not cover the next run's noise. A coefficient of variation (CV) above 10% is marked noisy."]),
        table("Each figure with its interval", [["Figure"], ["Value", true], ["Interval"], ["n", true], ["Covers"], ["CV", true]],
          cell.uncertainty.map(function (u) {
            return { noisy: u[7], cells: [text(u[0]) + (u[7] ? " (noisy)" : ""), u[1], u[2] + " (" + text(u[3]) + ")", String(u[4]), text(u[5]), u[6]] };
          }))]));
    }
    return out;
  }

  function extras(cell) {
    var out = [];
    if (cell.tool_figures.length) {
      out.push(section(null, "Figures as " + data.tool + " named them", [
        el("p", { class: "note" }, ["Reported by the tool but not shown in this site's columns, because their definitions differ from this site's."]),
        table("Figures as the tool named them", [["Field"], ["Value", true], ["Unit"]],
          cell.tool_figures.map(function (t) { return { cells: [t[0], t[1], t[2]] }; }))]));
    }
    if (cell.warnings.length) {
      out.push(section("warnings", "Warnings", [el("ul", { class: "details" }, cell.warnings.map(function (w) {
        return el("li", { class: "warned" }, [el("code", {}, [w[0]]), ": " + w[1]]);
      }))]));
    }
    return out;
  }

  function evidence(cell, rep) {
    if (!rep) return [];
    var out = [];
    if (rep.prefill.length) {
      out.push(section(null, "The prefill sample", [table("Prefill requests",
        [["Sent"], ["Prompt tokens reported", true], ["Cached", true], ["TTFT", true], ["Prompt tok/s", true]],
        rep.prefill.map(function (r) { return { cells: [r[0], r[1] === null ? "—" : r[1].toLocaleString("en-US"), r[2] === null ? "—" : r[2].toLocaleString("en-US"), r[3], r[4]] }; }))]));
    }
    if (rep.lanes.length) {
      out.push(section("timeline", "Every request", [
        el("p", {}, [rep.requests + " requests" + (rep.lane_group > 1 ? ", " + rep.lane_group + " to a lane" : "") +
          ": a thin line while waiting for the first token, a thick line while streaming, coloured by how it ended; the shaded band is the measurement window."]),
        figure(timeline(rep), ["Requests by send time."].concat([].concat.apply([], rep.outcomes.map(function (o) {
          return [" ", el("span", { class: "swatch", style: "background:" + OUTCOMES[o[0]][1] }), OUTCOMES[o[0]][0] + ": " + o[1]];
        }))))]));
    }
    if (rep.gauge.length) {
      var t0 = rep.gauge[0][0], t1 = rep.gauge[rep.gauge.length - 1][0];
      var series = [{ label: "running", points: rep.gauge.map(function (g) { return [g[0], g[1]]; }) },
        { label: "target: " + rep.target, points: [[t0, rep.target], [t1, rep.target]] }];
      var waiting = rep.gauge.filter(function (g) { return g[2] !== null; }).map(function (g) { return [g[0], g[2]]; });
      if (waiting.length) series.push({ label: "waiting", points: waiting });
      out.push(section("gauge", "Requests on the server", [figure(lineChart("gauge", "Requests in flight over the cell",
        "seconds from the first request", "requests", series),
        ["Running" + (rep.gauge_source ? " (" + rep.gauge_source + ")" : "") + " against the target of " + rep.target +
          (rep.gauge_every ? ", read every " + rep.gauge_every : "") + "."])]));
    }
    if (rep.throughput.length) {
      out.push(section("throughput", "Output tokens per second across the window", [figure(lineChart("throughput",
        "Output tokens per second across the window", "seconds into the measurement window", "output tok/s",
        [{ label: "output tok/s", points: rep.throughput }]),
        ["One-second bins. Records keep each request's tokens inside the window and when the first and last of them came, so a request's tokens are spread evenly between those times."])]));
    }
    var dists = [[rep.ttft, rep.answer_ttft ? "Time to first token (any kind, reasoning included)" : "Time to first token"],
      [rep.answer_ttft, "Time to first answer token (after the reasoning)"], [rep.tbt, "Time between tokens"]].filter(function (d) { return d[0]; });
    if (dists.length) {
      out.push(section("distributions", "Distributions", [el("div", { class: "columns" }, dists.map(function (d) {
        var s = d[0];
        return figure(histogram(s, d[1].toLowerCase() + " (ms)"), [d[1] + ": " + s.count + " requests · p50 " + s.p50 + " · p90 " + s.p90 + " · p99 " + s.p99 + " · max " + s.max]);
      }))]));
    }
    if (rep.turns && rep.turns.length) {
      out.push(section("turns", "Turns of the conversations", [table("Turns of the conversations",
        [["Turn", false], ["Requests", true], ["Prompt tokens (median)", true], ["TTFT (median)", true]],
        rep.turns.map(function (t) { return { cells: [String(t[0]), String(t[1]), t[2], t[3]] }; })),
        el("p", { class: "caption" }, ["Each stream is a conversation: a turn's prompt carries the earlier turns and their answers, so it grows and the server's prefix cache may serve its start."])]));
    }
    if (rep.token_sources.length) {
      out.push(section(null, "How tokens were counted", [el("ul", {}, rep.token_sources.map(function (t) {
        return el("li", {}, [t[1] + " request" + (t[1] === 1 ? "" : "s") + ": " + text(t[0])]);
      }))]));
    }
    return out;
  }

  // The run's cells as a list (the viewer's page for `#RUN`).
  function runCells() {
    return el("div", { id: "cell-view", "data-root": root }, [
      el("p", { class: "kicker" }, [el("a", { href: runHref() }, [data.title]), " · cells"]),
      el("h1", {}, ["Cells"]),
      el("nav", { "aria-label": "Cells of the run" }, [el("ul", { class: "cell-list" }, data.cells.map(function (c) {
        return el("li", {}, [el("a", { href: cellHref(c.slug, 1) }, [c.name])]);
      }))])]);
  }

  // A run whose evidence this site does not publish (`[publish] evidence_days`), or none.
  function noEvidence(id) {
    return el("div", { id: "cell-view", "data-root": root }, [el("h1", {}, ["Cells"]),
      el("p", {}, ["This site publishes no evidence for run " + id + ": ",
        el("a", { href: root + "runs/" + id + "/index.html" }, ["its page"]),
        " has every figure of its cells, and its downloads have them as data."])]);
  }

  function replaceView(page, title) {
    view.replaceWith(page);
    view = page;
    document.title = title;
  }

  function show() {
    var parts = decodeURIComponent(location.hash.slice(1)).split("/");
    if (RUN_ID.test(parts[0]) && parts[0] === missing) return replaceView(noEvidence(parts[0]), baseTitle);
    if (!RUN_ID.test(parts[0]) || parts[0] !== runId || !data) return replaceView(listing.cloneNode(true), baseTitle);
    var cell = data.cells.filter(function (c) { return c.slug === parts[1]; })[0];
    if (!cell) return replaceView(runCells(), "Cells · " + data.title + " · " + baseTitle.replace(/^Cells · /, ""));
    var want = /^r(\d+)$/.test(parts[2] || "") ? Number(parts[2].slice(1)) : 1;
    var rep = cell.reps.filter(function (r) { return r.rep === want; })[0] || cell.reps[0];
    replaceView(el("div", { id: "cell-view", "data-root": root }, [].concat(header(cell, rep), outcomeSections(cell),
      figures(cell, rep), extras(cell), evidence(cell, rep))), cell.name + " · " + data.title + " · " + baseTitle.replace(/^Cells · /, ""));
    var target = parts[2] && !/^r\d+$/.test(parts[2]) ? document.getElementById(parts[2]) : null;
    if (target) target.scrollIntoView();
  }

  // Loads run `id`'s evidence (once a run: a script tag, then its data unpacked), then shows.
  function load() {
    var id = decodeURIComponent(location.hash.slice(1)).split("/")[0];
    if (!RUN_ID.test(id) || id === runId) return show();
    var script = document.createElement("script");
    script.src = root + "runs/" + id + "/evidence.js";
    script.onload = function () {
      missing = null;
      var packed = window.SPEED_MATRIX_EVIDENCE;
      window.SPEED_MATRIX_EVIDENCE = undefined;
      script.remove();
      if (!packed) return show();
      unpack(packed).then(function (d) {
        data = d;
        runId = id;
        data.cells.forEach(filled);
        show();
      });
    };
    script.onerror = function () {
      script.remove();
      runId = null;
      data = null;
      missing = id;
      show();
    };
    document.head.appendChild(script);
  }

  window.addEventListener("hashchange", load);
  load();
})();

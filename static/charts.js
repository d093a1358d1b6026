// Line charts drawn in the browser from the numbers the page carries (a run page's
// throughput against interactivity): the drawing of the site's own SVG charts (600 x 330,
// its palette, a marker shape a series, whiskers, labels that would overlap another left
// out, a legend) from about a kilobyte of numbers instead of eight of SVG. Each chart is a
// <script type="application/json" class="chart-data"> inside its <figure>; the SVG takes
// its place. Without scripts, the page's tables have every figure.
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var PALETTE = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#b8860b", "#1f8fa0", "#8a63d2"];
  var SHAPES = ["circle", "square", "triangle", "diamond"];
  var W = 600, H = 330, TEXT = 14, LINE = TEXT + 6, LEGEND_TEXT_MAX = 180;
  var PLOT = { x0: 84, y0: 12, x1: 588, y1: 272 };

  function svg(tag, attrs, kids) {
    var e = document.createElementNS(NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    (kids || []).forEach(function (k) { e.appendChild(typeof k === "string" ? document.createTextNode(k) : k); });
    return e;
  }

  function grouped(v) { return v.replace(/\B(?=(\d{3})+(?!\d))/g, ","); }

  // As the site's axes print numbers: 1.5K, 500, 2.5.
  function axisNumber(v) {
    if (Math.abs(v) >= 1e9) return (v / 1e9).toFixed(1).replace(/\.0$/, "") + "G";
    if (Math.abs(v) >= 1e6) return (v / 1e6).toFixed(1).replace(/\.0$/, "") + "M";
    if (Math.abs(v) >= 1000) return (v / 1000).toFixed(1).replace(/\.0$/, "") + "K";
    return Math.abs(v - Math.round(v)) < 1e-9 ? grouped(String(Math.round(v))) : v.toFixed(1);
  }

  // Ticks at a round step (1, 2 or 5 times a power of ten), about `target` of them.
  function ticks(lo, hi, target) {
    var raw = (hi - lo) / target, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 5, 10].map(function (m) { return m * mag; }).filter(function (s) { return s >= raw; })[0];
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.round(v / step) * step);
    return out;
  }

  function textWidth(t) { return Math.ceil(t.length * TEXT * 0.56); }

  function legendLabel(label) {
    if (textWidth(label) <= LEGEND_TEXT_MAX) return label;
    return label.slice(0, Math.floor(LEGEND_TEXT_MAX / (TEXT * 0.56)) - 1).trim() + "…";
  }

  function legendBox(series) {
    var w = Math.max.apply(null, series.map(function (s) { return textWidth(legendLabel(s.label)); })) + 40;
    var h = LINE * series.length + 8;
    return { x0: W - 16 - w, y0: 16, x1: W - 16, y1: 16 + h };
  }

  function overlaps(a, b) { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1; }

  // A marker as a subpath of its series' path (as the site's SVG charts draw it).
  function markerPath(shape, x, y) {
    if (shape === "triangle") return "M" + x + " " + (y - 5) + "l-5 9h10z";
    if (shape === "diamond") return "M" + x + " " + (y - 5) + "l5 5-5 5-5-5z";
    return "M" + x + " " + y + "h0";
  }

  // A series' markers as one path (of class "point" on the plot; none in the legend).
  function markers(shape, colour, d, cls) {
    var a = shape === "triangle" || shape === "diamond" ? { fill: colour, d: d }
      : { fill: "none", stroke: colour, "stroke-width": 8, "stroke-linecap": shape === "square" ? "square" : "round", d: d };
    if (cls) a.class = cls;
    return svg("path", a);
  }

  function draw(spec) {
    var all = [].concat.apply([], spec.series.map(function (s) { return s.points; }));
    if (!all.length) return null;
    var xs = all.map(function (p) { return p[0]; });
    var x0 = Math.min.apply(null, xs), x1 = Math.max.apply(null, xs);
    var pad = Math.max((x1 - x0) * 0.06, 0.25);
    x0 -= pad; x1 += pad;
    var top = Math.max.apply(null, all.map(function (p) { return Math.max(p[1], p[3] === null ? 0 : p[3]); }));
    var y1 = top > 0 ? top * 1.15 : 1;
    var px = function (x) { return PLOT.x0 + (x - x0) / (x1 - x0) * (PLOT.x1 - PLOT.x0); };
    var legend = spec.legend ? legendBox(spec.series) : null;
    if (legend) {
      // Points under the legend's corner lower the plot below it (at most 60% of its height).
      var under = all.filter(function (p) { return px(p[0]) >= legend.x0 - 6; })
        .reduce(function (m, p) { return Math.max(m, p[1]); }, 0);
      var covered = Math.min(0.6, (legend.y1 + 6 - PLOT.y0) / (PLOT.y1 - PLOT.y0));
      y1 = Math.max(y1, under / (1 - covered));
    }
    var py = function (y) { return PLOT.y1 - y / y1 * (PLOT.y1 - PLOT.y0); };
    var r = function (v) { return Math.round(v); };
    var s = svg("svg", { class: "chart", role: "img", preserveAspectRatio: "xMidYMid meet", "font-family": "sans-serif",
      width: W, height: H, viewBox: "0 0 " + W + " " + H }, [svg("title", {}, [spec.title]), svg("desc", {}, [spec.desc])]);
    // A context axis names its ticks (powers of two, x their log2); a linear one numbers them.
    var xt = spec.x_ticks ? spec.x_ticks.map(function (t) { return t[0]; }) : ticks(x0, x1, 10), yt = ticks(0, y1, 5);
    var xName = function (x, i) { return spec.x_ticks ? spec.x_ticks[i][1] : axisNumber(x); };
    var grid = xt.map(function (x) { return "M" + r(px(x)) + " " + PLOT.y1 + "V" + PLOT.y0; })
      .concat(yt.map(function (y) { return "M" + PLOT.x0 + " " + r(py(y)) + "H" + PLOT.x1; }));
    s.appendChild(svg("path", { opacity: 0.2, stroke: "currentColor", fill: "none", d: grid.join("") }));
    var axes = ["M" + (PLOT.x0 - 1) + " " + PLOT.y0 + "V" + PLOT.y1, "M" + PLOT.x0 + " " + (PLOT.y1 + 1) + "H" + PLOT.x1]
      .concat(yt.map(function (y) { return "M" + (PLOT.x0 - 6) + " " + r(py(y)) + "h5"; }))
      .concat(xt.map(function (x) { return "M" + r(px(x)) + " " + (PLOT.y1 + 1) + "v5"; }));
    s.appendChild(svg("path", { fill: "none", stroke: "currentColor", d: axes.join("") }));
    s.appendChild(svg("g", { "text-anchor": "end", "font-size": 14.5, fill: "currentColor" }, yt.map(function (y) {
      return svg("text", { x: PLOT.x0 - 10, y: r(py(y)), dy: "0.5ex" }, [axisNumber(y)]);
    })));
    s.appendChild(svg("g", { "text-anchor": "middle", "font-size": 14.5, fill: "currentColor" }, xt.map(function (x, i) {
      return svg("text", { x: r(px(x)), y: PLOT.y1 + 10, dy: "0.8em" }, [xName(x, i)]);
    })));
    var mid = r((PLOT.y0 + PLOT.y1) / 2);
    s.appendChild(svg("g", { "text-anchor": "middle", "font-size": 15.3, fill: "currentColor" }, [
      svg("text", { x: 12, y: mid, dy: "0.8em", transform: "rotate(270, 12, " + mid + ")" }, [spec.y_desc]),
      svg("text", { x: r((PLOT.x0 + PLOT.x1) / 2), y: H - 12, dy: "-0.5ex" }, [spec.x_desc]),
    ]));
    var taken = legend ? [legend] : [];
    var labels = svg("g", { "font-size": TEXT, fill: "currentColor" });
    var place = function (text, x, y) {
      var w = textWidth(text), h = TEXT;
      var spots = [[x + 7, y + h / 2 - 2], [x - w / 2, y - 8], [x - w / 2, y + h + 6], [x - w - 7, y + h / 2 - 2]];
      for (var i = 0; i < spots.length; i++) {
        var b = { x0: spots[i][0], y0: spots[i][1] - h + 2, x1: spots[i][0] + w, y1: spots[i][1] + 3 };
        if (b.x0 < 0 || b.x1 > W || b.y0 < 0 || b.y1 > H || taken.some(function (t) { return overlaps(t, b); })) continue;
        taken.push(b);
        labels.appendChild(svg("text", { x: r(spots[i][0]), y: r(spots[i][1]) }, [text]));
        return;
      }
    };
    spec.series.forEach(function (se, i) {
      var colour = PALETTE[i % PALETTE.length], shape = SHAPES[i % SHAPES.length];
      var pts = se.points.map(function (p) { return [r(px(p[0])), r(py(p[1])), p]; });
      s.appendChild(svg("polyline", { fill: "none", stroke: colour, "stroke-width": 2,
        points: pts.map(function (q) { return q[0] + "," + q[1]; }).join(" ") }));
      var whiskers = pts.filter(function (q) { return q[2][2] !== null && q[2][3] !== null; }).map(function (q) {
        var hi = r(py(Math.max(0, q[2][3]))), lo = r(py(Math.max(0, q[2][2])));
        return hi === lo ? "M" + (q[0] - 3) + " " + hi + "h6"
          : "M" + q[0] + " " + hi + "V" + lo + "M" + (q[0] - 3) + " " + hi + "h6M" + (q[0] - 3) + " " + lo + "h6";
      });
      if (whiskers.length) {
        s.appendChild(svg("path", { class: "whisker", stroke: colour, "stroke-width": 1.5, fill: "none", d: whiskers.join("") }));
      }
      s.appendChild(markers(shape, colour, pts.map(function (q) { return markerPath(shape, q[0], q[1]); }).join(""), "point"));
      pts.forEach(function (q) { taken.push({ x0: q[0] - 5, y0: q[1] - 5, x1: q[0] + 5, y1: q[1] + 5 }); });
      pts.forEach(function (q) { if (q[2][4]) place(q[2][4], q[0], q[1]); });
    });
    if (legend) {
      s.appendChild(svg("rect", { x: legend.x0, y: legend.y0, width: legend.x1 - legend.x0, height: legend.y1 - legend.y0,
        fill: "none", stroke: "currentColor", "stroke-opacity": 0.3 }));
      spec.series.forEach(function (se, i) {
        var colour = PALETTE[i % PALETTE.length], shape = SHAPES[i % SHAPES.length];
        var y = legend.y0 + 4 + LINE * i + LINE / 2, x = legend.x0;
        s.appendChild(svg("path", { stroke: colour, "stroke-width": 2, d: "M" + (x + 6) + " " + y + "H" + (x + 28) }));
        s.appendChild(markers(shape, colour, markerPath(shape, x + 17, y)));
        s.appendChild(svg("text", { x: x + 34, y: y + TEXT / 2 - 2, "font-size": TEXT, fill: "currentColor" },
          [svg("title", {}, [se.label]), legendLabel(se.label)]));
      });
    }
    s.appendChild(labels);
    return s;
  }

  function drawAll() {
    Array.prototype.forEach.call(document.querySelectorAll("script.chart-data"), function (data) {
      var chart = draw(JSON.parse(data.textContent));
      if (chart) data.parentNode.insertBefore(chart, data);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", drawAll);
  else drawAll();
})();

// The JavaScript embedded in every SVG flame graph. It is a function expression that the writer
// calls with a configuration object: (kSvgScript)({width:..., pad:..., ...}).
//
// The script reads the layout back from the document: each frame is a <g class="f ..."> in
// <g id="frames"> with data-o (offset in samples from the left edge), data-n (samples) and data-d
// (depth, 0 = "all"), a <rect>, a <text> label and a <title> "NAME (N samples, P%)". Sample
// offsets rather than pixel positions decide what is inside or above a zoomed frame, so the tests
// are exact. Must never contain "]]>" (it is inside a CDATA section).
#pragma once

namespace aiflame {

inline constexpr const char* kSvgScript = R"JS(function (cfg) {
  "use strict";
  var doc = document;
  var details = doc.getElementById("details");
  var matched = doc.getElementById("matched");
  var unzoom = doc.getElementById("unzoom");
  var searchBtn = doc.getElementById("search");
  var full = cfg.width - 2 * cfg.pad;
  var frames = [];
  var byG = new Map();
  var zoomed = null;
  var term = "";

  var gs = doc.getElementById("frames").children;
  for (var i = 0; i < gs.length; i++) {
    var g = gs[i];
    var title = g.querySelector("title").textContent;
    var cut = title.lastIndexOf(" (");  // the suffix is ours and holds no " ("
    var f = {
      g: g, rect: g.querySelector("rect"), text: g.querySelector("text"), title: title,
      name: cut >= 0 ? title.slice(0, cut) : title,
      o: Number(g.getAttribute("data-o")), n: Number(g.getAttribute("data-n")),
      d: Number(g.getAttribute("data-d"))
    };
    f.fill = f.rect.getAttribute("fill");
    frames.push(f);
    byG.set(g, f);
  }

  function px(v) { return String(Math.round(v * 100) / 100); }

  // Same rule as svg_label() in the writer.
  function label(name, w) {
    var avail = Math.floor((w - 6) / cfg.charWidth);
    if (avail < 3) return "";
    var cps = Array.from(name);
    if (cps.length <= avail) return name;
    return cps.slice(0, avail - 2).join("") + "..";
  }

  function place(f, x, w) {
    f.rect.setAttribute("x", px(x));
    f.rect.setAttribute("width", px(w));
    f.text.setAttribute("x", px(x + 3));
    f.text.textContent = label(f.name, w);
  }

  // Zoomed frame and its descendants fill the width, its ancestors span it, the rest hide.
  function layout() {
    var to = zoomed ? zoomed.o : 0, tn = zoomed ? zoomed.n : cfg.total, td = zoomed ? zoomed.d : 0;
    var scale = full / tn;
    for (var i = 0; i < frames.length; i++) {
      var f = frames[i];
      var inside = f.d >= td && f.o >= to && f.o + f.n <= to + tn;
      var above = f.d < td && f.o <= to && f.o + f.n >= to + tn;
      var w = inside ? f.n * scale : full;
      var show = (inside && w >= cfg.minWidth) || above;
      f.g.style.display = show ? "" : "none";
      f.g.classList.toggle("anc", above);
      if (show) place(f, inside ? cfg.pad + (f.o - to) * scale : cfg.pad, w);
    }
    unzoom.style.opacity = zoomed ? "1" : "0";
  }

  function zoom(f) {
    zoomed = f && f.d > 0 ? f : null;
    layout();
  }

  function clearSearch() {
    term = "";
    for (var i = 0; i < frames.length; i++) frames[i].rect.setAttribute("fill", frames[i].fill);
    matched.textContent = "";
  }

  function search(t) {
    clearSearch();
    if (!t) return;
    var re;
    try { re = new RegExp(t); } catch (e) { alert("Invalid regular expression: " + e.message); return; }
    term = t;
    var hits = [];
    for (var i = 0; i < frames.length; i++) {
      var f = frames[i];
      if (f.d > 0 && re.test(f.name)) { f.rect.setAttribute("fill", cfg.matchColor); hits.push(f); }
    }
    // Frames form a tree, so two hits are nested or disjoint: walking them by offset (outer
    // first) and skipping those that start inside the last counted one counts each sample once.
    hits.sort(function (a, b) { return a.o - b.o || b.n - a.n; });
    var sum = 0, end = -1;
    for (var j = 0; j < hits.length; j++) {
      if (hits[j].o >= end) { sum += hits[j].n; end = hits[j].o + hits[j].n; }
    }
    matched.textContent = "Matched: " + (100 * sum / cfg.total).toFixed(1) + "%";
  }

  function askSearch() {
    var t = prompt("Search frames (regular expression; empty clears)", term);
    if (t !== null) search(t);
  }

  function frameOf(node) {
    while (node && node !== doc) {
      var f = byG.get(node);
      if (f) return f;
      node = node.parentNode;
    }
    return null;
  }

  var area = doc.getElementById("frames");
  area.addEventListener("click", function (e) {
    var f = frameOf(e.target);
    if (f) zoom(f);
  });
  area.addEventListener("mouseover", function (e) {
    var f = frameOf(e.target);
    if (f) details.textContent = f.title;
  });
  area.addEventListener("mouseout", function () { details.textContent = " "; });
  unzoom.addEventListener("click", function () { zoom(null); });
  searchBtn.addEventListener("click", askSearch);
  matched.addEventListener("click", clearSearch);
  doc.addEventListener("keydown", function (e) {
    if (((e.ctrlKey || e.metaKey) && (e.key === "f" || e.key === "F")) || e.key === "F3") {
      e.preventDefault();
      askSearch();
    } else if (e.key === "Escape") {
      if (term) clearSearch(); else zoom(null);
    }
  });
})JS";

}  // namespace aiflame

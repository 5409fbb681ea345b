// scx_tt report: zoom and pan of the Gantt (and the frequency charts, on the same slot axis).
// Reads the page's DOM only; the slot range lives in #zoom's data-min/data-max.
(function () {
  "use strict";
  var zoom = document.getElementById("zoom");
  var charts = Array.prototype.slice.call(document.querySelectorAll("svg.zoomable"));
  var axis = document.getElementById("gantt-axis");
  var label = document.getElementById("zoom-label");
  var pan = document.getElementById("zoom-pan");
  var fromIn = document.getElementById("zoom-from");
  var toIn = document.getElementById("zoom-to");
  var MIN = Number(zoom.getAttribute("data-min"));
  var MAX = Number(zoom.getAttribute("data-max"));
  var FULL = Math.max(1, MAX - MIN);
  var a = MIN, b = MAX;

  function clamp(x, lo, hi) { return Math.max(lo, Math.min(hi, x)); }

  function niceStep(span) {
    var raw = span / 10, p = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) { if (steps[i] * p >= raw) return Math.max(1, steps[i] * p); }
    return Math.max(1, 10 * p);
  }

  function apply() {
    var w = b - a;
    charts.forEach(function (svg) {
      svg.setAttribute("viewBox", a + " 0 " + w + " " + svg.getAttribute("data-h"));
      // Slot borders only when a slot is wide enough to show one.
      var px = svg.getBoundingClientRect().width / w;
      if (px >= 4) svg.classList.add("fine"); else svg.classList.remove("fine");
    });
    label.textContent = "slots " + Math.floor(a) + " to " + Math.ceil(b) + " (" + w.toFixed(w < 10 ? 1 : 0) + " shown of " + FULL + ")";
    fromIn.value = Math.floor(a);
    toIn.value = Math.ceil(b);
    pan.value = FULL > w ? Math.round(1000 * (a - MIN) / (FULL - w)) : 0;
    while (axis.firstChild) axis.removeChild(axis.firstChild);
    var step = niceStep(w);
    for (var t = Math.ceil(a / step) * step; t <= b; t += step) {
      var span = document.createElement("span");
      span.style.left = (100 * (t - a) / w) + "%";
      span.textContent = String(t);
      axis.appendChild(span);
    }
  }

  function show(na, nb) {
    var w = clamp(nb - na, 1, FULL);
    na = clamp(na, MIN, MAX - w);
    a = na; b = na + w;
    apply();
  }

  function zoomBy(f, centre) {
    var c = centre === undefined ? (a + b) / 2 : centre;
    var w = clamp((b - a) * f, 1, FULL);
    var r = (c - a) / (b - a);
    show(c - r * w, c - r * w + w);
  }

  document.getElementById("zoom-in").addEventListener("click", function () { zoomBy(0.5); });
  document.getElementById("zoom-out").addEventListener("click", function () { zoomBy(2); });
  document.getElementById("zoom-reset").addEventListener("click", function () { show(MIN, MAX); });
  document.getElementById("zoom-go").addEventListener("click", function () {
    var x = Number(fromIn.value), y = Number(toIn.value);
    if (isFinite(x) && isFinite(y) && y > x) show(x, y);
  });
  pan.addEventListener("input", function () {
    var w = b - a;
    show(MIN + (FULL - w) * Number(pan.value) / 1000, MIN + (FULL - w) * Number(pan.value) / 1000 + w);
  });

  var drag = null;
  charts.forEach(function (svg) {
    svg.addEventListener("wheel", function (e) {
      e.preventDefault();
      var r = svg.getBoundingClientRect();
      var c = a + (b - a) * (e.clientX - r.left) / Math.max(1, r.width);
      zoomBy(e.deltaY > 0 ? 1.25 : 0.8, c);
    }, { passive: false });
    svg.addEventListener("mousedown", function (e) {
      drag = { x: e.clientX, a: a, width: svg.getBoundingClientRect().width };
    });
  });
  window.addEventListener("mousemove", function (e) {
    if (!drag) return;
    var d = (e.clientX - drag.x) * (b - a) / Math.max(1, drag.width);
    show(drag.a - d, drag.a - d + (b - a));
  });
  window.addEventListener("mouseup", function () { drag = null; });

  apply();
  document.documentElement.setAttribute("data-report-ready", String(document.querySelectorAll("svg.gantt rect.bar").length));
})();

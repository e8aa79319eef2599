// kafka-chaos report: small progressive enhancements. The page is complete without them.
"use strict";
(function () {
  // A shared time cursor: hovering any time plot draws the same instant on all of them,
  // so a latency spike can be read against the leadership lanes and fault windows.
  var LEFT = 96, RIGHT = 16, WIDTH = 1100;  // reports/svg.py's LEFT, RIGHT, WIDTH
  var body = document.querySelector("main[data-duration]");
  var duration = body ? parseFloat(body.getAttribute("data-duration")) : NaN;
  var plots = Array.prototype.slice.call(document.querySelectorAll(".timeplot svg.plot, #plot-faults svg.plot"));
  if (!isNaN(duration) && plots.length) {
    var NS = "http://www.w3.org/2000/svg";
    var cursors = plots.map(function (svg) {
      var vb = svg.viewBox.baseVal;
      var line = document.createElementNS(NS, "line");
      line.setAttribute("class", "cursor");
      line.setAttribute("y1", "18");
      line.setAttribute("y2", String(vb.height - 24));
      line.style.display = "none";
      var label = document.createElementNS(NS, "text");
      label.setAttribute("class", "cursor-label");
      label.setAttribute("y", "14");
      label.style.display = "none";
      svg.appendChild(line);
      svg.appendChild(label);
      return { svg: svg, line: line, label: label };
    });
    var show = function (x) {
      cursors.forEach(function (c) {
        var on = x !== null;
        c.line.style.display = on ? "" : "none";
        c.label.style.display = on ? "" : "none";
        if (!on) return;
        var t = (x - LEFT) / (WIDTH - LEFT - RIGHT) * duration;
        c.line.setAttribute("x1", x.toFixed(1));
        c.line.setAttribute("x2", x.toFixed(1));
        c.label.setAttribute("x", (x + 4).toFixed(1));
        c.label.textContent = "t = " + t.toFixed(1) + " s";
      });
    };
    plots.forEach(function (svg) {
      svg.addEventListener("mousemove", function (ev) {
        var r = svg.getBoundingClientRect();
        var x = (ev.clientX - r.left) * svg.viewBox.baseVal.width / r.width;
        show(x >= LEFT && x <= WIDTH - RIGHT ? x : null);
      });
      svg.addEventListener("mouseleave", function () { show(null); });
    });
  }

  // Sortable tables (matrix page): click a header to sort by that column.
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.querySelectorAll("th"), function (th, col) {
      th.classList.add("sortable");
      th.addEventListener("click", function () {
        var tbody = table.tBodies[0];
        var rows = Array.prototype.slice.call(tbody.rows);
        var dir = th.getAttribute("data-dir") === "asc" ? -1 : 1;
        th.setAttribute("data-dir", dir === 1 ? "asc" : "desc");
        rows.sort(function (a, b) {
          var x = a.cells[col].getAttribute("data-sort") || a.cells[col].textContent;
          var y = b.cells[col].getAttribute("data-sort") || b.cells[col].textContent;
          var nx = parseFloat(x), ny = parseFloat(y);
          if (!isNaN(nx) && !isNaN(ny)) return (nx - ny) * dir;
          return x.localeCompare(y) * dir;
        });
        rows.forEach(function (r) { tbody.appendChild(r); });
      });
    });
  });
})();

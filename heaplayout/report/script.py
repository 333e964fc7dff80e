"""The page's only script: it draws the heatmaps from the grid the report embeds (JSON in a
<script type="application/json"> element), then writes on each canvas how many pixels it
painted (data-painted), so that a headless browser's DOM dump shows that drawing happened."""

JS = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("heatmap-data").textContent);
  var STOPS = [[255, 245, 190], [254, 178, 76], [240, 59, 32], [128, 0, 38], [40, 0, 60]];
  function colour(x) {  // x in (0, 1]: light yellow to dark purple
    var p = Math.min(STOPS.length - 1.0001, x * (STOPS.length - 1)), i = Math.floor(p), f = p - i;
    var a = STOPS[i], b = STOPS[i + 1];
    return "rgb(" + [0, 1, 2].map(function (k) { return Math.round(a[k] + (b[k] - a[k]) * f); }).join(",") + ")";
  }
  function size(bytes) {
    if (bytes >= 1048576) return (bytes / 1048576).toFixed(1) + " MiB";
    if (bytes >= 1024) return (bytes / 1024).toFixed(0) + " KiB";
    return bytes + " B";
  }
  var logMax = Math.log(1 + data.max);
  data.maps.forEach(function (m) {
    var c = document.getElementById(m.canvas);
    if (!c) return;
    var g = c.getContext("2d");
    var L = data.left, B = data.bottom, W = c.width - L, H = c.height - B;
    var cw = W / m.time_bins, ch = H / m.address_bins;
    g.fillStyle = "#fff";
    g.fillRect(0, 0, c.width, c.height);
    var cells = m.cells;
    for (var k = 0; k < cells.length; k += 3) {
      g.fillStyle = colour(Math.log(1 + cells[k + 2]) / logMax);
      // low addresses at the bottom, as in PreFix's figure 9
      g.fillRect(L + cells[k] * cw, H - (cells[k + 1] + 1) * ch, Math.ceil(cw), Math.ceil(ch));
    }
    // count before the axes are drawn: only the cells can have painted the plot area
    var img = g.getImageData(L, 0, W, H).data, painted = 0;
    for (var p = 0; p < img.length; p += 4) {
      if (img[p] !== 255 || img[p + 1] !== 255 || img[p + 2] !== 255) painted++;
    }
    c.setAttribute("data-painted", String(painted));
    c.setAttribute("data-cells", String(cells.length / 3));
    // axes: address bands (kinds of memory, pools) on the left, time below
    g.strokeStyle = "#888"; g.fillStyle = "#333"; g.font = "11px sans-serif"; g.lineWidth = 1;
    g.strokeRect(L + 0.5, 0.5, W - 1, H - 1);
    m.bands.forEach(function (b, i) {
      var y0 = H - b[1] / m.extent * H, y1 = H - b[2] / m.extent * H;
      g.strokeStyle = "#9ab"; g.beginPath(); g.moveTo(L - 6, y1 + 0.5); g.lineTo(L + W, y1 + 0.5); g.stroke();
      if (y0 - y1 >= 13 && (y0 + y1) / 2 > 22) {  // room for it, and clear of the extent label
        g.fillText(b[0].slice(0, 17), 2, (y0 + y1) / 2 + 4);
      }
    });
    g.fillText("0", L - 12, H);
    g.fillText(size(m.extent), 2, 10);
    g.fillText("start", L, H + 14);
    g.fillText("references in program order \u2192", L + W / 2 - 80, H + 14);
    g.fillText("end", L + W - 22, H + 14);
    // hover: what a cell holds
    var counts = {};
    for (var q = 0; q < cells.length; q += 3) counts[cells[q] * m.address_bins + cells[q + 1]] = cells[q + 2];
    var tip = document.getElementById(m.canvas + "-tip");
    c.addEventListener("mousemove", function (ev) {
      var r = c.getBoundingClientRect();
      // the content box: the border is outside the canvas's pixels
      var x = (ev.clientX - r.left - c.clientLeft) * c.width / c.clientWidth - L;
      var y = (ev.clientY - r.top - c.clientTop) * c.height / c.clientHeight;
      if (!tip || x < 0 || x >= W || y < 0 || y >= H) { if (tip) tip.textContent = "\u00a0"; return; }
      var t = Math.floor(x / cw), a = m.address_bins - 1 - Math.floor(y / ch);
      var lo = a * m.extent / m.address_bins, hi = (a + 1) * m.extent / m.address_bins, band = "";
      m.bands.forEach(function (b) { if (b[1] <= lo && lo < b[2]) band = b[0]; });
      tip.textContent = "references " + Math.floor(t * m.references / m.time_bins).toLocaleString() + "\u2013" +
        Math.floor((t + 1) * m.references / m.time_bins).toLocaleString() + ", addresses " + size(Math.floor(lo)) +
        "\u2013" + size(Math.floor(hi)) + (band ? " (" + band + ")" : "") + ": " + (counts[t * m.address_bins + a] || 0) +
        " references";
    });
  });
  document.body.setAttribute("data-heatmaps-drawn", String(data.maps.length));
})();
"""

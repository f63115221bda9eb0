// The page's last script: draws every chart of #report-data (the JSON that
// lab/report/report.cpp writes, one entry per suite) with Chart.js, then records on <body>
// what it drew (data-charts-rendered, data-points-plotted; lab/report/report.hpp), where a
// headless browser can read it (tests/lab/report_browser_test.sh).
(function () {
  var body = document.body;
  var data = JSON.parse(document.getElementById('report-data').textContent);
  body.setAttribute('data-charts-expected', String(data.charts.length));
  if (typeof Chart !== 'function') throw new Error('contend report: Chart.js did not load');
  function fmt(v) {
    if (v === null || v === undefined || !isFinite(v)) return 'n/a';
    var a = Math.abs(v);
    return a < 10 ? v.toFixed(3) : a < 1000 ? v.toFixed(1) : v.toFixed(0);
  }
  // Log-axis labels at 1, 2 and 5 times a power of ten only: Chart.js labels every tick.
  function decade_step(v) {
    var m = v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9));
    return Math.abs(m - 1) < 1e-6 || Math.abs(m - 2) < 1e-6 || Math.abs(m - 5) < 1e-6;
  }
  function fmt_axis(v) { return v >= 1 ? v.toLocaleString('en-US') : String(Number(v.toPrecision(3))); }
  function painted(canvas) {
    var pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    for (var i = 3; i < pixels.length; i += 4) if (pixels[i] !== 0) return true;
    return false;
  }
  // Twenty lines must stay distinguishable: hues a golden angle (137.508 degrees) apart, so
  // that neighbours in the legend differ, alternating lightness, and four dash patterns.
  var dashes = [[], [6, 3], [2, 2], [10, 3, 2, 3]];
  var rendered = 0, points = 0;
  data.charts.forEach(function (c) {
    var canvas = document.getElementById(c.canvas);
    var datasets = c.series.map(function (s, i) {
      var color = 'hsl(' + ((i * 137.508) % 360).toFixed(1) + ', 70%, ' + (i % 2 ? 32 : 46) + '%)';
      s.y.forEach(function (v) { if (v !== null) points += 1; });
      return {
        label: s.label, data: s.y, p25: s.p25, p75: s.p75,
        borderColor: color, backgroundColor: color, borderDash: dashes[i % dashes.length],
        borderWidth: 2, pointRadius: 3, pointHoverRadius: 5, tension: 0, spanGaps: false
      };
    });
    new Chart(canvas, {
      type: 'line',
      data: { labels: c.labels, datasets: datasets },
      options: {
        // The first frame is the final one: the canvas is painted when new Chart() returns,
        // so painted() below can check it, and a headless browser's dump shows the result.
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        interaction: { mode: 'nearest', intersect: false },
        scales: {
          x: { type: 'category', title: { display: true, text: c.x_title } },
          y: {
            type: 'logarithmic',
            title: { display: true, text: 'median ns per operation (log scale)' },
            ticks: { callback: function (v) { return decade_step(v) ? fmt_axis(v) : ''; } }
          }
        },
        plugins: {
          title: { display: true, text: c.title },
          legend: { position: 'bottom', labels: { boxWidth: 28, boxHeight: 2 } },
          tooltip: {
            callbacks: {
              title: function (items) { return items.length ? c.x_title + ' ' + items[0].label : ''; },
              label: function (ctx) {
                var s = ctx.dataset, i = ctx.dataIndex;
                return s.label + ': ' + fmt(ctx.parsed.y) + ' ns/op (p25-p75 ' + fmt(s.p25[i]) + '-' + fmt(s.p75[i]) + ')';
              }
            }
          }
        }
      }
    });
    if (canvas.width > 0 && canvas.height > 0 && painted(canvas)) rendered += 1;
    else console.error('contend report: the chart of ' + c.suite + ' did not draw');
  });
  body.setAttribute('data-points-plotted', String(points));
  body.setAttribute('data-charts-rendered', String(rendered));
})();

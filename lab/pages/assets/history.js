// The last script of the pages of `contend history --html` and `contend compare --html`
// (lab/pages/html_page.cpp): draws every chart of #page-data with Chart.js, then records on
// <body> what it drew (data-charts-rendered, data-change-points-marked, data-runs-marked;
// lab/pages/html_page.hpp), where a headless browser can read it
// (tests/lab/compare_page_browser_test.sh). Names reach the page only as JSON and are drawn
// on canvases: this script creates no element from data.
(function () {
  var body = document.body;
  var data = JSON.parse(document.getElementById('page-data').textContent);
  body.setAttribute('data-charts-expected', String(data.charts.length));
  if (typeof Chart !== 'function') throw new Error('contend page: Chart.js did not load');
  var blue = '#0969da', orange = '#bc4c00', red = '#cf222e', grey = '#57606a', green = '#1a7f37';
  function fmt(v) {
    if (v === null || v === undefined || !isFinite(v)) return 'n/a';
    var a = Math.abs(v);
    return a < 10 ? v.toFixed(3) : a < 1000 ? v.toFixed(1) : v.toFixed(0);
  }
  function painted(canvas) {
    var pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    for (var i = 3; i < pixels.length; i += 4) if (pixels[i] !== 0) return true;
    return false;
  }
  function inside(area, x) { return isFinite(x) && x >= area.left - 0.5 && x <= area.right + 0.5; }
  function vline(ctx, area, x, color, dash, width) {
    ctx.save();
    ctx.strokeStyle = color;
    ctx.lineWidth = width;
    ctx.setLineDash(dash);
    ctx.beginPath();
    ctx.moveTo(x, area.top);
    ctx.lineTo(x, area.bottom);
    ctx.stroke();
    ctx.restore();
  }
  // The y range must hold the p25-p75 bars too: Chart.js scales to the datasets only.
  function range(c) {
    var lo = Infinity, hi = -Infinity;
    [c.median, c.p25, c.p75].forEach(function (a) {
      a.forEach(function (v) { if (v !== null) { lo = Math.min(lo, v); hi = Math.max(hi, v); } });
    });
    var pad = (hi - lo) * 0.08 || hi * 0.05 || 1;
    return { min: Math.max(0, lo - pad), max: hi + pad };
  }

  // What a history chart draws over its datasets: the p25-p75 bars, the change points and
  // the marked runs. Counted on every draw (a resize draws again), never summed across draws.
  function history_overlay(c) {
    return {
      id: 'contendHistoryOverlay',
      afterDatasetsDraw: function (chart) {
        var ctx = chart.ctx, area = chart.chartArea, x = chart.scales.x, y = chart.scales.y;
        ctx.save();
        ctx.strokeStyle = blue;
        ctx.lineWidth = 1.5;
        c.median.forEach(function (m, i) {
          if (c.p25[i] === null || c.p75[i] === null) return;
          var px = x.getPixelForValue(i), top = y.getPixelForValue(c.p75[i]), bottom = y.getPixelForValue(c.p25[i]);
          ctx.beginPath();
          ctx.moveTo(px, top); ctx.lineTo(px, bottom);
          ctx.moveTo(px - 4, top); ctx.lineTo(px + 4, top);
          ctx.moveTo(px - 4, bottom); ctx.lineTo(px + 4, bottom);
          ctx.stroke();
        });
        ctx.restore();
        var changes = 0, marks = 0;
        c.changes.forEach(function (p) {
          var px = (x.getPixelForValue(p.index - 1) + x.getPixelForValue(p.index)) / 2;
          if (!inside(area, px)) return;
          vline(ctx, area, px, red, [6, 4], 2);
          ctx.save();
          ctx.fillStyle = red;
          ctx.font = 'bold 12px system-ui, sans-serif';
          ctx.textAlign = 'left';
          ctx.fillText(p.text, px + 4, area.top + 12);
          ctx.restore();
          changes += 1;
        });
        c.marks.forEach(function (m) {
          var px = x.getPixelForValue(m.index);
          if (!inside(area, px)) return;
          vline(ctx, area, px, green, [2, 3], 1.5);
          ctx.save();
          ctx.fillStyle = green;
          ctx.font = 'bold 12px system-ui, sans-serif';
          // A ring on the run's point, its name beside the line on the side with room (the
          // first and last runs sit on the edges), below the ring in the upper half of the
          // plot and above it in the lower half.
          var py = y.getPixelForValue(c.median[m.index]);
          var right = px > (area.left + area.right) / 2;
          ctx.textAlign = right ? 'right' : 'left';
          ctx.fillText(m.text, px + (right ? -6 : 6), py < (area.top + area.bottom) / 2 ? py + 22 : py - 12);
          ctx.beginPath();
          ctx.strokeStyle = green;
          ctx.lineWidth = 2;
          ctx.arc(px, py, 7, 0, 2 * Math.PI);
          ctx.stroke();
          ctx.restore();
          marks += 1;
        });
        chart.$contend = { changes: changes, marks: marks };
      }
    };
  }

  function history_config(c) {
    var datasets = [{
      label: 'median ns/op', data: c.median, borderColor: blue, backgroundColor: blue,
      borderWidth: 2, pointRadius: 3, pointHoverRadius: 5, tension: 0, order: 1
    }];
    if (c.steps) {
      datasets.push({
        label: 'segment mean', data: c.steps, stepped: 'middle', borderColor: orange, backgroundColor: orange,
        borderWidth: 2, pointRadius: 0, pointHoverRadius: 0, order: 2
      });
    }
    var r = range(c);
    return {
      type: 'line',
      data: { labels: c.labels, datasets: datasets },
      options: {
        // The first frame is the final one: the canvas is painted when new Chart() returns.
        animation: false, responsive: true, maintainAspectRatio: false,
        interaction: { mode: 'index', intersect: false },
        scales: {
          x: { type: 'category', title: { display: true, text: 'run (label, or run <id>), oldest first' } },
          y: { type: 'linear', suggestedMin: r.min, suggestedMax: r.max,
               title: { display: true, text: 'median ns per operation' } }
        },
        plugins: {
          title: { display: true, text: c.title },
          legend: { position: 'bottom', labels: { boxWidth: 28, boxHeight: 2 } },
          tooltip: {
            callbacks: {
              label: function (ctx) {
                var i = ctx.dataIndex;
                if (ctx.datasetIndex > 0) return 'segment mean: ' + fmt(ctx.parsed.y) + ' ns/op';
                return 'median ' + fmt(ctx.parsed.y) + ' ns/op (p25-p75 ' + fmt(c.p25[i]) + '-' + fmt(c.p75[i]) + ')';
              }
            }
          }
        }
      },
      plugins: [history_overlay(c)]
    };
  }

  // Two columns of points, x 0 the baseline and x 1 the test, each repetition moved sideways
  // by a fixed offset so that equal times stay visible; a bar at each side's median.
  function strip_config(c) {
    function points(values, at) {
      return values.map(function (v, i) { return { x: at + ((i % 7) - 3) * 0.05, y: v }; });
    }
    function bar(at, v) { return [{ x: at - 0.3, y: v }, { x: at + 0.3, y: v }]; }
    return {
      type: 'scatter',
      data: {
        datasets: [
          { label: 'baseline', data: points(c.base, 0), borderColor: grey, backgroundColor: grey, pointRadius: 3 },
          { label: 'test', data: points(c.test, 1), borderColor: blue, backgroundColor: blue, pointRadius: 3 },
          { label: 'medians', type: 'line', data: bar(0, c.base_median), borderColor: orange, borderWidth: 2,
            pointRadius: 0, showLine: true },
          { label: 'test median', type: 'line', data: bar(1, c.test_median), borderColor: orange, borderWidth: 2,
            pointRadius: 0, showLine: true }
        ]
      },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        scales: {
          x: { type: 'linear', min: -0.6, max: 1.6,
               ticks: { stepSize: 1, callback: function (v) { return v === 0 ? 'baseline' : v === 1 ? 'test' : ''; } },
               grid: { display: false } },
          y: { type: 'linear', title: { display: true, text: 'ns per operation' } }
        },
        plugins: {
          title: { display: true, text: c.title },
          legend: { display: false },
          tooltip: { callbacks: { label: function (ctx) { return fmt(ctx.parsed.y) + ' ns/op'; } } }
        }
      }
    };
  }

  var rendered = 0, changes = 0, marks = 0;
  data.charts.forEach(function (c) {
    var canvas = document.getElementById(c.canvas);
    var chart = new Chart(canvas, c.kind === 'strip' ? strip_config(c) : history_config(c));
    if (chart.$contend) {
      changes += chart.$contend.changes;
      marks += chart.$contend.marks;
    }
    if (canvas.width > 0 && canvas.height > 0 && painted(canvas)) rendered += 1;
    else console.error('contend page: the chart of ' + c.title + ' did not draw');
  });
  body.setAttribute('data-change-points-marked', String(changes));
  body.setAttribute('data-runs-marked', String(marks));
  body.setAttribute('data-charts-rendered', String(rendered));
})();

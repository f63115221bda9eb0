// The page's last script: draws the charts of every suite section from #report-data (the
// JSON that lab/pages/report.cpp writes, one entry per suite) with Chart.js, fills each
// section's controls (a baseline and a checkbox per contender), and records on <body> what it
// drew (lab/pages/report.hpp), where a headless browser can read it
// (tests/lab/report_browser_test.sh).
//
// Names in the data come from results files, which anyone can write: they reach the page only
// as text (textContent, new Option, setAttribute, Chart.js's canvas text), never as markup, and
// the address's fragment is only ever compared with them, never run or parsed as markup.
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
  // A log axis over less than a decade has few ticks, maybe no 1-2-5 one but 1: label them
  // all; over more, the 1-2-5 ones, or the labels overlap.
  function log_ticks(suffix) {
    return function (v, i, ticks) {
      return ticks.length <= 10 || decade_step(v) ? fmt_axis(v) + suffix : '';
    };
  }
  function painted(canvas) {
    var pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    for (var i = 3; i < pixels.length; i += 4) if (pixels[i] !== 0) return true;
    return false;
  }
  function each(list, f) { for (var i = 0; i < list.length; i += 1) f(list[i], i); }
  function contains(list, v) { return list.indexOf(v) >= 0; }

  // One look per contender on the whole page, so that a contender looks the same in every
  // section and its checkbox: in order of first appearance, twelve colours picked to differ in
  // hue or lightness from each other, then the same twelve dashed, and so on. (Hues a golden
  // angle apart, tried first, gave ttas_lock and contend_mutex two near greens among the
  // counter suite's 24 contenders.) Within a suite whose contenders have variants (lines at
  // other parameters) the dash tells the variants apart instead.
  var palette = [
    'hsl(210, 75%, 42%)', 'hsl(25, 85%, 48%)', 'hsl(130, 60%, 35%)', 'hsl(285, 55%, 45%)',
    'hsl(0, 75%, 45%)', 'hsl(185, 80%, 32%)', 'hsl(45, 90%, 40%)', 'hsl(330, 70%, 50%)',
    'hsl(20, 45%, 30%)', 'hsl(240, 40%, 60%)', 'hsl(60, 70%, 30%)', 'hsl(200, 90%, 62%)'
  ];
  var dashes = [[], [6, 3], [2, 2], [10, 3, 2, 3]];
  var page_contenders = [];
  each(data.charts, function (c) {
    each(c.contenders, function (name) { if (!contains(page_contenders, name)) page_contenders.push(name); });
  });
  function colour(name) { return palette[page_contenders.indexOf(name) % palette.length]; }
  function own_dash(name) {
    return dashes[Math.floor(page_contenders.indexOf(name) / palette.length) % dashes.length];
  }

  // The address's fragment: baseline=NAME (empty: absolute ns/op) and show=NAME,NAME, each
  // name encoded as encodeURIComponent does (so a comma in a name is %2C). Anything else in
  // it, or a name that does not decode, is ignored.
  function decode(text) {
    try { return decodeURIComponent(text); } catch (e) { return null; }
  }
  function read_fragment() {
    var view = { baseline: null, show: null };
    each(location.hash.replace(/^#/, '').split('&'), function (pair) {
      var eq = pair.indexOf('=');
      if (eq < 0) return;
      var key = pair.slice(0, eq), value = pair.slice(eq + 1);
      if (key === 'baseline') view.baseline = decode(value);
      else if (key === 'show') view.show = value.split(',').map(decode).filter(function (n) { return n !== null; });
    });
    return view;
  }
  function fragment_of(section) {
    var shown = section.chart.contenders.filter(function (n) { return section.shown[n]; });
    var parts = ['baseline=' + encodeURIComponent(section.baseline)];
    if (shown.length < section.chart.contenders.length) parts.push('show=' + shown.map(encodeURIComponent).join(','));
    return parts.join('&');
  }
  // A section takes the fragment's baseline and contenders where it has them; the rest of
  // the view is its default (the baseline report.cpp chose, every contender shown). A list
  // of none of its contenders shows them all rather than an empty chart.
  function apply_view(section, view) {
    var c = section.chart;
    if (view.baseline === '' || (view.baseline !== null && contains(c.contenders, view.baseline))) {
      section.baseline = view.baseline;
    } else {
      section.baseline = c.default_baseline;
    }
    var listed = view.show === null ? [] : c.contenders.filter(function (n) { return contains(view.show, n); });
    each(c.contenders, function (n) { section.shown[n] = listed.length === 0 || contains(listed, n); });
  }

  // --- The datasets of a section's charts, for its view -------------------------------------

  // A contender whose checkbox the pointer is over stands out; the others fade.
  function line(s, values, section) {
    var faded = section.highlight !== null && section.highlight !== s.contender;
    var color = faded ? colour(s.contender).replace('hsl(', 'hsla(').replace('%)', '%, 0.15)') : colour(s.contender);
    var dash = section.has_variants ? dashes[section.variants.indexOf(s.variant) % dashes.length] : own_dash(s.contender);
    return {
      label: s.label, data: values, series: s,
      borderColor: color, backgroundColor: color, borderDash: dash,
      borderWidth: section.highlight === s.contender ? 3.5 : 2, pointRadius: 3, pointHoverRadius: 5, tension: 0,
      spanGaps: false, order: section.highlight === s.contender ? -1 : 0
    };
  }
  function visible(section) {
    return section.chart.series.filter(function (s) { return section.shown[s.contender]; });
  }
  function count(values) {
    var n = 0;
    each(values, function (v) { if (v !== null) n += 1; });
    return n;
  }
  // Absolute: each shown line's medians. Against a baseline: each shown contender's median
  // over the baseline's at the same x and with the same other parameters; a gap where either
  // is missing. The baseline itself is the reference line at 1.
  function main_datasets(section) {
    var c = section.chart, sets = [];
    section.points = 0;
    section.ratio_points = 0;
    if (section.baseline === '') {
      each(visible(section), function (s) {
        sets.push(line(s, s.y, section));
        section.points += count(s.y);
      });
      return sets;
    }
    var base = {};
    each(c.series, function (s) { if (s.contender === section.baseline) base[s.variant] = s; });
    each(visible(section), function (s) {
      if (s.contender === section.baseline) return;
      var b = base[s.variant];
      var ratio = s.y.map(function (v, i) { return b && v !== null && b.y[i] !== null ? v / b.y[i] : null; });
      var set = line(s, ratio, section);
      set.base = b;
      sets.push(set);
      section.ratio_points += count(ratio);
    });
    section.points = section.ratio_points;
    sets.push({
      label: '= ' + section.baseline, data: c.labels.map(function () { return 1; }), reference: true,
      borderColor: '#57606a', backgroundColor: '#57606a', borderDash: [4, 4], borderWidth: 1.5,
      pointRadius: 0, pointHoverRadius: 0, tension: 0
    });
    return sets;
  }
  function side_datasets(section, field) {
    var sets = [];
    each(visible(section), function (s) { if (count(s[field]) > 0) sets.push(line(s, s[field], section)); });
    return sets;
  }

  function ratio_text(r, base) {
    if (Math.abs(r - 1) < 0.005) return '1.00x, as fast as ' + base;
    return r > 1 ? r.toFixed(2) + 'x slower than ' + base : r.toFixed(2) + 'x (' + (1 / r).toFixed(2) + 'x faster than ' + base + ')';
  }
  function options(section, y, tooltip_label, legend) {
    var c = section.chart;
    return {
      // The first frame is the final one: the canvas is painted when new Chart() or update()
      // returns, so painted() below can check it, and a headless browser's dump shows it.
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      interaction: { mode: 'nearest', intersect: false },
      // offset: the first and last points off the chart's edges, where a few x values put them.
      scales: { x: { type: 'category', offset: true, title: { display: true, text: c.x_title } }, y: y },
      plugins: {
        title: { display: true, text: '' },
        // The checkboxes are the legend; a chart keeps its own only to tell variants apart.
        legend: { display: legend, position: 'bottom', labels: { boxWidth: 28, boxHeight: 2 } },
        tooltip: {
          filter: function (item) { return !item.dataset.reference; },
          callbacks: {
            title: function (items) { return items.length ? c.x_title + ' ' + items[0].label : ''; },
            label: tooltip_label
          }
        }
      }
    };
  }
  function main_options(section) {
    // The grid line at 1 is the baseline's: drawn darker, so that faster and slower read at a glance.
    var grid = {
      color: function (ctx) {
        var at_one = section.baseline !== '' && ctx.tick && Math.abs(ctx.tick.value - 1) < 1e-9;
        return at_one ? '#57606a' : 'rgba(0, 0, 0, 0.1)';
      }
    };
    return options(section, { type: 'logarithmic', title: { display: true }, ticks: {}, grid: grid }, function (ctx) {
      var s = ctx.dataset.series, i = ctx.dataIndex;
      if (section.baseline === '')
        return s.label + ': ' + fmt(s.y[i]) + ' ns/op (p25-p75 ' + fmt(s.p25[i]) + '-' + fmt(s.p75[i]) + ')';
      return s.label + ': ' + ratio_text(ctx.parsed.y, section.baseline) + '; ' + fmt(s.y[i]) + ' vs ' +
        fmt(ctx.dataset.base.y[i]) + ' ns/op';
    }, section.has_variants);
  }
  // What the main chart shows depends on the baseline: its titles and tick labels follow.
  function label_main(section) {
    var o = section.main.options, c = section.chart;
    if (section.baseline === '') {
      o.plugins.title.text = c.title + ': median ns per operation';
      o.scales.y.title.text = 'median ns per operation (log scale)';
      o.scales.y.ticks.callback = log_ticks('');
    } else {
      o.plugins.title.text = c.title + ': median time relative to ' + section.baseline + ' (below 1: faster)';
      o.scales.y.title.text = 'median ns/op over ' + section.baseline + "'s (log scale)";
      o.scales.y.ticks.callback = log_ticks('x');
    }
  }

  // --- The controls -------------------------------------------------------------------------

  function element(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  // A sample of the contender's line, as the charts draw it.
  function swatch(name, section) {
    var canvas = element('canvas', 'swatch');
    canvas.width = 28;
    canvas.height = 10;
    var g = canvas.getContext('2d');
    g.strokeStyle = colour(name);
    g.lineWidth = 3;
    g.setLineDash(section.has_variants ? [] : own_dash(name));
    g.beginPath();
    g.moveTo(0, 5);
    g.lineTo(28, 5);
    g.stroke();
    return canvas;
  }
  function build_controls(section, changed) {
    var box = document.getElementById(section.chart.canvas + '-controls'), c = section.chart;
    var pick = element('label', 'baseline', 'baseline ');
    var select = element('select');
    // Option values are indices, not names: any text may be a contender's name.
    select.appendChild(new Option('none: absolute ns/op', 'absolute'));
    each(c.contenders, function (name, i) { select.appendChild(new Option(name, String(i))); });
    select.addEventListener('change', function () {
      section.baseline = select.value === 'absolute' ? '' : c.contenders[Number(select.value)];
      changed(section);
    });
    pick.appendChild(select);
    box.appendChild(pick);
    var toggles = element('div', 'toggles');
    var boxes = {};
    function set_all(on) {
      each(c.contenders, function (name) { section.shown[name] = on; });
      changed(section);
    }
    var all = element('button', '', 'all'), none = element('button', '', 'none');
    all.type = none.type = 'button';
    all.addEventListener('click', function () { set_all(true); });
    none.addEventListener('click', function () { set_all(false); });
    toggles.appendChild(all);
    toggles.appendChild(none);
    each(c.contenders, function (name) {
      var label = element('label', 'toggle');
      var check = element('input');
      check.type = 'checkbox';
      check.addEventListener('change', function () {
        section.shown[name] = check.checked;
        changed(section);
      });
      boxes[name] = check;
      label.appendChild(check);
      label.appendChild(swatch(name, section));
      label.appendChild(element('span', '', name));
      label.addEventListener('mouseenter', function () {
        section.highlight = name;
        draw(section);
      });
      label.addEventListener('mouseleave', function () {
        section.highlight = null;
        draw(section);
      });
      toggles.appendChild(label);
    });
    box.appendChild(toggles);
    // The controls show the section's view, however it came about.
    section.show_view = function () {
      select.value = section.baseline === '' ? 'absolute' : String(c.contenders.indexOf(section.baseline));
      each(c.contenders, function (name) { boxes[name].checked = section.shown[name]; });
    };
  }

  // --- Drawing and recording ----------------------------------------------------------------

  var sections = [];
  function draw(section) {
    label_main(section);
    section.main.data.datasets = main_datasets(section);
    section.main.update();
    section.cpu.data.datasets = side_datasets(section, 'cpu');
    section.cpu.update();
    if (section.share) {
      section.share.data.datasets = side_datasets(section, 'min_share');
      section.share.update();
    }
    section.show_view();
  }
  // What the headless browser reads: the figures of the views as drawn now.
  function record() {
    var points = 0, ratio_points = 0;
    each(sections, function (s) {
      points += s.points;
      ratio_points += s.ratio_points;
    });
    body.setAttribute('data-points-plotted', String(points));
    body.setAttribute('data-ratio-points-plotted', String(ratio_points));
    if (sections.length) {
      var first = sections[0];
      body.setAttribute('data-baseline', first.baseline);
      body.setAttribute('data-shown', first.chart.contenders.filter(function (n) { return first.shown[n]; })
        .map(encodeURIComponent).join(','));
    }
  }
  // A change made on the page is kept in the address, so that the link reopens this view.
  // A browser that refuses to rewrite the address (some do for local files) still shows it.
  function changed(section) {
    draw(section);
    record();
    try {
      history.replaceState(null, '', '#' + fragment_of(section));
    } catch (e) { /* the view stands; only the link does not follow it */ }
  }

  var view = read_fragment();
  var rendered = 0, side_rendered = 0;
  each(data.charts, function (c) {
    var variants = [];
    each(c.series, function (s) { if (!contains(variants, s.variant)) variants.push(s.variant); });
    var section = {
      chart: c, baseline: '', shown: {}, highlight: null, points: 0, ratio_points: 0,
      variants: variants, has_variants: variants.length > 1
    };
    apply_view(section, view);
    build_controls(section, changed);
    var canvas = document.getElementById(c.canvas);
    section.main = new Chart(canvas, { type: 'line', data: { labels: c.labels, datasets: [] }, options: main_options(section) });
    var cpu_canvas = document.getElementById(c.cpu_canvas);
    var cpu_options = options(section, {
      type: 'logarithmic', title: { display: true, text: 'CPU ns/op, all workers (log)' }, ticks: { callback: log_ticks('') }
    }, function (ctx) { return ctx.dataset.series.label + ': ' + fmt(ctx.parsed.y) + ' CPU ns/op'; }, false);
    cpu_options.plugins.title.text = 'CPU time per operation';
    section.cpu = new Chart(cpu_canvas, { type: 'line', data: { labels: c.labels, datasets: [] }, options: cpu_options });
    var share_canvas = c.share_canvas === null ? null : document.getElementById(c.share_canvas);
    if (share_canvas) {
      var share_options = options(section, {
        type: 'linear', min: 0, max: 1, title: { display: true, text: 'share of the mean (1: fair)' }
      }, function (ctx) {
        return ctx.dataset.series.label + ': the least-served worker made ' + ctx.parsed.y.toFixed(2) + ' of the mean progress';
      }, false);
      share_options.plugins.title.text = "Least-served worker's share";
      section.share = new Chart(share_canvas, { type: 'line', data: { labels: c.labels, datasets: [] }, options: share_options });
    }
    draw(section);
    sections.push(section);
    if (canvas.width > 0 && canvas.height > 0 && painted(canvas)) rendered += 1;
    else console.error('contend report: the chart of ' + c.suite + ' did not draw');
    each(share_canvas ? [cpu_canvas, share_canvas] : [cpu_canvas], function (side) {
      if (side.width > 0 && side.height > 0 && painted(side)) side_rendered += 1;
      else console.error('contend report: a side chart of ' + c.suite + ' did not draw');
    });
  });
  // An edited address applies to every section, as a link does.
  window.addEventListener('hashchange', function () {
    var edited = read_fragment();
    each(sections, function (s) {
      apply_view(s, edited);
      draw(s);
    });
    record();
  });
  // A profiled program's locks: each one's contended waits by duration, as bars.
  var lock_rendered = 0;
  each(data.lock_charts || [], function (h) {
    var canvas = document.getElementById(h.canvas);
    new Chart(canvas, {
      type: 'bar',
      data: { labels: h.labels, datasets: [{ label: 'contended waits', data: h.counts, backgroundColor: palette[0] }] },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        plugins: {
          legend: { display: false },
          title: { display: true, text: 'Contended waits by duration' },
          tooltip: { callbacks: { label: function (ctx) { return ctx.parsed.y.toLocaleString('en-US') + ' waits'; } } }
        },
        scales: {
          x: { title: { display: true, text: 'wait (from)' } },
          y: { type: 'linear', beginAtZero: true, title: { display: true, text: 'waits' } }
        }
      }
    });
    if (canvas.width > 0 && canvas.height > 0 && painted(canvas)) lock_rendered += 1;
    else console.error('contend report: the wait chart of ' + h.title + ' did not draw');
  });
  record();
  body.setAttribute('data-charts-rendered', String(rendered));
  body.setAttribute('data-side-charts-rendered', String(side_rendered));
  body.setAttribute('data-lock-charts-rendered', String(lock_rendered));
})();

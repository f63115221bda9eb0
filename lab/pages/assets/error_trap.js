// The page's first script (lab/pages/report.cpp puts it right after <body>): installed
// before any other, so that an error anywhere, the charting library's own included, is
// counted in <body data-errors>, where a headless browser can read it
// (tests/lab/report_browser_test.sh). console.error counts too: the page writes to the
// console only when something went wrong.
(function () {
  var body = document.body, errors = 0;
  function count() { errors += 1; body.setAttribute('data-errors', String(errors)); }
  window.addEventListener('error', count);
  window.addEventListener('unhandledrejection', count);
  var consoleError = console.error;
  console.error = function () { count(); return consoleError.apply(console, arguments); };
})();

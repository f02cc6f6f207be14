// One polling loop for the pages that follow a job's JSON (static/check.js: a health check;
// static/challenge.js: a challenge): ask every second while the tab is seen, every five
// seconds while it is hidden, and back off (doubling, up to 15 s) while the server fails,
// until the answer says it is done.  Answers are handed over as data, never as HTML.
"use strict";
window.arenaPoll = function (url, show, done, firstDelay) {
  var failing = 1000;
  function poll() {
    fetch(url, { cache: "no-store", credentials: "same-origin" })
      .then(function (resp) {
        if (!resp.ok) { throw new Error("HTTP " + resp.status); }
        return resp.json();
      })
      .then(function (answer) {
        failing = 1000;
        show(answer);
        if (!done(answer)) { setTimeout(poll, document.hidden ? 5000 : 1000); }
      })
      .catch(function () {
        failing = Math.min(failing * 2, 15000);
        setTimeout(poll, failing);
      });
  }
  setTimeout(poll, firstDelay || 0);
};

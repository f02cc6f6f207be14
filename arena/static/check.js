// Health-check progress (submit page, bot page): poll the check's JSON until it is done and
// show its state.  Only textContent and class names are set; the texts come from the server
// as data (a failure reason is the bot author's own bot talking, and is never parsed as HTML).
"use strict";
(function () {
  var box = document.getElementById("check-progress");
  if (!box) { return; }
  var url = box.getAttribute("data-check-url");
  var title = box.querySelector("[data-check-title]");
  var text = box.querySelector("[data-check-text]");
  var TITLES = { queued: "Health check queued", running: "Health check running",
                 passed: "Health check passed", failed: "Health check failed" };

  function describe(c) {
    if (c.state === "queued") { return "waiting for a worker; the arena will call GET /, POST /start and one POST /move on the bot's URL, as in a real match."; }
    if (c.state === "running") { return "the arena is calling the bot's URL now."; }
    if (c.state === "passed") {
      var done = c.purpose === "url_change" ? "the new URL is the bot's new version." : "the bot plays in the ladder.";
      return c.move_ms === null ? done : done + " It answered a move in " + Math.round(c.move_ms) + " ms.";
    }
    return c.reason + (c.purpose === "url_change" ? " (the bot keeps its previous URL)" : "");
  }

  function show(c) {
    box.setAttribute("data-state", c.state);
    box.className = "alert " + (c.state === "passed" ? "success" : c.state === "failed" ? "error" : "info");
    title.textContent = TITLES[c.state] || c.state;
    text.textContent = " " + describe(c);
  }

  var state = box.getAttribute("data-state");
  if (state === "queued" || state === "running") {
    window.arenaPoll(url, show, function (c) { return c.done; }, 500);
  }
})();

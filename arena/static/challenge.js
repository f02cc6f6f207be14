// A challenge's page: poll its JSON, show its place in line, and once its match exists link
// to it (the live viewer while it plays).  Only textContent and attributes are set.
"use strict";
(function () {
  var box = document.getElementById("challenge-status");
  if (!box) { return; }
  var url = box.getAttribute("data-challenge-url");
  var title = box.querySelector("[data-challenge-title]");
  var text = box.querySelector("[data-challenge-text]");
  var matchBox = box.querySelector("[data-challenge-match]");
  var link = matchBox.querySelector("a");
  var TITLES = { waiting: "Waiting for a challenge slot", queued: "Waiting for a worker",
                 running: "Playing now", finished: "Played", refused: "Refused",
                 failed: "Failed" };

  function describe(c) {
    if (c.state === "refused") { return c.reason; }
    if (c.queue_position) {
      var more = c.state === "waiting" ? " (challenge matches use " + c.slots.used + " of " +
        c.slots.of + " slots; the rest play the ladder)" : "";
      return "Place in line: " + c.queue_position + more + ".";
    }
    return "";
  }

  function show(c) {
    box.setAttribute("data-state", c.state);
    title.textContent = TITLES[c.state] || c.state;
    text.textContent = describe(c);
    if (c.match_url) {
      link.setAttribute("href", c.match_url);
      link.textContent = c.state === "running" ? "Watch it live" : "See the match";
      matchBox.hidden = false;
    }
  }

  function poll() {
    fetch(url, { cache: "no-store", credentials: "same-origin" })
      .then(function (resp) {
        if (!resp.ok) { throw new Error("HTTP " + resp.status); }
        return resp.json();
      })
      .then(function (c) {
        show(c);
        if (c.state !== "finished" && c.state !== "failed" && c.state !== "refused") {
          setTimeout(poll, document.hidden ? 5000 : 1000);
        }
      })
      .catch(function () { setTimeout(poll, 5000); });
  }
  if (["finished", "failed", "refused"].indexOf(box.getAttribute("data-state")) < 0) { poll(); }
})();

// A challenge's page: poll its JSON, show its place in line, and once its match exists link
// to it (the live viewer while it plays).  Only textContent and attributes are set.
"use strict";
(function () {
  var box = document.getElementById("challenge-status");
  if (!box) { return; }
  var url = box.getAttribute("data-challenge-url");
  var title = box.querySelector("[data-challenge-title]");
  var line = box.querySelector("[data-challenge-line]");
  var place = line.querySelector("strong");
  var slots = line.querySelector("[data-challenge-slots]");
  var reason = box.querySelector("[data-challenge-reason]");
  var matchBox = box.querySelector("[data-challenge-match]");
  var link = matchBox.querySelector("a");
  var TITLES = { waiting: "Waiting for a challenge slot", queued: "Waiting for a worker",
                 running: "Playing now", finished: "Played", refused: "Refused",
                 failed: "Failed" };

  function show(c) {
    box.setAttribute("data-state", c.state);
    title.textContent = TITLES[c.state] || c.state;
    line.hidden = !c.queue_position;
    place.textContent = c.queue_position ? String(c.queue_position) : "";
    slots.textContent = c.state === "waiting" ? " (challenge matches use " + c.slots.used +
      " of " + c.slots.of + " slots; the rest play the ladder)" : "";
    reason.hidden = c.state !== "refused";
    reason.textContent = c.reason;
    if (c.match_url) {
      link.setAttribute("href", c.match_url);
      link.textContent = c.state === "running" ? "Watch it live" : "See the match";
      matchBox.hidden = false;
    }
  }

  var FINAL = ["finished", "failed", "refused"];
  function done(c) { return FINAL.indexOf(c.state) >= 0; }
  if (FINAL.indexOf(box.getAttribute("data-state")) < 0) { window.arenaPoll(url, show, done); }
})();

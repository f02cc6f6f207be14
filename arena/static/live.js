// Live tournament page: poll the server-rendered fragment with If-None-Match every few
// seconds and swap it in when it changed (the server answers 304 while nothing did).  The
// fragment is HTML rendered and escaped by the server's templates; no script runs from it.
"use strict";
(function () {
  var box = document.getElementById("live");
  if (!box) { return; }
  var url = box.getAttribute("data-live-url");
  var tag = box.getAttribute("data-tag");
  var state = box.getAttribute("data-state");
  var delay = 1500;
  var stopped = false;

  function schedule() {
    if (!stopped) { setTimeout(poll, document.hidden ? 5000 : delay); }
  }

  function poll() {
    var headers = {};
    if (tag) { headers["If-None-Match"] = tag; }
    fetch(url, { headers: headers, cache: "no-store", credentials: "same-origin" })
      .then(function (resp) {
        if (resp.status === 304) { return null; }
        if (!resp.ok) { throw new Error("HTTP " + resp.status); }
        tag = resp.headers.get("ETag") || tag;
        state = resp.headers.get("X-Tournament-State") || state;
        return resp.text();
      })
      .then(function (html) {
        if (html !== null) {
          box.innerHTML = html;
          box.setAttribute("data-tag", tag);
          box.setAttribute("data-state", state);
          box.dispatchEvent(new CustomEvent("live-update"));
        }
        if (state === "finished" || state === "cancelled") { stopped = true; }
        schedule();
      })
      .catch(function () { delay = Math.min(delay * 2, 15000); schedule(); });
  }

  if (state !== "finished" && state !== "cancelled") { schedule(); }
})();

// Live tournament page: the live relay pushes the server-rendered fragment whenever it
// changes (server-sent events, data-push-url); without the relay (or a browser without
// EventSource) the page polls the fragment with If-None-Match every few seconds and swaps it
// in when it changed (the server answers 304 while nothing did).  The fragment is HTML
// rendered and escaped by the server's templates; no script runs from it.
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

  function swap(html, newTag, newState) {
    box.innerHTML = html;
    tag = newTag || tag;
    state = newState || state;
    box.setAttribute("data-tag", tag);
    box.setAttribute("data-state", state);
    box.dispatchEvent(new CustomEvent("live-update"));
  }

  function push(pushUrl) {
    var es = new EventSource(pushUrl + "?tag=" + encodeURIComponent(tag || "")), opened = false;
    es.onopen = function () { opened = true; box.setAttribute("data-push", "open"); };
    es.addEventListener("fragment", function (msg) {
      var d = JSON.parse(msg.data);
      swap(d.html, d.tag, d.state);
      if (state === "finished" || state === "cancelled") { es.close(); }
    });
    es.addEventListener("changed", function () { poll(); stopped = true; });  // too big to push
    es.onerror = function () {
      if (!opened || es.readyState === EventSource.CLOSED) {
        es.close();  // no relay: poll instead
        box.setAttribute("data-push", "off");
        stopped = false;
        schedule();
      }
    };
  }

  if (state !== "finished" && state !== "cancelled") {
    var pushUrl = box.getAttribute("data-push-url");
    if (pushUrl && window.EventSource) { stopped = true; push(pushUrl); } else { schedule(); }
  }
})();

// Turn-by-turn replay of a finished match, from /matches/<id>/replay.json (frames computed
// by the engine on the server), and the same viewer live: a running match's events from the
// live relay (server-sent events, data-live-url), where hands stay face down until the deal
// is over (the relay never has them before).  Everything is drawn with textContent: no name,
// "say" or fault detail from a bot is ever parsed as HTML.
"use strict";
(function () {
  var root = document.getElementById("replay");
  if (!root) { return; }
  var $ = function (role) { return root.querySelector('[data-role="' + role + '"]'); };
  var felt = $("felt"), info = $("info"), slider = $("slider"), list = $("list");
  var dealSelect = $("deal"), playButton = $("play"), speed = $("speed");
  var data = null, dealIdx = 0, turnIdx = 0, timer = null;
  var SUITS = { D: "\u2666", C: "\u2663", H: "\u2665", S: "\u2660" };
  var AREAS = { 2: [0, 2], 3: [0, 1, 3], 4: [0, 1, 2, 3] };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function cardText(c) {
    var rank = c.slice(0, -1), suit = c.slice(-1);
    return (rank === "T" ? "10" : rank) + (SUITS[suit] || suit);
  }
  function cards(texts, cls) {
    var box = el("span", "cards" + (cls ? " " + cls : ""));
    texts.forEach(function (c) {
      var s = c.slice(-1);
      box.appendChild(el("span", "card" + (s === "D" || s === "H" ? " red" : ""), cardText(c)));
    });
    return box;
  }
  function backs(n) {  // a hand still hidden: its size only
    var box = el("span", "cards small hidden-hand");
    for (var i = 0; i < n; i++) { box.appendChild(el("span", "card back", "")); }
    return box;
  }
  // Each fault's name, as every page and command names it (referee/runner/faults.py FAULTS).
  var faultNames = {};
  try { faultNames = JSON.parse(root.getAttribute("data-fault-names") || "{}"); } catch (e) { faultNames = {}; }
  function faultName(code) {
    return Object.prototype.hasOwnProperty.call(faultNames, code) ? faultNames[code] : String(code).replace(/_/g, " ");
  }
  function name(seat) { return data.seats[seat] ? data.seats[seat].name : "seat " + (seat + 1); }
  function moveText(t) {
    if (t.decision && !t.cards.length) { return "passes " + t.count + " card" + (t.count === 1 ? "" : "s") + " face down"; }
    return t.cards.length ? t.cards.map(cardText).join(" ") : "pass";
  }
  function toMoveLive(deal) {
    var t = deal.turns.length ? deal.turns[deal.turns.length - 1] : deal;
    return t.to_move === null || t.to_move === undefined ? 0 : t.to_move;
  }
  function totalsBefore(d) {
    if (d === 0) { return data.seats.map(function () { return 0; }); }
    return data.deals[d - 1].totals || data.seats.map(function () { return 0; });
  }

  function render() {
    var deal = data.deals[dealIdx];
    var turns = deal.turns;
    var last = turnIdx > 0 ? turns[turnIdx - 1] : null;
    var hands = last ? last.hands : deal.hands;
    var counts = last ? last.card_counts : deal.card_counts;
    var atEnd = turnIdx === turns.length;
    var toMove = atEnd ? (deal.live ? toMoveLive(deal) : null) : turns[turnIdx].seat;
    // What each seat did in the current trick.
    var lastMove = {}, cleared = false;
    for (var i = 0; i < turnIdx; i++) {
      if (cleared) { lastMove = {}; cleared = false; }
      lastMove[turns[i].seat] = turns[i];
      if (!turns[i].table.length) { cleared = true; }
    }
    var totals = atEnd && !deal.live && deal.totals ? deal.totals : totalsBefore(dealIdx);
    felt.textContent = "";
    var areas = AREAS[data.players] || AREAS[4];
    data.seats.forEach(function (s, seat) {
      var box = el("div", "seat seat-" + areas[seat]);
      if (seat === toMove) { box.classList.add("to-move"); }
      if (atEnd && !deal.live && deal.winner === seat) { box.classList.add("winner"); }
      box.setAttribute("data-seat", seat);
      var head = el("div", "seat-head");
      head.appendChild(el("span", "who", name(seat)));
      var held = hands ? hands[seat].length : counts[seat];
      head.appendChild(el("span", "count", held + " cards"));
      head.appendChild(el("span", "score", totals[seat]));
      box.appendChild(head);
      box.appendChild(hands ? cards(hands[seat], "small") : backs(held));
      var lm = lastMove[seat];
      var lastLine = el("div", "last");
      if (lm) {
        lastLine.appendChild(lm.cards.length ? cards(lm.cards, "small") : el("span", "", "pass"));
        if (lm.latency_ms !== null && lm.latency_ms !== undefined) {
          lastLine.appendChild(el("span", "", Math.round(lm.latency_ms) + " ms"));
        }
        if (lm.fault) { lastLine.appendChild(el("span", "chip warn", lm.fault)); }
      }
      box.appendChild(lastLine);
      if (lm && lm.say) { box.appendChild(el("div", "say", "\u201c" + lm.say + "\u201d")); }
      felt.appendChild(box);
    });
    var center = el("div", "center");
    if (atEnd && deal.live) {
      var waiting = name(toMoveLive(deal)) + " to play";
      if (last && last.table.length) {
        center.appendChild(cards(last.table));
        center.appendChild(el("div", "caption", "to beat: " + name(last.table_seat) + " \u00b7 " + waiting));
      } else {
        center.appendChild(el("div", "caption", (turns.length ? "new trick" : "the deal begins") + " \u00b7 " + waiting));
      }
    } else if (atEnd) {
      var out = el("div", "outcome");
      out.appendChild(el("div", "", deal.winner !== null && deal.winner !== undefined
        ? name(deal.winner) + " wins deal " + (dealIdx + 1) : "deal " + (dealIdx + 1) + " over"));
      if (deal.scores) {
        out.appendChild(el("div", "", "scores: " + deal.scores.map(function (v, s) {
          return name(s) + " " + (v > 0 ? "+" : "") + v; }).join(", ")));
      }
      center.appendChild(out);
    } else if (last && last.table.length) {
      center.appendChild(cards(last.table));
      center.appendChild(el("div", "caption", "to beat: " + name(last.table_seat)));
    } else {
      center.appendChild(el("div", "caption", turnIdx === 0 ? "the deal begins" : "new trick"));
    }
    felt.appendChild(center);
    // The line under the controls.
    info.textContent = "";
    info.appendChild(el("strong", "", "Deal " + (dealIdx + 1) + "/" + (data.planned || data.deals.length) +
      ", turn " + turnIdx + "/" + turns.length + ": "));
    if (last) {
      info.appendChild(document.createTextNode(name(last.seat) + " " +
        (last.cards.length ? "plays " + moveText(last) : "passes") +
        (last.latency_ms !== null && last.latency_ms !== undefined
          ? " in " + Math.round(last.latency_ms) + " ms" : "") +
        " (" + (last.legal !== undefined ? last.legal + " legal move" +
          (last.legal === 1 ? "" : "s") + ", " : "") +
        "time bank " + (last.bank_ms / 1000).toFixed(1) + " s)"));
      if (last.fault) {
        info.appendChild(document.createTextNode(" "));
        info.appendChild(el("span", "fault", faultName(last.fault) +
          (last.detail ? ": " + last.detail : "")));
      }
    } else if (deal.live) {
      info.appendChild(document.createTextNode("hands dealt face down; " + name(toMoveLive(deal)) + " leads"));
    } else {
      info.appendChild(document.createTextNode("hands as dealt; " + name(turns.length ? turns[0].seat : 0) + " leads"));
    }
    slider.max = turns.length;
    slider.value = turnIdx;
    Array.prototype.forEach.call(list.children, function (li, k) {
      li.classList.toggle("current", k === turnIdx - 1);
    });
    root.setAttribute("data-deal", dealIdx);
    root.setAttribute("data-turn", turnIdx);
  }

  function fillList() {
    list.textContent = "";
    data.deals[dealIdx].turns.forEach(function (t, k) {
      var li = el("li", "", name(t.seat) + ": " + moveText(t) +
        (t.latency_ms !== null && t.latency_ms !== undefined ? " (" + Math.round(t.latency_ms) + " ms)" : ""));
      if (t.fault) { li.appendChild(el("span", "fault", " " + faultName(t.fault))); }
      li.addEventListener("click", function () { stop(); turnIdx = k + 1; render(); });
      list.appendChild(li);
    });
  }

  function setDeal(d, atEnd) {
    dealIdx = Math.max(0, Math.min(data.deals.length - 1, d));
    dealSelect.value = String(dealIdx);
    fillList();
    turnIdx = atEnd ? data.deals[dealIdx].turns.length : 0;
    render();
  }
  function step(delta) {
    var n = data.deals[dealIdx].turns.length;
    var next = turnIdx + delta;
    if (next > n) {
      if (dealIdx + 1 < data.deals.length) { setDeal(dealIdx + 1, false); return true; }
      return false;
    }
    if (next < 0) {
      if (dealIdx > 0) { setDeal(dealIdx - 1, true); return true; }
      return false;
    }
    turnIdx = next;
    render();
    return true;
  }
  function stop() {
    if (timer) { clearInterval(timer); timer = null; }
    root.setAttribute("data-playing", "false");
  }
  function play() {
    if (timer) { stop(); return; }
    root.setAttribute("data-playing", "true");
    timer = setInterval(function () { if (!step(1)) { stop(); } }, Number(speed.value));
  }

  function fillDeals() {
    dealSelect.textContent = "";
    var planned = data.planned || data.deals.length;
    data.deals.forEach(function (deal, k) {
      dealSelect.appendChild(el("option", "", "deal " + (k + 1) + " of " + planned)).value = String(k);
    });
  }
  function init(d) {
    data = d;
    fillDeals();
    wire();
    setDeal(0, false);
    root.setAttribute("data-ready", "true");
  }
  function wire() {
    dealSelect.addEventListener("change", function () { stop(); setDeal(Number(dealSelect.value), false); });
    $("first").addEventListener("click", function () { stop(); turnIdx = 0; render(); });
    $("last").addEventListener("click", function () { stop(); turnIdx = data.deals[dealIdx].turns.length; render(); });
    $("prev").addEventListener("click", function () { stop(); step(-1); });
    $("next").addEventListener("click", function () { stop(); step(1); });
    playButton.addEventListener("click", play);
    speed.addEventListener("change", function () { if (timer) { stop(); play(); } });
    slider.addEventListener("input", function () { stop(); turnIdx = Number(slider.value); render(); });
    document.addEventListener("keydown", function (e) {
      if (e.target && (e.target.tagName === "INPUT" || e.target.tagName === "SELECT")) { return; }
      if (e.key === "ArrowRight") { stop(); step(1); e.preventDefault(); }
      else if (e.key === "ArrowLeft") { stop(); step(-1); e.preventDefault(); }
      else if (e.key === " ") { play(); e.preventDefault(); }
      else if (e.key === "Home") { stop(); turnIdx = 0; render(); }
      else if (e.key === "End") { stop(); turnIdx = data.deals[dealIdx].turns.length; render(); }
    });
  }

  // --- live ---------------------------------------------------------------------------------
  var status = $("live-status");
  function say(text, state) {
    if (status) { status.textContent = text; status.setAttribute("data-state", state); }
    root.setAttribute("data-live", state);
  }
  // The heading's state badge follows the match: "running" from its start event, its final
  // state from its end event, "queued" again when an attempt stopped (the match is played
  // again).  Drawn as the server's state_badge macro draws it.
  var badge = document.querySelector('[data-role="match-state"]');
  function showState(state) {
    if (!badge || !state || badge.getAttribute("data-state") === state) { return; }
    var b = el("span", "badge badge-" + state);
    if (state === "running") {
      var pulse = el("span", "pulse");
      pulse.setAttribute("aria-hidden", "true");
      b.appendChild(pulse);
    }
    b.appendChild(document.createTextNode(state));
    badge.textContent = "";
    badge.appendChild(b);
    badge.setAttribute("data-state", state);
    root.setAttribute("data-state", state);
  }
  function following() {  // the viewer is at the newest turn: keep it there
    return dealIdx === data.deals.length - 1 && turnIdx === data.deals[dealIdx].turns.length;
  }
  var live = {
    start: function (e) {
      var first = data === null;
      showState(e.state || "running");
      data = { seats: e.seats, players: e.players, planned: e.deals, deals: [] };
      if (first) { wire(); }
      fillDeals();
      felt.textContent = ""; list.textContent = "";
      info.textContent = "The match has begun: waiting for the first deal" + String.fromCharCode(8230);
    },
    deal: function (e) {
      var follow = !data.deals.length || following();
      data.deals.push({ index: e.deal, live: true, hands: null, card_counts: e.card_counts,
                        to_move: e.to_move, turns: [] });
      fillDeals();
      if (follow) { setDeal(data.deals.length - 1, false); }
      root.setAttribute("data-ready", "true");
    },
    turn: function (e) {
      var deal = data.deals[data.deals.length - 1];
      if (!deal || deal.index !== e.deal) { return; }
      var follow = following();
      deal.turns.push(e);
      if (dealIdx === data.deals.length - 1) {
        fillList();
        if (follow) { turnIdx = deal.turns.length; }
        render();
      }
    },
    deal_end: function (e) {
      var k = data.deals.length - 1, deal = data.deals[k];
      if (!deal || deal.index !== e.deal) { return; }
      var follow = following();
      var out = e.outcome || {};
      var done = e.revealed ? e.frames : { index: e.deal, hands: null, card_counts: deal.card_counts,
        turns: deal.turns, scores: out.scores, winner: out.winner, termination: out.termination };
      done.totals = e.totals;
      data.deals[k] = done;
      if (dealIdx === k) { fillList(); if (follow) { turnIdx = done.turns.length; } render(); }
    },
    end: function (e) {
      if (e.state === "stopped") {
        showState("queued");
        say("interrupted: the match will be played again", "waiting");
        return;
      }
      showState(e.state);
      say(e.state === "finished" ? "finished" : e.state, "over");
      var over = el("p", "live-over"), a = el("a", "", "The match is over: the full replay and its log");
      a.href = window.location.pathname;
      over.setAttribute("data-role", "over");
      over.appendChild(a);
      info.parentNode.insertBefore(over, info);
      root.setAttribute("data-over", "true");
    }
  };
  function poll(url) {  // no live stream: look at the match now and then instead
    setTimeout(function () {
      fetch(url, { cache: "no-store", credentials: "same-origin" })
        .then(function (r) { return r.json(); })
        .then(function (m) {
          if (m.state === "finished" || m.state === "failed") { window.location.reload(); return; }
          showState(m.state);
          if (m.state === "running") { connect(); } else { poll(url); }
        })
        .catch(function () { poll(url); });
    }, 5000);
  }
  var failures = 0;
  function connect() {
    var url = root.getAttribute("data-live-url"), matchUrl = root.getAttribute("data-match-url");
    if (!window.EventSource) { say("no live view in this browser", "down"); poll(matchUrl); return; }
    var es = new EventSource(url), opened = false;
    Object.keys(live).forEach(function (kind) {
      es.addEventListener(kind, function (msg) {
        live[kind](JSON.parse(msg.data));
        if (kind === "end" && root.getAttribute("data-over") === "true") { es.close(); }
      });
    });
    es.onopen = function () { opened = true; failures = 0; say("live", "live"); };
    es.onerror = function () {
      if (es.readyState === EventSource.CLOSED || !opened) {
        // Not started yet (no events), or the relay is down: say so and look again later.
        es.close();
        failures += 1;
        if (root.getAttribute("data-over") !== "true") {
          say(root.getAttribute("data-state") === "queued" && failures < 3
            ? "waiting for the match to start" : "live view unavailable: checking every few seconds", "down");
          poll(matchUrl);
        }
      } else {
        say("reconnecting" + String.fromCharCode(8230), "reconnecting");  // resumes from the last event
      }
    };
  }

  if (root.getAttribute("data-live-url")) {
    info.textContent = "Connecting to the live table" + String.fromCharCode(8230);
    connect();
  } else {
    fetch(root.getAttribute("data-replay-url"), { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); })
      .then(init)
      .catch(function (err) { info.textContent = "The replay could not be loaded: " + err.message; });
  }
})();

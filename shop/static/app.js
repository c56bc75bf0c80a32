// seckill shop: plain JavaScript, no dependencies, no build step.
//
// Under a sale's load this page must cost the API little: the session list
// (cached by the API for a second) every few seconds, the order status
// every second only while it is about to change, and the buy itself; in a
// draw, the shopper's result once drawn and, while waitlisted, every few
// seconds. Everything else (countdowns, the state of buttons) is computed
// here.
(function () {
  "use strict";

  var DEV = document.body.dataset.dev === "true";
  var TOKEN_KEY = "seckill.token";
  var ORDER_KEY = "seckill.order";
  var LIST_EVERY = 5000; // remaining stock refresh
  var POLL_FAST = 1000; // order status while it is about to change
  var POLL_SLOW = 5000; // order status while it waits for the shopper
  var FAST_FOR = 30000; // how long after a pay or cancel polling stays fast
  var FINAL = { PAID: true, CLOSED: true, FAILED: true, REFUNDED: true };
  var BUY_TRIES = 6; // one click: the first try and up to 5 retries with its key
  var BUY_BACKOFF = 500; // ms before the first retry, doubled each time (at most 8 s)
  var DRAW_WAIT = 15000; // a draw's result after the start, until the session says drawn
  var DRAWN_SPREAD = 3000; // once drawn, each page asks within this, at its own moment
  var WAITLIST_MIN = 2000, WAITLIST_MAX = 10000; // a waitlisted shopper's asks: a quarter of the right's life, within these

  // Human messages for every error code of the API. The server's own
  // message is added where it says what exactly was wrong.
  var MESSAGES = {
    SOLD_OUT: "Sold out: no units are left. Unpaid orders give their units back when they expire, so another try later may succeed.",
    LIMIT_EXCEEDED: "You already hold as many units of this sale as one shopper may buy.",
    NOT_ELIGIBLE: "This sale is for registered shoppers only, and you did not register for it during its registration window.",
    // A draw's NOT_ELIGIBLE (the API's code is the same).
    NOT_ELIGIBLE_DRAW: "Only shoppers drawn in this sale's draw may buy, once each, while their right lasts: you did not register, were not drawn (or the draw is still being made), or your right has lapsed or been used.",
    NOT_STARTED: "This sale has not started yet. Buying opens when the countdown ends.",
    ENDED: "This sale has ended.",
    PAUSED: "The sale is paused for a moment. Please try again shortly.",
    RATE_LIMITED: "Too many attempts right now. Please wait {retry} and try again.",
    UNAVAILABLE: "The shop is very busy or a service is briefly down. Please try again in a moment.",
    UNAUTHENTICATED: "You are not signed in, or your token has expired. Paste a fresh shopper token above.",
    FORBIDDEN: "This account is not allowed to buy.",
    NOT_FOUND: "Not found: this sale or order does not exist, or it is not yours.",
    INVALID_ARGUMENT: "That request was not valid: {message}",
    CONFLICT: "That cannot be done right now: {message}",
    PAYLOAD_TOO_LARGE: "That request was too large.",
    AMOUNT_MISMATCH: "The payment amount did not match the order; it was not applied.",
    IDEMPOTENCY_MISMATCH: "This purchase was already sent with other details. Click Buy again to make a new one.",
    OUT_OF_RANGE: "That cannot be done with these values. Please check them and try again.",
    INTERNAL: "Something went wrong on our side. Please try again.",
    NETWORK: "Cannot reach the shop. Check your connection; the page keeps trying."
  };

  var STATUS_HINTS = {
    QUEUED: "Your units are reserved. Creating your order…",
    WAIT_PAY: "Reserved for you until the deadline. Unpaid orders close and the units go back on sale.",
    PAID: "Paid. Thank you for your order!",
    CLOSED: "Closed: cancelled or not paid in time. The units went back on sale.",
    FAILED: "This order could not be created. Nothing was charged.",
    REFUND_PENDING: "Your payment arrived after the order had closed. It is being refunded.",
    REFUNDED: "Your late payment was refunded."
  };

  var $ = function (id) { return document.getElementById(id); };
  var focusID = new URLSearchParams(location.search).get("session"); // "/?session=N"

  var clock = new window.SeckillClock(); // the server's clock (clock.js)
  var sessions = [];
  var sessionTimer = null;
  var refreshQueued = false;
  var lastBoundary = 0; // reloads for a start or an end: at most one every 3 s, even when the API is down
  var order = null;
  var pollTimer = null;
  var fastUntil = 0;
  var busy = false; // a buy, registration, pay or cancel is in flight
  // regs is where the signed-in shopper stands in each sale that takes
  // registrations, by session id: REGISTERED, NONE (not registered),
  // ASKING, or UNKNOWN (the API would not say: not asked again until the
  // next sign-in); in a draw also WON, USED, WAITLISTED and LOST (the
  // API's answers; USED also when this page bought with the right) and
  // REFUSED (the API refused a purchase as NOT_ELIGIBLE: asked again).
  var regs = {};
  // regInfo is the rest of the last answer, by session id: when it came
  // (at, the server's clock), a draw's right_until (ms) and position, a
  // random jitter in [0, 1) for the next question, whether one is in
  // flight (asking), and lapsed (this page saw the right end unused).
  var regInfo = {};

  function now() { return clock.now(); }

  // ---- API ----------------------------------------------------------------

  // call returns {ok, status, data} or {ok: false, error: {code, message,
  // trace_id, retry}}; it never throws. extra are more request headers.
  function call(method, path, body, auth, extra) {
    var headers = { "Accept": "application/json" };
    if (extra) Object.keys(extra).forEach(function (h) { headers[h] = extra[h]; });
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (auth) {
      var tok = token();
      if (tok) headers["Authorization"] = "Bearer " + tok;
    }
    var sent = Date.now();
    return fetch(path, {
      method: method, headers: headers, cache: "no-store",
      body: body === undefined ? undefined : JSON.stringify(body)
    }).then(function (res) {
      clock.sample(res.headers, sent, Date.now());
      return res.json().catch(function () { return {}; }).then(function (data) {
        var retry = parseInt(res.headers.get("Retry-After") || "", 10);
        if (res.ok) return { ok: true, status: res.status, data: data, retry: retry };
        var err = {
          code: data.code || (res.status >= 500 ? "UNAVAILABLE" : "INTERNAL"),
          message: data.message || ("HTTP " + res.status),
          trace_id: data.trace_id || res.headers.get("X-Request-ID") || "",
          retry: retry
        };
        return { ok: false, status: res.status, error: err };
      });
    }, function () {
      return { ok: false, status: 0, error: { code: "NETWORK", message: "network error", trace_id: "" } };
    });
  }

  // ---- messages -----------------------------------------------------------

  // showError shows err's message, or the message of key when given.
  function showError(err, key) {
    var text = MESSAGES[key || err.code] || ("Unexpected error " + err.code + ": {message}");
    var retry = err.retry > 0 ? err.retry : 1;
    text = text.replace("{message}", err.message).replace("{retry}", retry + (retry === 1 ? " second" : " seconds"));
    showMessage(text, err.code, err.trace_id);
  }

  function showMessage(text, code, trace) {
    var box = $("message");
    box.dataset.code = code || "";
    box.className = code === "OK" || code === "PENDING" ? "ok" : "error";
    $("message-text").textContent = text;
    $("message-trace-id").textContent = trace || "";
    $("message-trace").hidden = !trace;
    box.hidden = false;
  }

  function clearMessage() {
    $("message").hidden = true;
    $("message").dataset.code = "";
  }

  // ---- identity -----------------------------------------------------------

  function token() { return localStorage.getItem(TOKEN_KEY) || ""; }

  // claims reads the token's payload for display only: the API verifies it.
  function claims(tok) {
    try {
      var p = tok.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
      return JSON.parse(atob(p + "===".slice((p.length + 3) % 4)));
    } catch (e) {
      return null;
    }
  }

  function renderIdentity() {
    var tok = token();
    var c = tok ? claims(tok) : null;
    var who = $("whoami");
    if (!tok) {
      who.textContent = "Not signed in. Paste a shopper token to buy.";
      who.dataset.user = "";
    } else if (!c || !c.sub) {
      who.textContent = "The stored token is not a JWT. Paste a shopper token.";
      who.dataset.user = "";
    } else {
      var exp = c.exp ? new Date(c.exp * 1000) : null;
      var expired = exp && exp.getTime() <= Date.now();
      who.textContent = "Signed in as user " + c.sub +
        (exp ? (expired ? " (token expired: paste a fresh one)" : " (until " + exp.toLocaleString() + ")") : "");
      who.dataset.user = String(c.sub);
    }
    $("token-clear").hidden = !tok;
    // The section shows with the sign-in itself, not when its list arrives:
    // appearing later it would push the sales down under the cursor.
    $("my-orders").hidden = !tok;
  }

  function setToken(tok) {
    if (tok) localStorage.setItem(TOKEN_KEY, tok); else localStorage.removeItem(TOKEN_KEY);
    renderIdentity();
    // Registrations are the shopper's: another shopper's are asked anew.
    regs = {};
    regInfo = {};
    askRegistrations();
    tick();
  }

  $("token-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var tok = $("token-input").value.trim().replace(/^Bearer\s+/i, "");
    $("token-input").value = "";
    if (!claims(tok)) {
      showMessage("That does not look like a shopper token (a JWT has three parts separated by dots).", "INVALID_TOKEN");
      return;
    }
    setToken(tok);
    clearMessage();
    resumeOrder();
    loadMyOrders(false);
  });

  $("token-clear").addEventListener("click", function () {
    setToken("");
    forgetOrder();
    loadMyOrders(false);
  });

  if (DEV) {
    $("dev-signin").addEventListener("submit", function (ev) {
      ev.preventDefault();
      var user = parseInt($("dev-user").value, 10);
      call("POST", "/dev/v1/token", { user_id: user }).then(function (r) {
        if (!r.ok) return showError(r.error);
        setToken(r.data.token);
        clearMessage();
        resumeOrder();
        loadMyOrders(false);
      });
    });
  }

  // ---- sessions -----------------------------------------------------------

  // An amount counts the currency's smallest unit, as the providers do:
  // cents of usd, but yen of jpy (no minor unit) and fils of bhd (three).
  function money(minor, currency) {
    if (!currency) return (minor / 100).toFixed(2); // an order from before orders carried it
    var code = String(currency).toUpperCase(), digits = 2;
    try {
      digits = new Intl.NumberFormat("en", { style: "currency", currency: code }).resolvedOptions().maximumFractionDigits;
    } catch (e) { /* a code this browser does not know: two digits */ }
    return (minor / Math.pow(10, digits)).toFixed(digits) + " " + code;
  }

  function duration(ms) {
    var s = Math.max(0, Math.ceil(ms / 1000));
    var d = Math.floor(s / 86400), h = Math.floor(s / 3600) % 24, m = Math.floor(s / 60) % 60;
    s = s % 60;
    var hms = (h > 0 || d > 0 ? h + ":" + pad(m) : String(m)) + ":" + pad(s);
    return d > 0 ? d + "d " + hms : hms;
  }

  function pad(n) { return n < 10 ? "0" + n : String(n); }

  function loadSessions() {
    clearTimeout(sessionTimer);
    var path = focusID ? "/api/v1/sessions/" + encodeURIComponent(focusID) : "/api/v1/sessions";
    return call("GET", path).then(function (r) {
      if (r.ok) {
        sessions = focusID ? [r.data] : (r.data.sessions || []);
        renderSessions();
      } else {
        showError(r.error);
      }
      var wait = LIST_EVERY;
      if (!r.ok && r.error.retry > 0) wait = Math.max(wait, r.error.retry * 1000);
      // A page in a background tab stops asking; it catches up when shown.
      sessionTimer = setTimeout(function () { if (!document.hidden) loadSessions(); }, wait);
    });
  }

  // refreshSoon reloads the sessions shortly, once, with a little jitter so
  // that every open page does not ask at the same instant when a sale starts.
  function refreshSoon() {
    if (refreshQueued) return;
    refreshQueued = true;
    setTimeout(function () {
      refreshQueued = false;
      loadSessions();
    }, 200 + Math.random() * 800);
  }

  function renderSessions() {
    var list = $("session-list");
    var seen = {};
    sessions.forEach(function (s, i) {
      var id = String(s.id);
      seen[id] = true;
      var li = list.querySelector('li[data-session-id="' + id + '"]');
      if (!li) {
        li = $("session-template").content.firstElementChild.cloneNode(true);
        li.dataset.sessionId = id;
        li.querySelector('[data-role="buy"]').addEventListener("click", function () { buy(s.id, li); });
        li.querySelector('[data-role="register"]').addEventListener("click", function () { register(li); });
      }
      if (list.children[i] !== li) list.insertBefore(li, list.children[i] || null);
      li.querySelector('[data-role="title"]').textContent = s.title;
      renderSizes(li, s);
      // A sale of sizes with none left to choose shows its first size's price.
      var chosen = chosenItem(li, s) || (s.items && s.items[0]);
      li.querySelector('[data-role="price"]').textContent = "price " + money(chosen ? chosen.price_cents : s.price_cents, s.currency);
      li.querySelector('[data-role="limit"]').textContent = String(s.per_user_limit);
      var rem = li.querySelector('[data-role="remaining"]');
      // Before the sale its stock may not be loaded yet: say what is on offer.
      rem.textContent = s.state === "UPCOMING" ? s.total_stock + " units on offer" :
        s.remaining_stock + " of " + s.total_stock + " left";
      rem.dataset.remaining = String(s.remaining_stock);
      var qty = li.querySelector('[data-role="qty"]');
      if (qty.options.length !== s.per_user_limit) {
        var keep = qty.value;
        qty.textContent = "";
        for (var q = 1; q <= s.per_user_limit; q++) qty.add(new Option(String(q), String(q)));
        if (keep && +keep <= s.per_user_limit) qty.value = keep;
      }
      li._session = s;
    });
    Array.prototype.slice.call(list.children).forEach(function (li) {
      if (!seen[li.dataset.sessionId]) li.remove();
    });
    $("sessions-empty").hidden = sessions.length > 0;
    $("sessions-title").textContent = focusID ? "Sale " + focusID : "Sales";
    $("all-sessions").hidden = !focusID;
    askRegistrations();
    tick();
  }

  // renderSizes shows a sale of several items as one button per item (a
  // size) with its remaining stock; a sold-out size is greyed and cannot be
  // chosen. The choice is kept on the card (data-sku) across reloads.
  function renderSizes(li, s) {
    var box = li.querySelector('[data-role="sizes"]');
    var items = s.items || [];
    // A registration is for one size, and buys that one: the card keeps it.
    var held = box.dataset.held = registeredSize(s);
    box.hidden = items.length < 2;
    if (box.hidden) return;
    var chosen = li.dataset.sku;
    var current = items.some(function (it) { return String(it.sku_id) === chosen && it.remaining_stock > 0; });
    if (held) {
      chosen = li.dataset.sku = held;
    } else if (!current) {
      var open = items.filter(function (it) { return it.remaining_stock > 0; })[0];
      chosen = li.dataset.sku = open ? String(open.sku_id) : "";
    }
    box.textContent = "";
    items.forEach(function (it) {
      var b = document.createElement("button");
      b.type = "button";
      b.dataset.sku = String(it.sku_id);
      b.dataset.remaining = String(it.remaining_stock);
      var left = s.state === "UPCOMING" ? it.total_stock + " on offer" :
        it.remaining_stock > 0 ? it.remaining_stock + " left" : "sold out";
      b.textContent = it.title + " · " + left;
      b.disabled = (s.state !== "UPCOMING" && it.remaining_stock <= 0) || (!!held && b.dataset.sku !== held);
      b.setAttribute("aria-pressed", String(b.dataset.sku === chosen));
      b.addEventListener("click", function () {
        li.dataset.sku = b.dataset.sku;
        renderSizes(li, li._session || s);
        tick(); // the register button names the size
      });
      box.appendChild(b);
    });
    var c = chosenItem(li, s);
    if (c) li.querySelector('[data-role="price"]').textContent = "price " + money(c.price_cents, s.currency);
  }

  // registeredSize is the size (its sku_id, a string) the signed-in
  // shopper registered for in sale s of several items, "" for none known.
  function registeredSize(s) {
    var info = token() && regInfo[s.id];
    return info && info.sku ? String(info.sku) : "";
  }

  // chosenItem is the item chosen on a card of a sale of several items
  // (undefined for a single-SKU sale, or none chosen).
  function chosenItem(li, s) {
    if (!s.items || s.items.length < 2) return undefined;
    return s.items.filter(function (it) { return String(it.sku_id) === li.dataset.sku; })[0];
  }

  // tick updates countdowns and buttons every second from the server's
  // clock, and reloads when a sale starts or ends.
  function tick() {
    var t = now();
    Array.prototype.forEach.call($("session-list").children, function (li) {
      var s = li._session;
      if (!s) return;
      var start = Date.parse(s.start_at), end = Date.parse(s.end_at);
      var state = s.state;
      if (((state === "UPCOMING" && t >= start) || (state !== "ENDED" && t >= end)) && Date.now() - lastBoundary > 3000) {
        lastBoundary = Date.now();
        refreshSoon();
      }
      var cd = li.querySelector('[data-role="countdown"]');
      if (state === "UPCOMING") cd.textContent = "starts in " + duration(start - t);
      else if (state === "ENDED" || t >= end) cd.textContent = "ended";
      else cd.textContent = "ends in " + duration(end - t);
      li.dataset.state = state;
      var badge = li.querySelector('[data-role="state"]');
      badge.textContent = state.replace("_", " ");
      badge.dataset.state = state;
      var btn = li.querySelector('[data-role="buy"]');
      var open = state === "ACTIVE" && t < end;
      var label = open ? "Buy" : { UPCOMING: "Not started", SOLD_OUT: "Sold out", ENDED: "Ended", PAUSED: "Paused", PREPARING: "Preparing…" }[state] || "Closed";
      // A sale that takes registrations may not be this shopper's to buy
      // in: the button says why (and when the page cannot tell, the API
      // does).
      var why = renderRegistration(li, s, t);
      if (why && open) {
        open = false;
        label = why;
      }
      if (s.mode === "draw") followDraw(s, t);
      btn.disabled = !open || busy;
      btn.textContent = label;
      li.querySelector('[data-role="qty"]').disabled = !open;
    });
    renderDeadline();
  }

  // newKey returns a UUIDv7 (RFC 9562) stamped with the server's clock:
  // 48 bits of Unix milliseconds, then random bits. The server keeps no
  // record of a refused key; its time is what keeps it refused after units
  // come back, and what lets the server refuse it from memory once the sale
  // is sold out (see the README's "Idempotency-Key").
  function newKey() {
    var b = crypto.getRandomValues(new Uint8Array(16));
    var ms = Math.floor(now());
    for (var i = 5; i >= 0; i--) {
      b[i] = ms % 256;
      ms = Math.floor(ms / 256);
    }
    b[6] = (b[6] & 0x0f) | 0x70;
    b[8] = (b[8] & 0x3f) | 0x80;
    var h = Array.prototype.map.call(b, function (x) { return (x < 16 ? "0" : "") + x.toString(16); }).join("");
    return h.slice(0, 8) + "-" + h.slice(8, 12) + "-" + h.slice(12, 16) + "-" + h.slice(16, 20) + "-" + h.slice(20);
  }

  // buy sends one purchase per click. The click's Idempotency-Key makes
  // its retries the same purchase: a network error or a 503 leaves the
  // outcome unknown (the units may be reserved), and the retry with the key
  // gets the truth, never a second order.
  function buy(sessionID, li) {
    if (!begin()) return;
    var qty = parseInt(li.querySelector('[data-role="qty"]').value, 10) || 1;
    var key = newKey();
    var s = li._session || { id: sessionID };
    var body = { quantity: qty };
    var item = chosenItem(li, s);
    if (item) body.sku_id = item.sku_id;
    var send = function (ticket) { sendBuy(s, body, key, ticket, 1); };
    // A reserved sale or a draw checked its shoppers (the captcha, the
    // ticket) when they registered: its purchase needs neither.
    if (registers(s)) send("");
    else withTicket(s, "Continue to buy", send);
  }

  // begin starts a buy or a registration: one at a time, signed in.
  function begin() {
    if (busy) return false;
    if (!token()) {
      showError({ code: "UNAUTHENTICATED", message: "missing bearer token", trace_id: "" });
      return false;
    }
    busy = true;
    tick();
    return true;
  }

  // withTicket gets what sale s asks of a shopper before the request it
  // guards (a first-come sale's purchase, a reserved sale's registration):
  // a captcha solved for a ticket, a ticket alone, or nothing; then it
  // calls then(ticket), or shows why not and ends the attempt. label names
  // the captcha's submit button.
  function withTicket(s, label, then) {
    if (s.require_captcha) {
      // The human check first: its answer buys the ticket.
      captcha = { sessionID: s.id, label: label, then: then };
      drawCaptcha();
      return;
    }
    if (!s.require_ticket) {
      then("");
      return;
    }
    // The first request that presents the ticket binds it (a purchase: to
    // the click's key, so the retries with the key may present it again).
    call("POST", "/api/v1/sessions/" + s.id + "/ticket", {}, true).then(function (r) {
      if (!r.ok) {
        busy = false;
        showError(r.error);
        tick();
        return;
      }
      then(r.data.ticket);
    });
  }

  function sendBuy(s, body, key, ticket, attempt) {
    var qty = body.quantity;
    var sessionID = s.id;
    var path = "/api/v1/sessions/" + sessionID + "/orders";
    var tok = token();
    var headers = { "Idempotency-Key": key };
    if (ticket) headers["X-Seckill-Ticket"] = ticket;
    call("POST", path, body, true, headers).then(function (r) {
      var unknown = !r.ok && (r.status === 0 || r.status === 503);
      if (unknown && attempt < BUY_TRIES) {
        var wait = Math.min(BUY_BACKOFF * Math.pow(2, attempt - 1), 8000);
        if (r.error.retry > 0) wait = Math.max(wait, r.error.retry * 1000);
        showMessage("Confirming your purchase… (the shop is busy; retrying)", "PENDING", r.error.trace_id);
        setTimeout(function () { sendBuy(s, body, key, ticket, attempt + 1); }, wait + Math.random() * 250);
        return;
      }
      busy = false;
      if (r.ok) {
        clearMessage();
        setOrder({ order_no: r.data.order_no, status: r.data.status, session_id: sessionID, quantity: qty });
        schedulePoll(500);
        // A draw's right buys once.
        if (s.mode === "draw") learnRegistration(sessionID, tok, "USED");
      } else if (r.error.code === "NOT_ELIGIBLE" && s.mode === "draw") {
        // No live right: not drawn, lapsed, used, or not drawn yet. The
        // page asks the API which, shortly.
        showError(r.error, "NOT_ELIGIBLE_DRAW");
        learnRegistration(sessionID, tok, "REFUSED");
      } else {
        showError(r.error);
        // The API knows better than the page: the shopper is no registrant.
        if (r.error.code === "NOT_ELIGIBLE") learnRegistration(sessionID, tok, "NONE");
      }
      // The stock (or the state) changed either way.
      refreshSoon();
      tick();
    });
  }

  // ---- registrations (reserved sales and draws) ---------------------------

  // registers reports whether sale s takes registrations.
  function registers(s) { return s.mode === "reserved" || s.mode === "draw"; }

  function registrationPath(s) { return "/api/v1/sessions/" + s.id + "/registration"; }

  // askRegistrations asks where the shopper stands in each sale the page
  // shows that takes registrations, once per sale and sign-in: a
  // registration changes only by this shopper's own click, so the page
  // never polls it (and asks nothing of the API at a sale's start). A
  // draw's answer moves at the draw and after it: followDraw asks again.
  function askRegistrations() {
    var tok = token();
    if (!tok) return;
    sessions.forEach(function (s) {
      if (!registers(s) || s.state === "ENDED" || regs[s.id]) return;
      regs[s.id] = "ASKING";
      call("GET", registrationPath(s), undefined, true).then(function (r) {
        if (token() !== tok || regs[s.id] !== "ASKING") return; // another shopper, or a newer answer
        if (r.ok) noteRegistration(s.id, r.data);
        else if (r.error.code === "NOT_FOUND") regs[s.id] = "NONE";
        else if (r.error.code === "UNAUTHENTICATED") regs[s.id] = "UNKNOWN";
        else delete regs[s.id]; // asked again with the next session list
        tick();
      });
    });
  }

  // noteRegistration records the API's answer about sale id.
  function noteRegistration(id, data) {
    var was = regs[id], old = regInfo[id] || {};
    var until = data.right_until ? Date.parse(data.right_until) : 0;
    var status = data.status;
    // WON is also a right used to buy: the right the API refused, seen
    // again, is a used one (a right passed on has an end of its own).
    if (status === "WON" && was === "REFUSED" && until === old.right_until) status = "USED";
    regs[id] = status;
    regInfo[id] = { at: now(), jitter: Math.random(), right_until: until, position: data.position || 0,
      lapsed: status === "LOST" && (was === "WON" || !!old.lapsed), sku: data.sku_id || 0 };
  }

  // learnRegistration records what an answer to tok's request said. The
  // record is a new one: a question in flight about the old is dropped.
  function learnRegistration(sessionID, tok, status, sku) {
    if (token() !== tok) return;
    var old = regInfo[sessionID] || {};
    regs[sessionID] = status;
    regInfo[sessionID] = { at: now(), jitter: Math.random(), right_until: old.right_until || 0, position: 0, lapsed: false,
      sku: sku || old.sku || 0 };
    tick();
  }

  // followDraw asks again where the shopper stands in draw s once the
  // answer may have moved (nextAsk), each page at its own moment so that
  // the open pages do not all ask in the same second.
  function followDraw(s, t) {
    var tok = token(), info = regInfo[s.id];
    if (!tok || !info || info.asking || s.state === "ENDED" || !(t >= nextAsk(s, regs[s.id], info))) return;
    info.asking = true;
    call("GET", registrationPath(s), undefined, true).then(function (r) {
      if (token() !== tok || regInfo[s.id] !== info) return; // another shopper, or a newer record
      info.asking = false;
      if (r.ok) noteRegistration(s.id, r.data);
      else if (r.error.code === "NOT_FOUND") regs[s.id] = "NONE";
      else if (r.error.code === "UNAUTHENTICATED") regs[s.id] = "UNKNOWN";
      else info.at = now() + Math.max(POLL_SLOW, (r.error.retry || 0) * 1000); // later
      tick();
    });
  }

  // nextAsk is when (the server's clock, in ms) to ask again about draw s
  // after the answer info: Infinity when it will not move.
  function nextAsk(s, reg, info) {
    if (reg === "REGISTERED") {
      // Nothing moves before the start. After it, the session says when
      // the draw is out; a timer covers a session list that lags.
      var drawn = Date.parse(s.drawn_at || "");
      if (info.at < drawn) return drawn + info.jitter * DRAWN_SPREAD;
      return Math.max(info.at, Date.parse(s.start_at)) + DRAW_WAIT * (1 + info.jitter);
    }
    if (reg === "WAITLISTED" || reg === "REFUSED") {
      // A quarter of a right's life: a right passed on is learnt of while
      // most of it is left.
      var every = Math.min(WAITLIST_MAX, Math.max(WAITLIST_MIN, (s.right_ttl_seconds || 600) * 250));
      return info.at + every * (0.75 + info.jitter / 2);
    }
    // A right's end: was it used (WON still) or did it lapse (LOST)?
    if (reg === "WON" && info.right_until > info.at) return info.right_until + 1000 + info.jitter * DRAWN_SPREAD;
    return Infinity;
  }

  // The registrations a card shows; any other (ASKING, UNKNOWN) it
  // cannot tell.
  var SHOWN = { REGISTERED: true, NONE: true, WON: true, WAITLISTED: true, LOST: true, USED: true, REFUSED: true };

  // renderRegistration shows the registration window of a sale that takes
  // registrations, and the shopper's place in it, on card li; it returns
  // why the shopper may not buy ("" for none the page knows of: not signed
  // in, not asked yet, a first-come sale, a live right).
  function renderRegistration(li, s, t) {
    var box = li.querySelector('[data-role="registration"]');
    box.hidden = !registers(s);
    renderDraw(li, s, t);
    if (box.hidden) return "";
    var from = Date.parse(s.register_from), until = Date.parse(s.register_until), begins = Date.parse(s.start_at);
    var reg = token() ? regs[s.id] : "";
    reg = SHOWN[reg] ? reg : "";
    var phase = t < from ? "SOON" : t < until ? "OPEN" : t < begins ? "CLOSED" : s.state === "ENDED" ? "ENDED" : "ON_SALE";
    var says; // [the text, why no Buy]
    if (phase === "SOON") says = ["Registration opens in " + duration(from - t) + ".", ""];
    else if (s.mode === "draw") says = drawSays(s, reg, phase, t, until);
    else says = reservedSays(reg, phase, t, until);
    li.dataset.registration = phase;
    li.querySelector('[data-role="register-window"]').textContent =
      new Date(from).toLocaleString() + " – " + new Date(until).toLocaleString();
    // In a sale of sizes a registration is for the size chosen: the card
    // names it, and once registered keeps it (renderSizes).
    var held = registeredSize(s);
    if (li.querySelector('[data-role="sizes"]').dataset.held !== held) renderSizes(li, s);
    var size = chosenItem(li, s);
    var st = li.querySelector('[data-role="register-status"]');
    st.textContent = (held && size ? "Your size: " + size.title + ". " : "") + says[0];
    st.dataset.reg = reg;
    var btn = li.querySelector('[data-role="register"]');
    btn.textContent = s.mode === "draw" ? "Register for the draw" + (size ? " of " + size.title : "") :
      "Register" + (size ? " for " + size.title : "");
    btn.hidden = phase !== "OPEN" || reg === "REGISTERED";
    btn.disabled = busy;
    return says[1];
  }

  // reservedSays says where the shopper stands in a reserved sale, and why
  // the Buy button is off.
  function reservedSays(reg, phase, t, until) {
    var text;
    if (reg === "REGISTERED") text = phase === "ON_SALE" ? "Registered: you may buy." : phase === "ENDED" ? "Registered." : "Registered: you may buy once the sale starts.";
    else if (phase === "OPEN") text = "Registration is open: it closes in " + duration(until - t) + ". Only registered shoppers may buy.";
    else if (phase === "CLOSED") text = "Registration closed. Only registered shoppers may buy.";
    else if (phase === "ENDED") text = "";
    else text = reg === "NONE" ? "This sale is for registered shoppers only: you did not register." : "This sale is for registered shoppers only.";
    return [text, reg === "NONE" ? "Registrants only" : ""];
  }

  // drawSays says where the shopper stands in draw s, and why the Buy
  // button is off.
  function drawSays(s, reg, phase, t, until) {
    var info = regInfo[s.id] || {};
    if (phase === "ENDED") return ["", ""];
    if (phase === "OPEN" || phase === "CLOSED") {
      var closes = phase === "OPEN" ? "registration closes in " + duration(until - t) : "";
      if (reg === "REGISTERED") return ["Registered for the draw" + (closes ? " (" + closes + ")" : "") + ". Come back at the start to see whether you won.", ""];
      if (closes) return ["Registration is open: it closes in " + duration(until - t) + ". The draw at the start picks who may buy.", ""];
      return ["Registration closed. Only drawn registrants may buy.", reg === "NONE" ? "Drawn registrants only" : ""];
    }
    switch (reg) {
    case "REGISTERED":
      return [s.drawn_at ? "Drawn: asking for your result…" : "Registered: the draw is being made…", "Awaiting the draw"];
    case "WON":
      if (info.right_until > t) return ["You won the draw! Your right to buy ends in " + duration(info.right_until - t) + ".", ""];
      if (info.at >= info.right_until) return ["You won the draw and used your right to buy.", "Right used"];
      return ["Your right to buy has ended.", "Right ended"];
    case "USED":
      return ["You won the draw and used your right to buy.", "Right used"];
    case "WAITLISTED":
      return ["Waitlisted: number " + info.position + " in line. A right that lapses unused, or a unit given back, passes to the next in line: this page checks every few seconds.", "Waitlisted"];
    case "LOST":
      if (info.lapsed) return ["Your right lapsed unused: its unit went to the next in line.", "Right lapsed"];
      return ["Not drawn: you did not win this draw.", "Not drawn"];
    case "NONE":
      return ["This sale is for drawn registrants only: you did not register.", "Drawn registrants only"];
    case "REFUSED":
      return ["The shop refused the purchase: you hold no live right to buy. Asking for your draw result…", "Not eligible"];
    }
    return ["This sale is for drawn registrants only.", ""];
  }

  // renderDraw shows a draw's commitment (the SHA-256 of its seed, from
  // creation) and the countdown to the draw; once drawn, the seed, and
  // how anyone checks the draw with it.
  function renderDraw(li, s, t) {
    var box = li.querySelector('[data-role="draw"]');
    box.hidden = s.mode !== "draw";
    if (box.hidden) return;
    var drawn = !!s.drawn_at, begins = Date.parse(s.start_at);
    li.dataset.draw = drawn ? "DRAWN" : "PENDING";
    li.querySelector('[data-role="draw-when"]').textContent = drawn ? "Drawn " + new Date(s.drawn_at).toLocaleString() + "." :
      t < begins ? "The draw is in " + duration(begins - t) + ", at the start." : "The draw is being made…";
    li.querySelector('[data-role="draw-commitment"]').textContent = s.draw_commitment || "";
    li.querySelector('[data-role="draw-seed-line"]').hidden = !drawn;
    li.querySelector('[data-role="draw-seed"]').textContent = s.draw_seed || "";
    li.querySelector('[data-role="draw-verify"]').textContent = drawn ?
      "Check it: the seed's SHA-256 is the commitment, and the order follows from the seed and the registrants:" :
      "The seed is shown after the draw; its hash, published now, fixes it in advance. Then check the draw with";
    li.querySelector('[data-role="draw-verify-cmd"]').textContent = "seckill draw verify --session " + s.id;
  }

  // register signs the shopper up for a reserved sale or a draw, after
  // the captcha and the ticket when the sale requires them. Registering
  // again is harmless (the API answers the same), so a doubt is settled by
  // a click.
  function register(li) {
    var s = li._session;
    if (!s || !begin()) return;
    withTicket(s, "Continue to register", function (ticket) {
      var tok = token();
      var headers = ticket ? { "X-Seckill-Ticket": ticket } : undefined;
      // A sale of sizes registers for the size chosen.
      var item = chosenItem(li, s);
      var what = s.title + (item ? " in " + item.title : "");
      call("POST", "/api/v1/sessions/" + s.id + "/registrations", item ? { sku_id: item.sku_id } : undefined, true, headers).then(function (r) {
        busy = false;
        if (r.ok) {
          showMessage(s.mode === "draw" ?
            "You are registered for the draw of " + what + ". The draw is at the start: come back then to see whether you won." :
            "You are registered for " + what + ". Come back when it starts: only registered shoppers may buy.", "OK");
          learnRegistration(s.id, tok, r.data.status, r.data.sku_id);
        } else {
          showError(r.error);
        }
        tick();
      });
    });
  }

  // ---- the order ----------------------------------------------------------

  function setOrder(o) {
    order = o;
    localStorage.setItem(ORDER_KEY, o.order_no);
    renderOrder();
  }

  function forgetOrder() {
    clearTimeout(pollTimer);
    order = null;
    localStorage.removeItem(ORDER_KEY);
    renderOrder();
  }

  // resumeOrder picks up the order of an earlier visit (or of before a
  // sign-in) and polls it.
  function resumeOrder() {
    var no = localStorage.getItem(ORDER_KEY);
    if (!no || !token()) return;
    if (!order || order.order_no !== no) order = { order_no: no, status: "" };
    renderOrder();
    schedulePoll(0);
  }

  function schedulePoll(ms) {
    clearTimeout(pollTimer);
    pollTimer = setTimeout(poll, ms);
  }

  function poll() {
    if (!order || document.hidden) return; // resumed when the page is shown
    var no = order.order_no;
    call("GET", "/api/v1/orders/" + encodeURIComponent(no), undefined, true).then(function (r) {
      if (!order || order.order_no !== no) return;
      if (!r.ok) {
        showError(r.error);
        if (r.error.code === "UNAUTHENTICATED" || r.error.code === "NOT_FOUND") return; // until the shopper acts
        schedulePoll(Math.max(POLL_SLOW, (r.error.retry || 0) * 1000));
        return;
      }
      var was = order.status;
      order = r.data;
      // A note such as "payment sent" has done its job once the status moved.
      if (order.status !== was && $("message").dataset.code === "OK") clearMessage();
      if (order.status !== was) loadMyOrders();
      renderOrder();
      if (FINAL[order.status]) {
        if (order.status !== was) refreshSoon(); // a close gave stock back
        return;
      }
      var wait = order.status === "QUEUED" || Date.now() < fastUntil ? POLL_FAST : POLL_SLOW;
      // A long line of orders still to create: the API says when to look again.
      if (order.status === "QUEUED" && r.retry > 0) wait = Math.max(wait, r.retry * 1000);
      if (order.status === "WAIT_PAY" && order.pay_deadline) {
        // Look again right after the deadline, when the order closes.
        var left = Date.parse(order.pay_deadline) - now();
        if (left >= 0 && left + 1000 < wait) wait = left + 1000;
      }
      schedulePoll(wait);
    });
  }

  function renderOrder() {
    var box = $("order");
    if (!order) {
      box.hidden = true;
      box.dataset.orderNo = "";
      box.dataset.status = "";
      return;
    }
    var st = order.status || "";
    box.hidden = false;
    box.dataset.orderNo = order.order_no;
    box.dataset.status = st;
    $("order-no").textContent = order.order_no;
    var badge = $("order-status");
    badge.textContent = st ? st.replace("_", " ") : "loading…";
    badge.dataset.status = st;
    var hint = STATUS_HINTS[st] || "";
    // The queue view: at the peak, orders wait for their turn to be created.
    if (st === "QUEUED" && order.queued > 1) hint += " " + order.queued + " orders of this sale are being created; yours is among them.";
    if (st === "WAIT_PAY" || st === "QUEUED") hint += " Pay at the payment provider's checkout; this page updates when the payment arrives.";
    $("order-hint").textContent = hint;
    $("pay-btn").hidden = !(st === "WAIT_PAY" || st === "QUEUED");
    $("cancel-btn").hidden = st !== "WAIT_PAY";
    $("pay-btn").disabled = $("cancel-btn").disabled = busy;
    $("order-dismiss").hidden = !FINAL[st];
    renderDeadline();
  }

  function renderDeadline() {
    if (!order) return;
    var detail = "";
    if (order.quantity) detail = order.quantity + (order.quantity === 1 ? " unit" : " units");
    if (order.amount_cents) detail += ", total " + money(order.amount_cents, order.currency);
    if (order.status === "WAIT_PAY" && order.pay_deadline) {
      var left = Date.parse(order.pay_deadline) - now();
      detail += left > 0 ? " · pay within " + duration(left) : " · pay deadline passed";
    }
    $("order-detail").textContent = detail;
  }

  function orderAction(path, done) {
    if (!order || busy) return;
    busy = true;
    renderOrder();
    call("POST", path, {}, true).then(function (r) {
      busy = false;
      if (r.ok) {
        clearMessage();
        if (done) showMessage(done, "OK");
        fastUntil = Date.now() + FAST_FOR;
        schedulePoll(300);
      } else {
        showError(r.error);
      }
      renderOrder();
    });
  }

  // Pay opens the order's payment at the provider (the same one on every
  // click) and sends the shopper to its checkout page; coming back, the
  // page finds the order again and polls until the payment arrives.
  $("pay-btn").addEventListener("click", function () {
    if (!order || busy) return;
    busy = true;
    renderOrder();
    call("POST", "/api/v1/orders/" + encodeURIComponent(order.order_no) + "/payment", {}, true).then(function (r) {
      busy = false;
      if (r.ok && r.data.checkout_url) {
        window.location.assign(r.data.checkout_url);
        return;
      }
      if (r.ok) {
        // A provider without a hosted page (Stripe without
        // SECKILL_STRIPE_CHECKOUT_URL): the shop's own payment form takes
        // the client_secret; this page has none to send the shopper to.
        showMessage("The payment " + r.data.payment_id + " is open at " + r.data.provider +
          ", but this shop has no payment page configured for it.", "NO_CHECKOUT_PAGE");
      } else {
        showError(r.error);
      }
      renderOrder();
    });
  });
  $("cancel-btn").addEventListener("click", function () {
    orderAction("/api/v1/orders/" + encodeURIComponent(order.order_no) + "/cancel", "Cancelling your order…");
  });
  $("order-dismiss").addEventListener("click", function () {
    clearMessage();
    forgetOrder();
  });

  // ---- the human check (sessions that require a captcha) --------------------

  var captcha = null; // {sessionID, label, then, id}: withTicket's, for the request it guards

  function drawCaptcha() {
    $("captcha-answer").value = "";
    $("captcha-submit").textContent = captcha.label;
    call("POST", "/api/v1/sessions/" + captcha.sessionID + "/captcha", {}, true).then(function (r) {
      if (!captcha) return;
      if (!r.ok) {
        showError(r.error);
        endCaptcha();
        return;
      }
      captcha.id = r.data.captcha_id;
      captcha.audio = r.data.audio;
      $("captcha-img").src = r.data.image;
      $("captcha").dataset.captchaId = r.data.captcha_id;
      $("captcha").hidden = false;
      $("captcha-answer").focus();
    });
  }

  function endCaptcha() {
    captcha = null;
    $("captcha").hidden = true;
    $("captcha").dataset.captchaId = "";
    busy = false;
    tick();
  }

  $("captcha-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    if (!captcha || !captcha.id) return;
    var c = captcha;
    var body = { captcha_id: c.id, captcha_answer: $("captcha-answer").value.trim() };
    call("POST", "/api/v1/sessions/" + c.sessionID + "/ticket", body, true).then(function (r) {
      if (captcha !== c) return;
      if (!r.ok) {
        showError(r.error);
        // Each captcha is checked once: a wrong answer needs a new one.
        if (r.error.code === "FORBIDDEN") drawCaptcha(); else endCaptcha();
        return;
      }
      clearMessage();
      captcha = null;
      $("captcha").hidden = true;
      c.then(r.data.ticket);
    });
  });
  $("captcha-new").addEventListener("click", function () { if (captcha) drawCaptcha(); });
  $("captcha-cancel").addEventListener("click", endCaptcha);
  $("captcha-audio").addEventListener("click", function () {
    if (!captcha || !captcha.audio) return;
    // The audio needs the shopper's token: fetched, then played from memory.
    fetch(captcha.audio, { headers: { "Authorization": "Bearer " + token() }, cache: "no-store" }).then(function (res) {
      return res.ok ? res.blob() : null;
    }).then(function (b) {
      if (b) new Audio(URL.createObjectURL(b)).play();
    }, function () {});
  });

  // ---- my orders ----------------------------------------------------------

  var myCursor = ""; // where the next page starts ("" = no more)

  // loadMyOrders shows the shopper's orders, newest first (the first page;
  // "More" appends the next). Asked on sign-in, when the current order's
  // status moves, and on Refresh: never on a timer.
  function loadMyOrders(more) {
    if (!token()) {
      renderMyOrders([], false);
      return;
    }
    var path = "/api/v1/orders?limit=10" + (more && myCursor ? "&cursor=" + encodeURIComponent(myCursor) : "");
    call("GET", path, undefined, true).then(function (r) {
      if (!r.ok) {
        if (r.error.code !== "UNAUTHENTICATED") showError(r.error);
        return;
      }
      myCursor = r.data.next_cursor || "";
      renderMyOrders(r.data.orders || [], more);
    });
  }

  function renderMyOrders(list, append) {
    var ul = $("my-orders-list");
    if (!append) ul.textContent = "";
    list.forEach(function (o) {
      var li = $("my-order-template").content.firstElementChild.cloneNode(true);
      li.dataset.orderNo = o.order_no;
      li.dataset.status = o.status;
      li.querySelector('[data-role="no"]').textContent = o.order_no;
      var badge = li.querySelector('[data-role="status"]');
      badge.textContent = o.status.replace("_", " ");
      badge.dataset.status = o.status;
      li.querySelector('[data-role="detail"]').textContent = "sale " + o.session_id + " · " + o.quantity +
        (o.quantity === 1 ? " unit" : " units") + ", total " + money(o.amount_cents, o.currency) + " · " + new Date(o.created_at).toLocaleString();
      li.querySelector('[data-role="open"]').addEventListener("click", function () {
        clearMessage();
        setOrder(o);
        if (!FINAL[o.status]) schedulePoll(0);
      });
      ul.appendChild(li);
    });
    $("my-orders-empty").hidden = ul.children.length > 0;
    $("my-orders-more").hidden = !myCursor;
  }

  $("my-orders-refresh").addEventListener("click", function () { loadMyOrders(false); });
  $("my-orders-more").addEventListener("click", function () { loadMyOrders(true); });

  // ---- start --------------------------------------------------------------

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) {
      loadSessions();
      if (order && !FINAL[order.status]) schedulePoll(0);
    }
  });

  renderIdentity();
  // The device cookie (HttpOnly, signed by the API): purchases from this
  // browser carry it, for the per-device limit and the shop's risk check.
  fetch("/api/v1/device", { credentials: "same-origin" }).catch(function () {});
  loadSessions();
  resumeOrder();
  loadMyOrders(false);
  setInterval(tick, 1000);
})();

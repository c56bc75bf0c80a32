// seckill shop: the server's clock as the page estimates it, for the
// countdowns and for the time each Idempotency-Key is stamped with. The
// API refuses a UUIDv7 key stamped more than a second ahead of its clock,
// and a key's time is what keeps a refused key refused (README,
// "Idempotency-Key"), so the estimate must stay well inside that second
// for the host's clock to drift (or be set) by half of it between two
// answers. Loaded before app.js; shop/clock_browser_test.go runs it on
// made-up clocks.
(function () {
  "use strict";

  // STAMP_FRESH is how long an answer's millisecond stamp is preferred to
  // the Date headers of the answers after it: the page reads the stamped
  // session list every few seconds.
  var STAMP_FRESH = 60000;

  // SeckillClock estimates the server's clock minus the host's from the
  // API's answers. localNow is the host's clock (Date.now when omitted).
  function SeckillClock(localNow) {
    this.localNow = localNow || function () { return Date.now(); };
    this.offset = 0;
    this.stampedAt = -Infinity; // the host's time of the last stamped answer
  }

  // sample reads the headers of one answer, asked at sent and answered at
  // received (the host's clock). X-Seckill-Time is the server's clock in
  // milliseconds while it answered: the offset is then known to within
  // half the round trip. Date has whole seconds only (the middle of its
  // second is the guess, off by up to half a second and more), so it
  // counts only while no stamp is fresh. A copy a cache kept (Age) says
  // nothing about the clock now.
  SeckillClock.prototype.sample = function (headers, sent, received) {
    if (headers.get("Age")) return;
    var mid = (sent + received) / 2;
    var stamp = parseInt(headers.get("X-Seckill-Time") || "", 10);
    if (!isNaN(stamp)) {
      this.offset = stamp - mid;
      this.stampedAt = received;
      return;
    }
    if (received - this.stampedAt < STAMP_FRESH) return;
    var date = Date.parse(headers.get("Date") || "");
    if (!isNaN(date)) this.offset = date + 500 - mid;
  };

  // now is the server's clock, as estimated, in Unix milliseconds.
  SeckillClock.prototype.now = function () { return this.localNow() + this.offset; };

  window.SeckillClock = SeckillClock;
})();

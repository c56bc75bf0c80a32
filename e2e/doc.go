// Package e2e holds the system tests: each sells through the whole stack
// (the HTTP API, Redis admission, Temporal workflows on a real worker,
// MySQL) the way a shopper, a payment provider and ops meet it, including
// the drills that break one part mid-sale, and ends by checking the
// invariants of the design. Unit tests of the HTTP handlers stay in api/;
// the stack each test runs on comes from internal/testenv, wired by
// internal/app as the binary is.
package e2e

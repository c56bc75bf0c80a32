package workflows

// Temporal's test environment gives a regular activity 10 attempts, while
// a local activity retries for its whole budget (a day of skipped time,
// ~2,900 attempts). The tests give the local steps the same 10 attempts,
// so the give-up paths (a payment that cannot be recorded, a compensation
// that cannot finish) take as many attempts whichever shape a run takes.
func init() {
	p := *localCompensationOptions.RetryPolicy
	p.MaximumAttempts = 10
	localCompensationOptions.RetryPolicy = &p
}

package workflows

// A local activity retries for its whole budget, which for the settling
// steps is a day of skipped time (~2,900 attempts) in Temporal's test
// environment. The tests give them 10 attempts, so the give-up paths (a
// payment that cannot be recorded, a compensation that cannot finish)
// end after a count of attempts a test can name.
func init() {
	p := *settleOptions.RetryPolicy
	p.MaximumAttempts = 10
	settleOptions.RetryPolicy = &p
}

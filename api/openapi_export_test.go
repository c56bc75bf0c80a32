package api

// ErrorStatusesForTest returns statusOf: error code → HTTP status.
func ErrorStatusesForTest() map[string]int {
	out := map[string]int{}
	for code, status := range statusOf {
		out[code] = status
	}
	return out
}

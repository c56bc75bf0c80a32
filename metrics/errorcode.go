package metrics

// ErrorCode is the error code of an error answer's body
// ({"code":"SOLD_OUT",...}, "error" when it names none), read as the
// admission funnel reads it: without decoding or copying.
func ErrorCode(body []byte) []byte { return admissionOutcome(body) }

package api

import (
	"encoding/json"
	"unicode/utf8"
)

// appendErrorJSON appends b as JSON, byte for byte what encoding/json writes,
// without reflection for the plain strings nearly every body holds: every
// loser of a sale gets an error body, and encoding it through reflection
// was the largest cost of the sold-out answer after the socket.
func appendErrorJSON(dst []byte, b ErrorBody) []byte {
	dst = append(dst, `{"code":`...)
	dst = appendJSONString(dst, b.Code)
	dst = append(dst, `,"message":`...)
	dst = appendJSONString(dst, b.Message)
	dst = append(dst, `,"trace_id":`...)
	dst = appendJSONString(dst, b.TraceID)
	return append(dst, '}')
}

// appendJSONString appends s as a JSON string the way encoding/json does:
// as it is when no byte needs an escape (encoding/json's HTML-safe set),
// else through encoding/json itself.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			quoted, _ := json.Marshal(s)
			return append(dst, quoted...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

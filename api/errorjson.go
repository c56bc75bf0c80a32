package api

import "unicode/utf8"

// appendErrorJSON appends b as JSON, byte for byte what encoding/json writes
// (HTML-safe escapes, invalid UTF-8 as U+FFFD), without reflection: every
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

// appendJSONString appends s as a JSON string the way encoding/json does.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default: // other control characters, and <, >, & for HTML safety
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		// U+2028 and U+2029 end lines in JavaScript: escaped, as encoding/json does.
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

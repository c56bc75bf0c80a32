package admission

import (
	"time"

	"github.com/google/uuid"
)

// KeyTime returns the creation time a UUIDv7 key carries (RFC 9562: its
// first 48 bits are Unix milliseconds), false for any other key.
func KeyTime(key string) (time.Time, bool) {
	u, err := uuid.Parse(key)
	if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 {
		return time.Time{}, false
	}
	return time.Unix(u.Time().UnixTime()).Truncate(time.Millisecond), true
}

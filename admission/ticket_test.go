package admission

import (
	"errors"
	"testing"
	"time"

	"github.com/seckill/seckill"
)

func FuzzVerifyTicket(f *testing.F) {
	keys := derivedKeys([][]byte{[]byte("fuzz-secret"), []byte("fuzz-old")}, ticketPurpose)
	now := time.Unix(1_800_000_000, 0)
	f.Add(makeTicket(keys[0], 1, 2, now.Add(time.Minute)))
	f.Add("")
	f.Add("..")
	f.Fuzz(func(t *testing.T, raw string) {
		_, _, err := verifyTicket(keys, raw, 1, 2, now)
		var e *seckill.Error
		if err != nil && (!errors.As(err, &e) || e.Code != seckill.EFORBIDDEN) {
			t.Fatalf("want a %s error, got %v", seckill.EFORBIDDEN, err)
		}
	})
}

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/seckill/seckill/admission"
)

// seckill key prints one UUIDv7 a line, stamped now, fresh each time: what
// the admission takes as an Idempotency-Key.
func TestKeyPrintsAUUIDv7(t *testing.T) {
	seen := map[string]bool{}
	for range 2 {
		before := time.Now()
		out, err := execute(context.Background(), "key")
		if err != nil {
			t.Fatal(err)
		}
		line, rest, _ := strings.Cut(out, "\n")
		if rest != "" {
			t.Fatalf("want one line, got %q", out)
		}
		k, err := uuid.Parse(line)
		if err != nil || k.Version() != 7 || k.Variant() != uuid.RFC4122 || len(line) != 36 {
			t.Fatalf("%q is not a UUIDv7 in its canonical form (%v)", line, err)
		}
		// As the admission reads it (a minute's slack: the stamp, not a timing).
		at, ok := admission.KeyTime(line)
		if !ok || at.Before(before.Add(-time.Minute)) || at.After(time.Now().Add(time.Minute)) {
			t.Errorf("%s is stamped %s (%v), not now", k, at, ok)
		}
		if seen[line] {
			t.Errorf("%s printed twice", line)
		}
		seen[line] = true
	}
}

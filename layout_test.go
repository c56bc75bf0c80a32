package seckill_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The bounds a reader of the code relies on (docs/ARCHITECTURE.md): no
// source file over 500 lines, api/ under 2,500 lines of decoding, calling
// and encoding, a README that stays a guide (400 lines at most). api/ had
// crept past its bound unnoticed; a change that crosses one fails here.
func TestLayoutStaysWithinItsBounds(t *testing.T) {
	out, err := exec.Command("git", "ls-files", "*.go", "README.md").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var api int
	for _, path := range strings.Fields(string(out)) {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		n := bytes.Count(body, []byte("\n"))
		switch {
		case path == "README.md":
			if n > 400 {
				t.Errorf("README.md has %d lines: at most 400 (details go in docs/)", n)
			}
		case n > 500:
			t.Errorf("%s has %d lines: at most 500", path, n)
		}
		if filepath.Dir(path) == "api" {
			api += n
		}
	}
	if api >= 2500 {
		t.Errorf("api/ has %d non-test lines: under 2,500 (rules belong to the use cases, api/ decodes, calls and encodes)", api)
	}
}

package main

import (
	"os/exec"
	"strings"
	"testing"
)

// temporalSDKInternal is the one package of seckill's dependencies that
// imports testify.
const temporalSDKInternal = "go.temporal.io/sdk/internal"

// The binary a merchant deploys links the product only: the lab (bench,
// drill, chaos, capacity) is cmd/seckill-lab's, and the test environment,
// the store contracts and the test libraries are the tests'.
func TestBinaryLinksNoLabAndNoTestCode(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, ".")
	var errOut strings.Builder
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, &errOut)
	}
	const self = "github.com/seckill/seckill/"
	banned := []string{
		self + "bench", self + "drill", self + "chaos", self + "capacity",
		self + "internal/testenv", self + "internal/storetest",
		"github.com/Shopify/toxiproxy", "github.com/chromedp", "github.com/compose-spec/compose-go",
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		for _, b := range banned {
			if pkg == b || strings.HasPrefix(pkg, b+"/") {
				t.Errorf("seckill links %s", pkg)
			}
		}
		// The Temporal SDK's go.temporal.io/sdk/internal holds its test
		// suite (testsuite is a front for it) and imports testify's mock
		// and require: every program that uses the SDK links them
		// (`go list -deps` shows no other path). No other package may.
		if strings.HasPrefix(pkg, "github.com/stretchr/testify/") || pkg == temporalSDKInternal {
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if strings.HasPrefix(imp, "github.com/stretchr/testify/") {
				t.Errorf("seckill links testify: %s imports %s", pkg, imp)
			}
		}
	}
}

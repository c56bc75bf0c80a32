package testenv

import (
	"context"
	"os"
	"testing"

	"github.com/chromedp/chromedp"
)

// ChromiumPath is where the browser tests expect Chromium (make test
// installs it: scripts/deps.sh test).
const ChromiumPath = "/usr/bin/chromium"

// Chromium starts a fresh headless Chromium for t (its own profile, so its
// own localStorage) with a window of width × height, and returns its
// context; it is stopped when t ends. A missing Chromium fails the test.
func Chromium(t *testing.T, width, height int) context.Context {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		t.Fatalf("Chromium is not installed at %s (%v): the browser tests need it.\n"+
			"Install it with: apt-get install -y --no-install-recommends chromium   (make test does this: scripts/deps.sh test)", ChromiumPath, err)
	}
	// The flags keep Chromium off the network (it is closed here, and it
	// would otherwise retry its own services at every start) and let it
	// run as root without a GPU.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ChromiumPath),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(width, height),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium (%s): %v", ChromiumPath, err)
	}
	return ctx
}

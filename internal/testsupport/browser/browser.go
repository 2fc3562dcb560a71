// Package browser starts a headless Chromium for real-browser tests, with
// chromedp. It finds the browser in $LINKD_CHROMIUM, else as chromium,
// chromium-browser or google-chrome on PATH (Debian: apt-get install
// chromium; .ci/run installs it), and skips the test when there is none.
package browser

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Env names the variable that overrides where Chromium is.
const Env = "LINKD_CHROMIUM"

// Find returns the path of the Chromium to use.
func Find() (string, error) {
	if p := os.Getenv(Env); p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			return "", errors.New("$" + Env + "=" + p + ": " + err.Error())
		}
		return path, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path, nil
		}
	}
	return "", errors.New("none of chromium, chromium-browser, google-chrome is on PATH and $" + Env + " is not set")
}

// Allocator returns a chromedp allocator context for a headless Chromium:
// --headless=new, --no-sandbox (CI runs as root, where the sandbox does not
// start), --disable-gpu, and chromedp's other defaults (a temporary profile
// among them). It is cancelled when t ends, which stops the browser and
// removes the profile. Without a Chromium, t is skipped.
func Allocator(t testing.TB) context.Context {
	t.Helper()
	path, err := Find()
	if err != nil {
		t.Skip("internal/testsupport/browser: no Chromium (apt-get install chromium): " + err.Error())
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Flag("headless", "new"),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
	)
	ctx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	return ctx
}

// Start starts a browser (Allocator) and returns the context of its first
// tab; chromedp.NewContext(ctx) opens further tabs in the same browser. It
// has no deadline, as the browser lives as long as it (chromedp gives up on
// a browser that does not answer within its own WSURLReadTimeout): bound
// each action with a context.WithTimeout derived from it.
func Start(t testing.TB) context.Context {
	t.Helper()
	path, _ := Find()
	ctx, cancel := chromedp.NewContext(Allocator(t))
	t.Cleanup(cancel)
	began := time.Now()
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("internal/testsupport/browser: start %s: %v", path, err)
	}
	t.Logf("internal/testsupport/browser: %s started in %v", path, time.Since(began).Round(time.Millisecond))
	return ctx
}

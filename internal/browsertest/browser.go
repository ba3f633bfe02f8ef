// Package browsertest drives a headless Chromium for the tests of the web
// view and of the server: Debian's chromium, started once per test, whose
// script and console errors fail the test.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chromium finds Debian's chromium: on PATH, or at /usr/bin/chromium.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	return ""
}

// Browser is a headless chromium tab, closed when the test ends. Script
// errors and console errors on the page fail the test.
type Browser struct {
	T   *testing.T
	Ctx context.Context

	mu   *sync.Mutex
	errs *[]string
}

// In is the browser reporting to t (a subtest).
func (b *Browser) In(t *testing.T) *Browser {
	c := *b
	c.T = t
	return &c
}

// New starts chromium for t, with the extra options given (command-line
// flags, say). Without chromium installed the test is skipped, naming the
// package that brings it.
func New(t *testing.T, extra ...chromedp.ExecAllocatorOption) *Browser {
	t.Helper()
	path := chromium()
	if path == "" {
		t.Skip("chromium is not installed (apt-get install chromium): the browser tests need it")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.WindowSize(1280, 1000))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	opts = append(opts, extra...)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	b := &Browser{T: t, Ctx: ctx, mu: &sync.Mutex{}, errs: &[]string{}}
	t.Cleanup(func() {
		cancel()
		acancel()
		b.mu.Lock()
		defer b.mu.Unlock()
		assert.Empty(t, *b.errs, "errors in the page")
	})
	require.NoError(t, chromedp.Do(ctx), "chromium did not start")
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			*b.errs = append(*b.errs, msg+" at "+d.URL)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				*b.errs = append(*b.errs, strings.Join(parts, " "))
			}
		}
	}))
	return b
}

// Do runs the steps with a generous deadline: the machine is shared.
func (b *Browser) Do(steps ...chromedp.Action[chromedp.Void]) {
	b.T.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, time.Minute)
	defer cancel()
	require.NoError(b.T, chromedp.Do(ctx, steps...))
}

// Eval evaluates a JavaScript expression.
func Eval[T any](b *Browser, expr string, opts ...chromedp.EvaluateOption) T {
	b.T.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	require.NoError(b.T, err, expr)
	return v
}

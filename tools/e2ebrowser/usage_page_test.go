//go:build browser

package e2ebrowser

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/ompgo/omp/internal/broker"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/vault"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/usage"
)

// fakeUsage answers the Anthropic and ChatGPT-Codex usage endpoints for
// the two seeded accounts (the only fakes: remote providers).
func fakeUsage(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/anthropic/api/oauth/usage" && auth == "Bearer access-alice":
			resets := time.Now().Add(3*time.Hour + 5*time.Minute).UTC().Format(time.RFC3339)
			io.WriteString(w, `{"five_hour":{"utilization":42,"resets_at":"`+resets+`"},`+
				`"seven_day":{"utilization":91,"resets_at":"`+resets+`"},"account_id":"acct-alice","email":"alice@example.com"}`)
		case r.URL.Path == "/codex/backend-api/wham/usage" && auth == "Bearer access-bob":
			io.WriteString(w, `{"plan_type":"pro","rate_limit":{"allowed":true,"limit_reached":false,`+
				`"primary_window":{"used_percent":12,"limit_window_seconds":18000,"reset_after_seconds":7200},`+
				`"secondary_window":{"used_percent":64,"limit_window_seconds":604800,"reset_after_seconds":259200}},`+
				`"rate_limit_reset_credits":{"available_count":2}}`)
		default:
			http.Error(w, `{"error":"unexpected"}`, http.StatusUnauthorized)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// startBroker runs the real broker wiring on 127.0.0.1:0 with its usage
// endpoints pointed at fake and two OAuth accounts uploaded.
func startBroker(t *testing.T, fake string) (url, token string) {
	t.Helper()
	dir := t.TempDir()
	m := &broker.Main{Config: broker.Config{
		Bind: "127.0.0.1:0", DBPath: filepath.Join(dir, "vault.db"), TokenPath: filepath.Join(dir, "auth-broker.token"),
		KeyPath: filepath.Join(dir, "vault.key"), Logger: slog.New(slog.DiscardHandler), RefreshInterval: time.Hour,
		URLs: func(provider, kind string) string {
			switch {
			case kind == config.UsageURL && provider == "anthropic":
				return fake + "/anthropic/api/oauth"
			case kind == config.UsageURL && provider == "openai-codex":
				return fake + "/codex/backend-api"
			}
			return fake + "/nothing-else"
		},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(m.Config.TokenPath)
	if err != nil {
		t.Fatal(err)
	}
	token = strings.TrimSpace(string(raw))
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		<-done
		m.Close()
	})
	far := time.Now().Add(24 * time.Hour).UnixMilli()
	c := brokerclient.New(m.URL(), token, nil)
	alice := vault.Credential{Type: vault.TypeOAuth, Access: "access-alice", Refresh: "refresh-alice", Expires: far, Email: "alice@example.com"}
	// Older samples of alice's 5-hour window, as earlier probes would have
	// recorded them, so the chart has a line to draw.
	var past []vault.UsageHistoryEntry
	for i := range 12 {
		f := float64(i%4) / 4
		past = append(past, vault.UsageHistoryEntry{RecordedAt: time.Now().Add(-time.Duration(12-i) * 12 * time.Hour).UnixMilli(),
			Provider: "anthropic", AccountKey: usage.CacheIdentity(alice), Email: "alice@example.com",
			LimitID: "anthropic:5h", Label: "Claude 5 Hour", WindowLabel: "5 Hour", UsedFraction: &f})
	}
	if err := m.Store.RecordUsage(ctx, past); err != nil {
		t.Fatal(err)
	}
	for _, up := range []struct {
		provider string
		cred     vault.Credential
	}{
		{"anthropic", alice},
		{"openai-codex", vault.Credential{Type: vault.TypeOAuth, Access: "access-bob", Refresh: "refresh-bob", Expires: far, Email: "bob@example.org", AccountID: "acct-bob"}},
	} {
		if _, err := c.Upload(ctx, up.provider, up.cred); err != nil {
			t.Fatal(err)
		}
	}
	return m.URL(), token
}

func chromiumPath(t *testing.T) string {
	for _, name := range []string{os.Getenv("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH: `make e2e-browser` installs it (apt-get install -y chromium)")
	return ""
}

// TestUsagePageInBrowser loads GET /usage in headless chromium, enters the
// bearer once, and checks the page draws the broker's accounts, quota
// bars, reset countdowns and the history chart, keeps the token for the
// tab, and fetches nothing from anywhere but the broker.
func TestUsagePageInBrowser(t *testing.T) {
	exe := chromiumPath(t)
	fake := fakeUsage(t)
	base, token := startBroker(t, fake.URL)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1200, 900),
		chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancel()
	ctx, cancelT := context.WithTimeout(bctx, 90*time.Second)
	defer cancelT()

	var mu sync.Mutex
	var requested []string
	chromedp.ListenTarget(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			requested = append(requested, e.Request.URL)
			mu.Unlock()
		}
	})

	var accounts, history, stored, status string
	var bars, polylines, points, countdowns int
	err := chromedp.Run(ctx,
		network.Enable(),
		chromedp.Navigate(base+"/usage"),
		chromedp.WaitVisible("#token", chromedp.ByID),
		chromedp.SendKeys("#token", token, chromedp.ByID),
		chromedp.Click(`#login button[type="submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`section.account[data-provider="openai-codex"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#history svg.chart polyline`, chromedp.ByQuery),
		chromedp.Sleep(1100*time.Millisecond), // one countdown tick
		chromedp.Text("#accounts", &accounts, chromedp.ByID),
		chromedp.Text("#history", &history, chromedp.ByID),
		chromedp.Text("#status", &status, chromedp.ByID),
		chromedp.Evaluate(`document.querySelectorAll(".limit .bar > span").length`, &bars),
		chromedp.Evaluate(`document.querySelectorAll("#history svg.chart polyline").length`, &polylines),
		chromedp.Evaluate(`document.querySelectorAll("#history svg.chart circle").length`, &points),
		chromedp.Evaluate(`[...document.querySelectorAll(".countdown")].filter(c => /^resets in \d/.test(c.textContent)).length`, &countdowns),
		chromedp.Evaluate(`sessionStorage.getItem("omp-usage-token")`, &stored),
	)
	if err != nil {
		var body string
		dctx, dcancel := context.WithTimeout(bctx, 5*time.Second)
		_ = chromedp.Run(dctx, chromedp.Evaluate(`document.body.innerText`, &body))
		dcancel()
		t.Fatalf("browser: %v; the page shows:\n%s", err, body)
	}
	for _, want := range []string{
		"Anthropic", "alice@example.com", "Claude 5 Hour", "42.0% used", "Claude 7 Day", "91.0% used",
		"Openai Codex", "bob@example.org", "plan: pro", "✦ 2 saved resets", "12.0% used", "64.0% used",
	} {
		if !strings.Contains(accounts, want) {
			t.Errorf("page lacks %q; it shows:\n%s", want, accounts)
		}
	}
	if bars != 4 || countdowns != 4 {
		t.Errorf("bars %d, live countdowns %d; want 4 and 4", bars, countdowns)
	}
	// 4 series; alice's 5-hour one has the 12 seeded samples plus the probe.
	if polylines != 4 || points != 16 || !strings.Contains(history, "alice@example.com") || !strings.Contains(history, "Claude 5 Hour") {
		t.Errorf("history chart: %d lines, %d points, text %q", polylines, points, history)
	}
	if stored != token {
		t.Error("the token is not kept in sessionStorage")
	}
	if !strings.HasPrefix(status, "Updated ") {
		t.Errorf("status %q", status)
	}

	// Asked once: a reload goes straight to the data.
	var loginHidden bool
	if err := chromedp.Run(ctx,
		chromedp.Reload(),
		chromedp.WaitVisible(`section.account[data-provider="anthropic"]`, chromedp.ByQuery),
		chromedp.Evaluate(`document.getElementById("login").hidden`, &loginHidden),
	); err != nil || !loginHidden {
		t.Fatalf("after reload: err %v, login form hidden %v", err, loginHidden)
	}

	var png []byte
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(t.TempDir(), "usage-page.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil || len(png) < 1000 {
		t.Fatalf("screenshot %d bytes: %v", len(png), err)
	}
	if keep := os.Getenv("OMP_E2E_SCREENSHOT"); keep != "" {
		_ = os.WriteFile(keep, png, 0o644)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))

	// A wrong token is refused and asked for again.
	var relogin string
	if err := chromedp.Run(ctx,
		chromedp.Evaluate(`sessionStorage.setItem("omp-usage-token", "wrong"); true`, nil),
		chromedp.Reload(),
		chromedp.WaitVisible("#token", chromedp.ByID),
		chromedp.Text("#status", &relogin, chromedp.ByID),
	); err != nil || !strings.Contains(relogin, "not accepted") {
		t.Errorf("wrong token: %v %q", err, relogin)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, u := range requested {
		if !strings.HasPrefix(u, base+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the page fetched %s", u)
		}
	}
}

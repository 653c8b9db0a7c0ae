package usageview

import (
	"encoding/json"
	"github.com/ompgo/omp/pkg/llm/llmtest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/pick"
)

// fixedNow is the clock of every golden file.
const fixedNow = int64(1_765_500_000_000)

func f64p(v float64) *float64 { return &v }
func i64p(v int64) *int64     { return &v }
func f(v bool) *bool          { return &v }

func pctLimit(id, label, windowID, windowLabel string, dur int64, used float64, resetIn int64) vault.UsageLimit {
	l := vault.UsageLimit{ID: id, Label: label, Scope: vault.UsageScope{Provider: strings.SplitN(id, ":", 2)[0], WindowID: windowID},
		Amount: vault.UsageAmount{Used: f64p(used), Limit: f64p(100), UsedFraction: f64p(used / 100), Unit: "percent"}}
	l.Window = &vault.UsageWindow{ID: windowID, Label: windowLabel}
	if dur > 0 {
		l.Window.DurationMs = i64p(dur)
	}
	if resetIn > 0 {
		l.Window.ResetsAt = i64p(fixedNow + resetIn)
	}
	return l
}

// goldenReports covers what the text output shows: two Anthropic accounts
// (one with a missing limit and a model-scoped cap, one with a long email
// and an org), an Antigravity account whose shared quota is reported
// twice, saved resets (Claude: none usable, and why; Codex: one of two
// usable now), a Codex account with a plan, an exhausted window and a long
// additional-limit label, an account without a report, absolute units, a
// report fetched long ago, and control characters from upstream.
func goldenReports() ([]vault.UsageReport, []Account) {
	const h = 3_600_000
	exhausted := pctLimit("openai-codex:primary", "Codex 5 Hour", "5h", "5 hours", 5*h, 100, 2*h+17*60_000)
	exhausted.Status = vault.StatusExhausted
	spark := pctLimit("openai-codex:spark:primary", "5 hours (GPT-5.3-Codex-Spark research preview with a long name)", "5h", "5 hours", 5*h, 12.5, 4*h)
	spark.Scope.Tier = "spark"
	opus := pctLimit("anthropic:7d:opus", "Claude 7 Day (Opus)", "7d", "7 Day", 7*24*h, 5, 4*24*h+2*h)
	opus.Scope.Tier = "opus"
	shared := pctLimit("google-antigravity:anthropic:default:3p-weekly", "Claude & GPT (shared)", "weekly", "Weekly", 7*24*h, 80, 3*24*h)
	shared.Scope.SharedGroup = "3p-weekly:weekly"
	sharedGPT := shared
	sharedGPT.ID = "google-antigravity:openai:default:3p-weekly"
	gemini := pctLimit("google-antigravity:google:default:gemini-5h", "Gemini", "5h", "5 Hour", 5*h, 25, 2*h)
	reports := []vault.UsageReport{
		{Provider: "anthropic", FetchedAt: fixedNow - 30_000, Metadata: map[string]any{"email": "alice@example.com", "endpoint": "x"},
			ResetCredits: &vault.ResetCredits{AvailableCount: 1, RedeemableCount: i64p(0), Eligible: f(true), Reason: "on\r\nhold"},
			Limits: []vault.UsageLimit{
				pctLimit("anthropic:5h", "Claude 5 Hour", "5h", "5 Hour", 5*h, 42, 3*h+5*60_000),
				pctLimit("anthropic:7d", "Claude 7 Day", "7d", "7 Day", 7*24*h, 81, 4*24*h+2*h),
				opus,
			}},
		{Provider: "anthropic", FetchedAt: fixedNow - 4*60_000,
			Metadata: map[string]any{"email": "a.very.long.address.for.testing.widths@subdomain.example-company.com", "orgId": "org-team-one"},
			Limits: []vault.UsageLimit{
				pctLimit("anthropic:5h", "Claude 5 Hour", "5h", "5 Hour", 5*h, 3, h),
				pctLimit("anthropic:7d", "Claude 7 Day", "7d", "7 Day", 7*24*h, 97.25, 24*h),
			}},
		{Provider: "openai-codex", FetchedAt: fixedNow - 10_000, ResetCredits: &vault.ResetCredits{AvailableCount: 2, RedeemableCount: i64p(1)},
			Metadata: map[string]any{"email": "bob@example.org", "planType": "pro", "accountId": "acct-bob"},
			Limits:   []vault.UsageLimit{exhausted, pctLimit("openai-codex:secondary", "Codex 7 Day", "7d", "7 days", 7*24*h, 64, 3*24*h), spark}},
		{Provider: "google-antigravity", FetchedAt: fixedNow - 5_000, Metadata: map[string]any{"email": "erin@example.com"},
			Limits: []vault.UsageLimit{shared, sharedGPT, gemini}},
		{Provider: "zai", FetchedAt: fixedNow - 5_000, Metadata: map[string]any{"accountId": "zai\x1b[31m-key"},
			Limits: []vault.UsageLimit{
				{ID: "zai:tokens", Label: "Tokens", Scope: vault.UsageScope{Provider: "zai"}, Window: &vault.UsageWindow{ID: "monthly", Label: "Monthly"},
					Amount: vault.UsageAmount{Used: f64p(1_234_567), Limit: f64p(5_000_000), Unit: "tokens"}},
				{ID: "zai:requests", Label: "Requests", Scope: vault.UsageScope{Provider: "zai"},
					Amount: vault.UsageAmount{Remaining: f64p(250), Unit: "requests"}},
				{ID: "zai:spend", Label: "Spend", Scope: vault.UsageScope{Provider: "zai"}, Amount: vault.UsageAmount{Unit: "usd"}},
			}},
	}
	accounts := []Account{
		{Provider: "anthropic", Type: "oauth", Email: "alice@example.com", AuthorizedAt: fixedNow - 26*24*h},
		{Provider: "anthropic", Type: "oauth", Email: "a.very.long.address.for.testing.widths@subdomain.example-company.com", OrgID: "org-team-one"},
		{Provider: "anthropic", Type: "oauth", Email: "carol@example.net", AuthorizedAt: fixedNow - 31*24*h},
		{Provider: "openai-codex", Type: "oauth", Email: "bob@example.org", AccountID: "acct-bob"},
		{Provider: "zai", Type: "api_key"},
		{Provider: "google-gemini-cli", Type: "oauth", Email: "dave@example.com", ProjectID: "proj-1"},
	}
	return reports, accounts
}

// goldenTombstones are disabled credentials as a broker lists them; only
// the actionable ones reach the output.
func goldenTombstones() []Tombstone {
	_, accounts := goldenReports()
	all := []Tombstone{
		{ID: 7, Provider: "anthropic", Type: "oauth", Email: "gone@example.com", OrgName: "Team One", DisabledAtMs: fixedNow - 3*dayMs,
			Cause: `oauth refresh failed: Error: anthropic token refresh failed: 400 {"error":"invalid_grant","error_description":"Refresh token not found or invalid"}`},
		{ID: 8, Provider: "mcp_oauth:profile:default:https://mcp.example.com/a/very/long/server/path/for/testing", Type: "oauth",
			Cause: "oauth refresh failed: Error: MCP OAuth refresh failed: the authorization server at https://mcp.example.com answered 400; retry later"},
		{ID: 9, Provider: "anthropic", Type: "oauth", Email: "alice@example.com", Cause: "oauth refresh failed: stale"}, // alice is active
		{ID: 10, Provider: "anthropic", Type: "oauth", Email: "old@example.com", Cause: "replaced by newer credential"},
		{ID: 11, Provider: "zai", Type: "api_key", Cause: "disabled via auth-broker"},
	}
	var out []Tombstone
	for _, t := range all {
		if Actionable(t, accounts) {
			out = append(out, t)
		}
	}
	return out
}

func goldenHistory() []vault.UsageHistoryEntry {
	const h = 3_600_000
	var out []vault.UsageHistoryEntry
	add := func(at int64, provider, key, email, limit, label, window string, f float64) {
		out = append(out, vault.UsageHistoryEntry{RecordedAt: at, Provider: provider, AccountKey: key, Email: email,
			LimitID: limit, Label: label, WindowLabel: window, UsedFraction: f64p(f)})
	}
	for i := range 7 * 24 / 6 {
		at := fixedNow - 7*24*h + int64(i)*6*h
		add(at, "anthropic", "oauth|email:alice@example.com", "alice@example.com", "anthropic:5h", "Claude 5 Hour", "5 Hour", float64(i%5)/4)
		if i%3 == 0 {
			add(at, "anthropic", "oauth|email:alice@example.com", "alice@example.com", "anthropic:7d", "Claude 7 Day", "7 Day", float64(i)/28)
		}
	}
	add(fixedNow-2*h, "openai-codex", "oauth|account:acct-bob", "", "openai-codex:spark:primary",
		"5 hours (GPT-5.3-Codex-Spark research preview with a long name)", "5 hours", 0.3)
	out[len(out)-1].AccountID = "acct-bob"
	return out
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "usage", name)
	if llmtest.Updating() { // the one -update flag of the test binary (llmtest defines it)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update after checking):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// checkWidth fails on any line wider than 80 columns or carrying a
// control character.
func checkWidth(t *testing.T, out string) {
	t.Helper()
	for i, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if w := Width(l); w > TermWidth {
			t.Errorf("line %d is %d columns: %q", i+1, w, l)
		}
		if strings.ContainsAny(l, "\x1b\t\r") {
			t.Errorf("line %d has a control character: %q", i+1, l)
		}
	}
}

func TestUsageTextGolden(t *testing.T) {
	reports, accounts := goldenReports()
	out := Render(Breakdown(reports, accounts, goldenTombstones(), fixedNow, nil, nil), false)
	checkWidth(t, out)
	checkGolden(t, "live.txt", out)

	red := RedactionMap(append(IdentityStrings(reports, accounts), TombstoneIdentities(goldenTombstones())...))
	out = Render(Breakdown(reports, accounts, goldenTombstones(), fixedNow, red, nil), false)
	checkWidth(t, out)
	for _, secret := range []string{"alice@", "bob@example", "carol@", "acct-bob", "org-team-one", "gone@", "Team One"} {
		if strings.Contains(out, secret) {
			t.Errorf("--redact shows %q", secret)
		}
	}
	checkGolden(t, "live-redacted.txt", out)

	hist := goldenHistory()
	out = Render(History(hist, fixedNow-7*dayMs, fixedNow, nil), false)
	checkWidth(t, out)
	checkGolden(t, "history.txt", out)
}

// With account policies, every account of a provider that has one gets a
// policy line: priority, reserve (the global one or the account's
// override), whether what its most used limit leaves is inside the reserve.
// Z.ai has no policy and no line; an account without a report shows
// "reserve unknown".
func TestUsageTextPoliciesGolden(t *testing.T) {
	reports, accounts := goldenReports()
	two, minusOne, quarter, half := 2.0, -1.0, 25.0, 12.5
	ps := &pick.Policies{ReservePct: 15, List: []pick.Policy{
		{Provider: "anthropic", Account: pick.Account{Email: "alice@example.com"}, Priority: &two, ReservePct: &quarter},
		{Provider: "openai-codex", Account: pick.Account{AccountID: "acct-bob"}, Priority: &minusOne},
		{Provider: "google-gemini-cli", Account: pick.Account{ProjectID: "proj-1"}, ReservePct: &half},
	}}
	out := Render(Breakdown(reports, accounts, nil, fixedNow, nil, ps), false)
	checkWidth(t, out)
	checkGolden(t, "live-policies.txt", out)
}

func TestUsageTextColour(t *testing.T) {
	reports, accounts := goldenReports()
	out := Render(Breakdown(reports, accounts, nil, fixedNow, nil, nil), true)
	for _, want := range []string{"\x1b[1mUsage\x1b[22m", "\x1b[31m●\x1b[39m", "\x1b[33m", "\x1b[32m", "\x1b[1m\x1b[36mAnthropic\x1b[39m\x1b[22m"} {
		if !strings.Contains(out, want) {
			t.Errorf("colour output lacks %q", want)
		}
	}
	// Upstream text never carries its own escapes through.
	if strings.Contains(out, "\x1b[31m-key") {
		t.Error("an escape from the report reached the terminal")
	}
}

func TestUsageJSONShape(t *testing.T) {
	reports, accounts := goldenReports()
	caps := Capacity(reports[:2])
	b, _ := json.Marshal(caps)
	// The sums are IEEE doubles added in report order, as the reference adds them.
	want := `[{"window":"5h","durationMs":18000000,"accounts":2,"usedAccounts":0.44999999999999996,"remainingAccounts":1.55},` +
		`{"window":"7d","durationMs":604800000,"accounts":2,"usedAccounts":1.7825000000000002,"remainingAccounts":0.2174999999999998},` +
		// A model-scoped Claude cap (tier opus) is its own pool inside the 7-day window.
		`{"window":"7d","durationMs":604800000,"meter":"opus","accounts":1,"usedAccounts":0.05,"remainingAccounts":0.95}]`
	if string(b) != want {
		t.Errorf("capacity = %s\nwant       %s", b, want)
	}
	un := UnreportedAccounts(reports, accounts)
	var got []string
	for _, a := range un {
		got = append(got, a.Provider+" "+a.Email)
	}
	if strings.Join(got, ",") != "anthropic carol@example.net,google-gemini-cli dave@example.com" {
		t.Errorf("unreported = %v", got)
	}
}

func TestRedactionMap(t *testing.T) {
	m := RedactionMap([]string{"can.boluk@x.io", "can.bolut@x.io", "zed@y", "zed@y", "ab", "abc"})
	for v, want := range map[string]string{"zed@y": "ze*", "can.boluk@x.io": "ca*k*", "can.bolut@x.io": "ca*t*", "abc": "ab*c*", "ab": "ab*"} {
		if m[v] != want {
			t.Errorf("mask(%q) = %q, want %q", v, m[v], want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for ms, want := range map[int64]string{0: "0ms", 999: "999ms", 1500: "1.5s", 61_000: "1m1s", 3_600_000: "1h", 3_660_000: "1h1m", 90_000_000: "1d1h", 172_800_000: "2d"} {
		if got := FormatDuration(ms); got != want {
			t.Errorf("FormatDuration(%d) = %q, want %q", ms, got, want)
		}
	}
	for n, want := range map[float64]string{999: "999", 1500: "1.5K", 25_000: "25K", 1_234_567: "1.2M", 5_000_000: "5M"} {
		if got := FormatNumber(n); got != want {
			t.Errorf("FormatNumber(%v) = %q, want %q", n, got, want)
		}
	}
}

// FuzzUsageTextWidth: whatever a provider or the vault puts in labels,
// emails, plans and notes, every text line stays within 80 columns and
// carries no control character.
func FuzzUsageTextWidth(f *testing.F) {
	f.Add("Claude 5 Hour", "alice@example.com", "pro", "5 Hour", 42.0)
	f.Add("日本語のとても長いラベル名前テスト", "名前@例え.jp", "🚀🚀🚀", "\x1b[31mred", 150.0)
	f.Add("a\tb\nc", "\u0301\u0301x", "", "", -5.0)
	f.Fuzz(func(t *testing.T, label, email, plan, window string, used float64) {
		l := pctLimit("anthropic:5h", label, "5h", window, 5*3_600_000, used, 3_600_000)
		l.Notes = []string{label + plan}
		r := vault.UsageReport{Provider: "anthropic" + plan, FetchedAt: fixedNow - 100_000, ResetCredits: &vault.ResetCredits{AvailableCount: 3},
			Metadata: map[string]any{"email": email, "planType": plan, "orgName": window}, Limits: []vault.UsageLimit{l}}
		accounts := []Account{{Provider: "anthropic", Type: "oauth", Email: email + label, OrgName: plan, AuthorizedAt: fixedNow - 25*dayMs}}
		checkWidth(t, Render(Breakdown([]vault.UsageReport{r}, accounts, []Tombstone{{Provider: plan, Type: "oauth", Cause: label, Email: email, DisabledAtMs: fixedNow - 1}}, fixedNow, nil, nil), false))
		h := []vault.UsageHistoryEntry{{RecordedAt: fixedNow - 1000, Provider: plan, AccountKey: label, Email: email, LimitID: "x", Label: label, WindowLabel: window, UsedFraction: &used}}
		checkWidth(t, Render(History(h, fixedNow-7*dayMs, fixedNow, nil), false))
	})
}

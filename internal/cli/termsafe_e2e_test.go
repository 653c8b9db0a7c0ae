package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
)

// Strings a hostile client puts in its usage report: a clipboard write
// (OSC 52), a window title (OSC 0), a screen clear, a bell, an 8-bit CSI,
// and a bidi override.
const (
	evilHost     = "gw\x1b]52;c;ZWNobyBvd25lZA==\x07-host\x1b[2J\x1b[H"
	evilApp      = "app\x1b]0;pwned\x07\u009b2J"
	evilProvider = "anthropic\u202e\x07\x1b[31m"
)

// checkTerminalSafe fails when out holds a byte or character that can
// drive a terminal: ESC, BEL or any other C0 control but newline, DEL, a
// C1 control (raw byte or UTF-8) or a bidi override or isolate.
func checkTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	for i := 0; i < len(out); i++ {
		c := out[i]
		if (c < 0x20 && c != '\n') || c == 0x7f {
			t.Fatalf("%s holds control byte %#02x at %d:\n%q", what, c, i, out)
		}
	}
	for i, r := range out {
		if (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			t.Fatalf("%s holds %U at %d:\n%q", what, r, i, out)
		}
	}
}

// TestUsageClientsTerminalSafe, end to end: a client-scope token posts
// observed usage whose hostname, app and provider are full of terminal
// escapes; the admin's `omp usage clients` shows them as visible escapes
// (none reaches the terminal), and --json still carries them exactly.
func TestUsageClientsTerminalSafe(t *testing.T) {
	c := newCLI(t)
	c.ok("", "auth-broker", "token")
	m := c.serveVault(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	clientTok := strings.TrimSpace(c.run("", "auth-broker", "token", "create", "fleet-laptop").stdout)
	client := brokerclient.New(m.URL(), clientTok, nil)
	rep := api.ClientUsageReport{InstallID: "ignored", Hostname: evilHost, App: evilApp,
		Entries: []api.ObservedUsageEntry{{At: time.Now().UnixMilli(), Provider: evilProvider, Model: "m",
			Requests: 1, InputTokens: 10, OutputTokens: 5}}}
	// The poll that picks up the new token takes up to a few hundred ms.
	deadline := time.Now().Add(testTimeout)
	for {
		err := client.PostObserved(ctx, rep)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("client token post: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	admin := newCLI(t)
	admin.env["OMP_AUTH_BROKER_URL"] = m.URL()
	admin.env["OMP_AUTH_BROKER_TOKEN"] = strings.TrimSpace(string(fileBytes(t, c.tokenPath())))

	out := admin.ok("", "usage", "clients")
	checkTerminalSafe(t, "omp usage clients", out)
	for _, want := range []string{`gw\x1b]52;c;ZWNobyBvd25lZA==\x07-host\x1b[2J\x1b[H`, `app\x1b]0;pwned\x07\u009b2J`, `anthropic\u202e\x07\x1b[31m`} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks the visible escape %s:\n%s", want, out)
		}
	}

	js := admin.ok("", "usage", "clients", "--json")
	var doc struct{ Clients []vault.ClientSummary }
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatalf("--json: %v\n%s", err, js)
	}
	checkTerminalSafe(t, "omp usage clients --json", js)
	if len(doc.Clients) != 1 || doc.Clients[0].Hostname != evilHost || len(doc.Clients[0].Providers) != 1 ||
		doc.Clients[0].Providers[0].App != evilApp {
		t.Errorf("--json does not carry the reported strings exactly: %+v", doc.Clients)
	}
}

// TestBrokerErrorsTerminalSafe: a broker whose error text is full of
// terminal escapes. The commands that print its error (on stderr through
// the error line, on stdout in the status lines) show the escapes as
// visible text.
func TestBrokerErrorsTerminalSafe(t *testing.T) {
	const evil = "nope\x1b]52;c;aGk=\x07\x1b[2J\u009b\u202e"
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": evil})
	}))
	t.Cleanup(fake.Close)
	c := newCLI(t)
	c.env["OMP_AUTH_BROKER_URL"], c.env["OMP_AUTH_BROKER_TOKEN"] = fake.URL, "tok"
	const shown = `nope\x1b]52;c;aGk=\x07\x1b[2J\u009b\u202e`
	for _, args := range [][]string{
		{"usage", "clients"},
		{"usage"},
		{"auth-broker", "status"},
		{"auth-gateway", "status"},
	} {
		r := c.run("", args...)
		name := "omp " + strings.Join(args, " ")
		if r.code == 0 {
			t.Errorf("%s: exit 0 against a failing broker", name)
		}
		checkTerminalSafe(t, name+" stdout", r.stdout)
		checkTerminalSafe(t, name+" stderr", r.stderr)
		if !strings.Contains(r.stdout+r.stderr, shown) {
			t.Errorf("%s does not show the broker's error as visible text:\nstdout %q\nstderr %q", name, r.stdout, r.stderr)
		}
	}
}

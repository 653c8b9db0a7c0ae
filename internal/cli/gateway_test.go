package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/syncbuf"

	"github.com/ompgo/omp/internal/gateway"
	"github.com/ompgo/omp/internal/sigctx"
	"github.com/ompgo/omp/pkg/vault"
)

func (c *cli) gatewayTokenPath() string { return filepath.Join(c.configDir(), "auth-gateway.token") }

func TestGatewayTokenCreatesPrintsRegenerates(t *testing.T) {
	c := newCLI(t)
	out := c.ok("", "auth-gateway", "token")
	tok := strings.TrimSuffix(out, "\n")
	if !tokenRE.MatchString(tok) {
		t.Fatalf("token output %q", out)
	}
	raw, err := os.ReadFile(c.gatewayTokenPath())
	if err != nil || string(raw) != tok {
		t.Fatalf("token file %q (%v), want %q", raw, err, tok)
	}
	if st, _ := os.Stat(c.gatewayTokenPath()); st.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %o", st.Mode().Perm())
	}
	if _, err := os.Stat(c.tokenPath()); err == nil {
		t.Fatal("auth-gateway token created the broker token file")
	}
	if again := c.ok("", "auth-gateway", "token"); again != out {
		t.Fatalf("second token %q, want %q", again, out)
	}
	var j struct{ Token, Path string }
	if err := json.Unmarshal([]byte(c.ok("", "auth-gateway", "token", "--json")), &j); err != nil || j.Token != tok || j.Path != c.gatewayTokenPath() {
		t.Fatalf("--json: %+v %v", j, err)
	}
	fresh := strings.TrimSpace(c.ok("", "auth-gateway", "token", "--regenerate"))
	if fresh == tok || !tokenRE.MatchString(fresh) {
		t.Fatalf("--regenerate printed %q (was %q)", fresh, tok)
	}
	if raw, _ := os.ReadFile(c.gatewayTokenPath()); string(raw) != fresh {
		t.Fatalf("file %q after --regenerate, want %q", raw, fresh)
	}
}

func TestGatewayStatusNotConfigured(t *testing.T) {
	c := newCLI(t)
	path := c.gatewayTokenPath()
	r := c.run("", "auth-gateway", "status")
	if r.code != 1 || r.stdout != "No broker configured. Set OMP_AUTH_BROKER_URL.\ntoken: missing at "+path+"\n" || r.stderr != "" {
		t.Fatalf("text: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("status created the token file")
	}
	c.ok("", "auth-gateway", "token")
	r = c.run("", "auth-gateway", "status", "--json")
	want := `{"ready":false,"reason":"not_configured","tokenFile":"` + path + `","tokenPresent":true,"broker":null,"brokerConfigured":false,"brokerAuthenticated":false}` + "\n"
	if r.code != 1 || r.stdout != want {
		t.Fatalf("json: exit %d %q\nwant %q", r.code, r.stdout, want)
	}
}

func TestGatewayStatusAgainstBroker(t *testing.T) {
	b := startBroker(t, "")
	b.upload(t, apiKeyCred("openai", "sk-status-1"))
	c := newCLI(t)
	c.useBroker(b)
	path := c.gatewayTokenPath()

	r := c.run("", "auth-gateway", "status")
	wantText := "not ready upstream broker: " + b.url + " (1 credential)\ntoken: missing at " + path +
		"\nRun `omp auth-gateway token` or `omp auth-gateway serve` to create a bearer token.\n"
	if r.code != 1 || r.stdout != wantText {
		t.Fatalf("token missing: exit %d %q\nwant %q", r.code, r.stdout, wantText)
	}
	r = c.run("", "auth-gateway", "status", "--json")
	want := `{"ready":false,"reason":"token_missing","tokenFile":"` + path + `","tokenPresent":false,"broker":"` + b.url +
		`","brokerConfigured":true,"brokerAuthenticated":true,"credentialCount":1}` + "\n"
	if r.code != 1 || r.stdout != want {
		t.Fatalf("json token missing: exit %d %q\nwant %q", r.code, r.stdout, want)
	}

	c.ok("", "auth-gateway", "token")
	b.upload(t, apiKeyCred("anthropic", "sk-ant-status-2"))
	if out := c.ok("", "auth-gateway", "status"); out != "ready upstream broker: "+b.url+" (2 credentials)\ntoken: present at "+path+"\n" {
		t.Fatalf("ready: %q", out)
	}
	want = `{"ready":true,"reason":null,"tokenFile":"` + path + `","tokenPresent":true,"broker":"` + b.url +
		`","brokerConfigured":true,"brokerAuthenticated":true,"credentialCount":2}` + "\n"
	if out := c.ok("", "auth-gateway", "status", "--json"); out != want {
		t.Fatalf("json ready: %q\nwant %q", out, want)
	}

	// A wrong broker token: the broker answers but does not authenticate.
	c.env["OMP_AUTH_BROKER_TOKEN"] = "not-the-broker-token"
	r = c.run("", "auth-gateway", "status", "--json")
	if r.code != 1 || !strings.HasPrefix(r.stdout, `{"ready":false,"reason":"broker_unavailable","tokenFile":"`+path+`","tokenPresent":true,"broker":"`+b.url+`","brokerConfigured":true,"brokerAuthenticated":false,"error":"`) {
		t.Fatalf("wrong broker token: exit %d %q", r.code, r.stdout)
	}
	assertNoSecrets(t, r, b.token, "sk-status-1")
}

func TestGatewayStatusBrokerDown(t *testing.T) {
	c := newCLI(t)
	url := "http://" + closedAddr(t)
	c.env["OMP_AUTH_BROKER_URL"], c.env["OMP_AUTH_BROKER_TOKEN"] = url, "tok-never-shown-123"
	const msg = "Auth broker request failed after 2 attempt(s)"
	path := c.gatewayTokenPath()

	r := c.run("", "auth-gateway", "status")
	if r.code != 1 || r.stdout != "FAILED upstream broker: "+url+": "+msg+"\ntoken: missing at "+path+"\n" || r.stderr != "" {
		t.Fatalf("text: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = c.run("", "auth-gateway", "status", "--json")
	want := `{"ready":false,"reason":"broker_unavailable","tokenFile":"` + path + `","tokenPresent":false,"broker":"` + url +
		`","brokerConfigured":true,"brokerAuthenticated":false,"error":"` + msg + `"}` + "\n"
	if r.code != 1 || r.stdout != want {
		t.Fatalf("json: exit %d %q\nwant %q", r.code, r.stdout, want)
	}
	assertNoSecrets(t, r, "tok-never-shown-123")
}

func TestGatewayServeAgainstBroker(t *testing.T) {
	b := startBroker(t, "")
	c := newCLI(t)
	c.useBroker(b)
	g := startGatewayServe(t, c)
	stdout, stderr, url := &g.stdout, &g.stderr, g.url
	wantLines(t, stdout.String(),
		"auth-gateway listening on "+url,
		"bearer token: "+c.gatewayTokenPath()+" (chmod 0600)",
		"upstream broker: "+b.url)
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), `{"ok":true,`) || !strings.Contains(string(body), `"broker":{"mode":`) {
		t.Fatalf("/healthz %d %s", resp.StatusCode, body)
	}
	if st, err := os.Stat(c.gatewayTokenPath()); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("gateway token file: %v", err)
	}

	g.sigterm(t)
	if !strings.HasSuffix(stdout.String(), "upstream broker: "+b.url+"\n\nReceived SIGTERM, shutting down...\n") {
		t.Fatalf("stdout after SIGTERM: %q", stdout.String())
	}
	assertNoSecrets(t, result{stdout: stdout.String(), stderr: stderr.String()}, b.token)
}

func TestGatewayServeRefusals(t *testing.T) {
	c := newCLI(t)
	r := c.run("", "auth-gateway", "serve", "--bind", "127.0.0.1:0")
	if r.code != 1 || r.stderr != "error: "+gateway.MsgNoBroker+"\n" {
		t.Fatalf("no broker: exit %d %q", r.code, r.stderr)
	}
	b := startBroker(t, "")
	c.useBroker(b)
	r = c.run("", "auth-gateway", "serve", "--no-auth", "--bind", "0.0.0.0:0")
	if r.code != 1 || !strings.Contains(r.stderr, "--allow-non-loopback-no-auth") || r.stdout != "" {
		t.Fatalf("--no-auth on 0.0.0.0: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = c.run("", "auth-gateway", "serve", "--bind", "nope")
	if r.code != 1 || r.stderr != "error: Invalid bind 'nope'; expected 'host:port' or 'port'.\n" {
		t.Fatalf("bad bind: exit %d %q", r.code, r.stderr)
	}
	r = c.run("", "auth-gateway", "bogus")
	if r.code != 1 || !strings.Contains(r.stderr, `Expected action to be one of: serve, token, status, check; got "bogus"`) {
		t.Fatalf("unknown action: exit %d %q", r.code, r.stderr)
	}
	if out := c.ok("", "auth-gateway"); !strings.Contains(out, "serve") {
		t.Fatalf("no action prints help: %q", out)
	}
}

// TestGatewayServeSnapshotCacheFlag: `omp auth-gateway serve` started
// while the broker is down serves from the snapshot cache a broker client
// of the same home wrote; with --no-snapshot-cache it refuses to start.
func TestGatewayServeSnapshotCacheFlag(t *testing.T) {
	b := startBroker(t, "")
	c := newCLI(t)
	c.useBroker(b)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if _, err := b.client.Upload(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-cached-cli"}); err != nil {
		t.Fatal(err)
	}
	if r := c.run("", "usage", "--json"); r.code != 0 {
		t.Fatalf("usage (writes the cache): exit %d %q", r.code, r.stderr)
	}
	b.stop()

	r := c.run("", "auth-gateway", "serve", "--no-snapshot-cache", "--bind", "127.0.0.1:0")
	if r.code != 1 || !strings.Contains(r.stderr, gateway.MsgNoSnapshot) || strings.Contains(r.stdout, "upstream broker:") {
		t.Fatalf("--no-snapshot-cache with the broker down: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}

	g := startGatewayServe(t, c) // the broker is down: it serves the cache
	if !strings.Contains(g.stderr.String(), "started from the snapshot cache") {
		t.Errorf("stderr does not say the gateway serves the cache: %q", g.stderr.String())
	}
	url := g.url
	token := strings.TrimSpace(string(fileBytes(t, c.gatewayTokenPath())))
	req, _ := http.NewRequest(http.MethodGet, url+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"owned_by":"openai"`) {
		t.Fatalf("/v1/models from the cache: %d %.300s", resp.StatusCode, body)
	}
	g.sigterm(t)
}

// servingGateway is `omp auth-gateway serve` run in process.
type servingGateway struct {
	stdout, stderr syncbuf.Buffer
	url            string
	cancel         context.CancelCauseFunc
	done           chan int
}

// startGatewayServe runs `omp auth-gateway serve --bind 127.0.0.1:0` for
// c until its startup lines are out; the test's end stops it.
func startGatewayServe(t *testing.T, c *cli) *servingGateway {
	t.Helper()
	g := &servingGateway{done: make(chan int, 1)}
	a := &app{stdin: strings.NewReader(""), stdout: &g.stdout, stderr: &g.stderr, environ: c.environ(), cwd: c.cwd}
	ctx, cancel := context.WithCancelCause(context.Background())
	g.cancel = cancel
	t.Cleanup(func() { cancel(nil) })
	go func() { g.done <- a.execute(ctx, []string{"auth-gateway", "serve", "--bind", "127.0.0.1:0"}) }()
	deadline := time.Now().Add(testTimeout)
	for !strings.Contains(g.stdout.String(), "upstream broker:") {
		select {
		case code := <-g.done:
			t.Fatalf("serve exited %d early\nstdout %q\nstderr %q", code, g.stdout.String(), g.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start: %q", g.stdout.String())
		}
	}
	g.url = strings.TrimPrefix(lines(g.stdout.String())[0], "auth-gateway listening on ")
	return g
}

// sigterm stops the gateway as SIGTERM does and expects exit 0.
func (g *servingGateway) sigterm(t *testing.T) {
	t.Helper()
	g.cancel(&sigctx.SignalError{Signal: syscall.SIGTERM})
	select {
	case code := <-g.done:
		if code != 0 {
			t.Fatalf("serve exit %d after SIGTERM; stderr %q", code, g.stderr.String())
		}
	case <-time.After(testTimeout):
		t.Fatal("serve did not stop")
	}
}

package cli

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/broker"
	"github.com/ompgo/omp/pkg/vault"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
	"github.com/ompgo/omp/pkg/vault/sqlite/sqlitetest"
)

// testTimeout bounds one CLI invocation or broker call.
const testTimeout = 15 * time.Second

// cli is one user's machine: a temporary HOME (so <config-dir> is
// <home>/.omp and agent.db lives in <home>/.omp/agent), a working directory
// without a .env, and the process environment handed to the CLI.
type cli struct {
	t    *testing.T
	home string
	cwd  string
	env  map[string]string
}

func newCLI(t *testing.T) *cli {
	t.Helper()
	return &cli{t: t, home: t.TempDir(), cwd: t.TempDir(), env: map[string]string{}}
}

// result is one CLI run.
type result struct {
	code           int
	stdout, stderr string
}

// environ is HOME, PATH (for !command values) and c.env.
func (c *cli) environ() []string {
	out := []string{"HOME=" + c.home, "PATH=" + os.Getenv("PATH"), "SHELL=/bin/sh"}
	for k, v := range c.env {
		out = append(out, k+"="+v)
	}
	return out
}

// run executes `omp <args>` in-process through app.execute, the body of run.
func (c *cli) run(stdin string, args ...string) result {
	c.t.Helper()
	var stdout, stderr bytes.Buffer
	a := &app{stdin: strings.NewReader(stdin), stdout: &stdout, stderr: &stderr, environ: c.environ(), cwd: c.cwd}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	code := a.execute(ctx, args)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// ok runs the CLI and fails the test unless it exits 0 with an empty stderr.
func (c *cli) ok(stdin string, args ...string) string {
	c.t.Helper()
	r := c.run(stdin, args...)
	if r.code != 0 || r.stderr != "" {
		c.t.Fatalf("omp %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

func (c *cli) configDir() string { return filepath.Join(c.home, ".omp") }
func (c *cli) agentDir() string {
	if d := c.env["PI_CODING_AGENT_DIR"]; d != "" {
		return d
	}
	return filepath.Join(c.configDir(), "agent")
}
func (c *cli) agentDB() string   { return filepath.Join(c.agentDir(), "agent.db") } // the reference's store
func (c *cli) vaultDB() string   { return filepath.Join(c.agentDir(), "vault.db") } // ours, beside it
func (c *cli) tokenPath() string { return filepath.Join(c.configDir(), "auth-broker.token") }
func (c *cli) vaultKey() string  { return filepath.Join(c.configDir(), "vault.key") }
func (c *cli) useBroker(b *testBroker) {
	c.env["OMP_AUTH_BROKER_URL"], c.env["OMP_AUTH_BROKER_TOKEN"] = b.url, b.token
}

// writeConfig writes <agentDir>/config.yml.
func (c *cli) writeConfig(yml string) {
	c.t.Helper()
	writeFile(c.t, filepath.Join(c.agentDir(), "config.yml"), yml)
}

// openVault opens the CLI user's local Go vault (the one logout, import
// without a broker and migrate use) with its key file.
func (c *cli) openVault() *sqlite.Store {
	c.t.Helper()
	kr, _, err := seal.LoadOrCreateKeyFile(c.vaultKey())
	if err != nil {
		c.t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), c.vaultDB(), kr, sqlite.Options{})
	if err != nil {
		c.t.Fatal(err)
	}
	return st
}

// seed upserts credentials into the local vault, in order.
func (c *cli) seed(items ...providerCred) {
	c.t.Helper()
	st := c.openVault()
	defer st.Close()
	for _, it := range items {
		if _, err := st.Upsert(context.Background(), it.provider, it.cred); err != nil {
			c.t.Fatalf("seed %s: %v", it.provider, err)
		}
	}
}

// localState lists every local row as "<provider> <identity> [<cause>]".
func (c *cli) localState() []string {
	c.t.Helper()
	st := c.openVault()
	defer st.Close()
	ctx := context.Background()
	active, err := st.List(ctx, "")
	if err != nil {
		c.t.Fatal(err)
	}
	disabled, err := st.ListDisabled(ctx, "")
	if err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, r := range append(active, disabled...) {
		out = append(out, r.Provider+" "+describeCred(r.Credential)+" ["+r.DisabledCause+"]")
	}
	slices.Sort(out)
	return out
}

type providerCred struct {
	provider string
	cred     vault.Credential
}

func apiKeyCred(p, key string) providerCred {
	return providerCred{p, vault.Credential{Type: vault.TypeAPIKey, Key: key}}
}

func oauthCred(p, email, refresh string) providerCred {
	return providerCred{p, vault.Credential{Type: vault.TypeOAuth, Access: "acc-" + refresh, Refresh: refresh,
		Expires: farFuture.UnixMilli(), Email: email}}
}

// describeCred is a secret-free summary used in state comparisons: the
// API key itself is shown (test keys are fake) so tests see which key won.
func describeCred(c vault.Credential) string {
	if c.Type == vault.TypeAPIKey {
		return "key=" + c.Key
	}
	id := c.Email
	if id == "" {
		id = c.AccountID
	}
	if id == "" {
		id = c.ProjectID
	}
	return "oauth=" + id
}

var farFuture = time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)

// testBroker is a real broker.Main on 127.0.0.1:0 in its own directory.
type testBroker struct {
	url, token string
	tokenPath  string
	client     *brokerclient.Client
	stop       func() // shuts the broker down (again at cleanup: a no-op)
}

// startBroker runs a broker whose bearer token lives at tokenPath (""
// means inside its own temp dir). Upstream OAuth URLs point at a closed
// port so nothing ever leaves the machine; the refresher sleeps for an hour.
func startBroker(t *testing.T, tokenPath string) *testBroker {
	t.Helper()
	dead := "http://" + closedAddr(t)
	return startBrokerURLs(t, tokenPath, func(string, string) string { return dead })
}

// startBrokerURLs is startBroker with the upstream URL overrides urls
// (config.ProviderURL's shape), e.g. fake usage endpoints.
func startBrokerURLs(t *testing.T, tokenPath string, urls func(provider, kind string) string) *testBroker {
	t.Helper()
	dir := t.TempDir()
	if tokenPath == "" {
		tokenPath = filepath.Join(dir, "auth-broker.token")
	}
	m := &broker.Main{Config: broker.Config{
		Bind:            "127.0.0.1:0",
		DBPath:          filepath.Join(dir, "agent.db"),
		TokenPath:       tokenPath,
		KeyPath:         filepath.Join(dir, "vault.key"),
		Version:         "cli-test",
		Logger:          slog.New(slog.DiscardHandler),
		URLs:            urls,
		RefreshInterval: time.Hour,
		PollInterval:    50 * time.Millisecond,
	}}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := m.Open(ctx); err != nil {
		t.Fatalf("broker Open: %v", err)
	}
	raw, err := os.ReadFile(tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	shutdown := sync.OnceFunc(func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("broker Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("broker Run did not return after cancel")
		}
		m.Close()
	})
	t.Cleanup(shutdown)
	tok := strings.TrimSpace(string(raw))
	return &testBroker{url: m.URL(), token: tok, tokenPath: tokenPath, client: brokerclient.New(m.URL(), tok, nil), stop: shutdown}
}

// state lists the broker's active credentials as
// "<provider> <identity>" (OAuth refresh tokens are redacted on the wire).
func (b *testBroker) state(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	res, err := b.client.Snapshot(ctx, nil, 0)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	out := []string{}
	for _, e := range res.Snapshot.Credentials {
		out = append(out, e.Provider+" "+describeCred(e.Credential))
	}
	slices.Sort(out)
	return out
}

// upload puts credentials on the broker directly.
func (b *testBroker) upload(t *testing.T, items ...providerCred) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for _, it := range items {
		if _, err := b.client.Upload(ctx, it.provider, it.cred); err != nil {
			t.Fatalf("upload %s: %v", it.provider, err)
		}
	}
}

// closedAddr returns a 127.0.0.1 address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// writeRefDB creates a plain reference agent.db at path with the v4 schema
// and the given INSERT statements (as the reference writes it: plain JSON).
func writeRefDB(t *testing.T, path string, inserts ...string) {
	t.Helper()
	sqlitetest.WriteReference(t, path, append([]string{sqlitetest.ReferenceSchemaV4}, inserts...)...)
}

// assertNoSecrets fails when any secret appears in the run's output.
func assertNoSecrets(t *testing.T, r result, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(r.stdout, s) || strings.Contains(r.stderr, s) {
			t.Errorf("secret %q leaked into the output:\nstdout:\n%s\nstderr:\n%s", s, r.stdout, r.stderr)
		}
	}
}

// lines splits output into lines without the final newline.
func lines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// wantLines compares output with the expected lines exactly.
func wantLines(t *testing.T, got string, want ...string) {
	t.Helper()
	if g := lines(got); !slices.Equal(g, want) {
		t.Fatalf("output mismatch\ngot:\n%s\nwant:\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
	}
}

// fileBytes reads path, failing the test on error.
func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// serveVault runs a real broker over c's vault, key and bearer token file
// until the test ends.
func (c *cli) serveVault(t *testing.T) *broker.Main {
	t.Helper()
	m := &broker.Main{Config: broker.Config{
		Bind: "127.0.0.1:0", DBPath: c.vaultDB(), TokenPath: c.tokenPath(), KeyPath: c.vaultKey(),
		Logger: slog.New(slog.DiscardHandler), RefreshInterval: time.Hour, PollInterval: 50 * time.Millisecond,
	}}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done; m.Close() })
	return m
}

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
)

// clientTokenRE is a named client token: prefix + 32 random bytes base64url.
var clientTokenRE = regexp.MustCompile(`^ompct_[A-Za-z0-9_-]{43}$`)

// TestTokenCreateListRevoke drives `omp auth-broker token create|list|
// revoke` against the local vault: the token is printed once (bare on
// stdout, a note on stderr), never by list, and never reaches the vault
// file; bad names, scopes, duplicates and unknown revokes fail with one line
// and exit 1; the bare `token` still prints the shared bearer.
func TestTokenCreateListRevoke(t *testing.T) {
	c := newCLI(t)
	r := c.run("", "auth-broker", "token", "create", "gw-a")
	tok := strings.TrimSuffix(r.stdout, "\n")
	if r.code != 0 || !clientTokenRE.MatchString(tok) || r.stdout != tok+"\n" ||
		r.stderr != "Created client token \"gw-a\". It is shown only this once; give it to the client as its broker token.\n" {
		t.Fatalf("create: %+v", r)
	}
	out := c.ok("", "auth-broker", "token", "create", "ops", "--scope", "admin", "--json")
	var created struct{ Name, Scope, CreatedAt, Token string }
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.Name != "ops" || created.Scope != "admin" ||
		!clientTokenRE.MatchString(created.Token) || created.CreatedAt == "" {
		t.Fatalf("create --json: %q (%v)", out, err)
	}

	list := c.ok("", "auth-broker", "token", "list")
	if !regexp.MustCompile(`^NAME +SCOPE +CREATED\ngw-a +client +\d{4}-\d\d-\d\dT[0-9:]+Z\nops +admin +\S+\n$`).MatchString(list) {
		t.Fatalf("list:\n%s", list)
	}
	var listed []map[string]string
	if err := json.Unmarshal([]byte(c.ok("", "auth-broker", "--json", "token", "list")), &listed); err != nil ||
		len(listed) != 2 || listed[0]["name"] != "gw-a" || listed[1]["scope"] != "admin" || len(listed[0]) != 3 {
		t.Fatalf("list --json: %v %v", listed, err)
	}

	for _, bad := range [][]string{
		{"create", "gw-a"},                 // duplicate
		{"create", "bad name"},             // charset
		{"create", "shared"},               // reserved
		{"create", "x", "--scope", "root"}, // scope
		{"revoke", "nobody"},               // unknown
		{"create"},                         // arity
		{"revoke", "gw-a", "extra"},        // arity
	} {
		r := c.run("", append([]string{"auth-broker", "token"}, bad...)...)
		if r.code == 0 || r.stdout != "" || !strings.HasPrefix(r.stderr, "error: ") {
			t.Fatalf("token %v: %+v", bad, r)
		}
	}
	if r := c.run("", "auth-broker", "token", "revoke", "nobody"); r.stderr != "error: revoke token: no token named \"nobody\"\n" {
		t.Fatalf("revoke unknown: %q", r.stderr)
	}

	if out := c.ok("", "auth-broker", "token", "revoke", "gw-a"); out != "Revoked token gw-a\n" {
		t.Fatalf("revoke: %q", out)
	}
	if list := c.ok("", "auth-broker", "token", "list"); strings.Contains(list, "gw-a") {
		t.Fatalf("revoked token still listed:\n%s", list)
	}
	for _, path := range []string{c.vaultDB(), c.vaultDB() + "-wal"} {
		raw, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		for _, secret := range []string{tok, created.Token} {
			if strings.Contains(string(raw), secret) {
				t.Fatalf("%s holds a token", path)
			}
		}
	}
	// The shared bearer action is unchanged.
	if shared := strings.TrimSpace(c.ok("", "auth-broker", "token")); !tokenRE.MatchString(shared) {
		t.Fatalf("bare token printed %q", shared)
	}
}

// TestTokenCLIAgainstRunningBroker: a broker serving the CLI user's vault
// accepts a token the CLI just created with its scope (a client token reads
// the snapshot, gets 403 on upload), and a `token revoke` ends that token's
// open stream within a second.
func TestTokenCLIAgainstRunningBroker(t *testing.T) {
	c := newCLI(t)
	c.ok("", "auth-broker", "token") // the shared bearer file
	m := c.serveVault(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	tok := strings.TrimSpace(c.run("", "auth-broker", "token", "create", "gw-a").stdout)
	cl := brokerclient.New(m.URL(), tok, nil)
	if _, err := cl.Snapshot(ctx, nil, 0); err != nil {
		t.Fatalf("client token snapshot: %v", err)
	}
	_, err := cl.Upload(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-test"})
	if vault.ErrorCode(err) != vault.EFORBIDDEN || err.Error() != "Auth broker request failed: 403 Forbidden: token gw-a may not upload credentials" {
		t.Fatalf("client token upload: %v, want EFORBIDDEN", err)
	}

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.URL()+"/v1/snapshot/stream", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %v %v", err, resp)
	}
	defer resp.Body.Close()
	ended := make(chan struct{})
	go func() { io.Copy(io.Discard, resp.Body); close(ended) }()
	start := time.Now()
	c.ok("", "auth-broker", "token", "revoke", "gw-a")
	select {
	case <-ended:
		t.Logf("stream ended %v after `token revoke` began", time.Since(start))
	case <-time.After(time.Second + time.Since(start)):
		t.Fatalf("stream still open %v after the revoke", time.Since(start))
	}
	if _, err := cl.Snapshot(ctx, nil, 0); vault.ErrorCode(err) != vault.EUNAUTHORIZED {
		t.Fatalf("revoked token: %v", err)
	}
}

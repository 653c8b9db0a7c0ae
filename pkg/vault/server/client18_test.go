package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/client"
)

// TestClientKeepsExtensions: against our broker the client sends the
// capabilities header and gets every stored field back, on snapshots,
// the stream and upload replies.
func TestClientKeepsExtensions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := oauthCred("a@b.c", e.clk.Now().UnixMilli()+3_600_000)
	c.Extra["orgId"] = json.RawMessage(`"org-1"`)
	entries, err := e.client.Upload(ctx, "anthropic", c)
	if err != nil || len(entries) != 1 || entries[0].Credential.OrgID() != "org-1" || entries[0].IdentityKey != "email:a@b.c|org:org-1" {
		t.Fatalf("Upload = %+v %v", entries, err)
	}
	k := vault.Credential{Type: vault.TypeAPIKey, Key: "sk-z", Source: vault.SourceLogin}
	if entries, err = e.client.Upload(ctx, "zai", k); err != nil || entries[0].Credential.Source != vault.SourceLogin {
		t.Fatalf("Upload key = %+v %v", entries, err)
	}
	res, err := e.client.Snapshot(ctx, nil, 0)
	if err != nil || len(res.Snapshot.Credentials) != 2 {
		t.Fatalf("Snapshot = %+v %v", res, err)
	}
	if got := res.Snapshot.Credentials[0].Credential; got.OrgID() != "org-1" || got.ExtraString("apiEndpoint") != "https://x" {
		t.Fatalf("snapshot lost extension fields: %v", got.Extra)
	}
	if got := res.Snapshot.Credentials[1].Credential; got.Source != vault.SourceLogin {
		t.Fatalf("snapshot lost the api key source: %+v", got.Source)
	}
	s, err := e.client.Stream(streamCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev, err := s.Next()
	if err != nil || ev.Snapshot == nil || ev.Snapshot.Credentials[0].Credential.OrgID() != "org-1" {
		t.Fatalf("stream snapshot = %+v %v", ev, err)
	}
}

// TestClientUploadFallsBackTo15x: a 15.x broker answers 400 to extension
// fields; the client warns and retries once with the 15.x field set. A 400
// for a credential without extensions is not retried.
func TestClientUploadFallsBackTo15x(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	c := fakeBroker(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(string(b), "orgId") || strings.Contains(string(b), "source") || strings.Contains(string(b), "bad") {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"credential.orgId is not an allowed key"}`)
			return
		}
		_, _ = io.WriteString(w, `{"entries":[{"id":1,"provider":"anthropic","credential":{"type":"oauth","refresh":"__remote__","access":"a","expires":1,"email":"a@b.c"},"identityKey":"email:a@b.c"}]}`)
	})
	var logs bytes.Buffer
	c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	cred := vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: "r", Expires: 1, Email: "a@b.c",
		Extra: map[string]json.RawMessage{"orgId": json.RawMessage(`"org-1"`)}}
	sent := func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), bodies...) }
	entries, err := c.Upload(context.Background(), "anthropic", cred)
	if err != nil || len(entries) != 1 {
		t.Fatalf("Upload = %+v %v", entries, err)
	}
	if bodies := sent(); len(bodies) != 2 || !strings.Contains(bodies[0], `"orgId":"org-1"`) || strings.Contains(bodies[1], "orgId") {
		t.Fatalf("request bodies %q, want the 18.1.21 shape then the 15.x shape", bodies)
	}
	if !strings.Contains(logs.String(), `level=WARN msg="auth-broker rejected extended credential fields; uploaded without them" provider=anthropic`) {
		t.Fatalf("missing warning: %s", logs.String())
	}
	mu.Lock()
	bodies = nil
	mu.Unlock()
	_, err = c.Upload(context.Background(), "x", vault.Credential{Type: vault.TypeAPIKey, Key: "bad"})
	var be *client.Error
	if !errors.As(err, &be) || be.Status != 400 || len(sent()) != 1 {
		t.Fatalf("plain 400 = %v after %d request(s), want one request", err, len(sent()))
	}
}

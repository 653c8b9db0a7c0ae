package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// codexModelDenied is Codex's answer when a ChatGPT account is not
// entitled to the requested model: an account-policy denial scoped to
// that model.
const codexModelDenied = `{"detail":"The 'gpt-6-sol' model is not supported when using Codex with a ChatGPT account."}`

// codexChat sends one non-streamed chat completion for model through
// gateway url with session id sid and returns the HTTP status.
func codexChat(t *testing.T, url, token, model, sid string) int {
	t.Helper()
	body := `{"model":"` + model + `","messages":[{"role":"user","content":"Say hello"}]}`
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", bytes.NewReader([]byte(body)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("session_id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// An account-policy 403 naming the requested model (Codex's ChatGPT-account
// denial) makes the gateway block that account for that model only, 60 s,
// as "model-policy:<bare model id, lowercased>": the request
// moves to the sibling without re-minting the token, the block reaches the
// broker, the account keeps serving other models, and a second gateway of
// the fleet never sends the denied model to it.
func TestCodexModelPolicyDenialBlocksTheModelFleetWide(t *testing.T) {
	sse := replay(t, "openai/testdata/codex_sparse.sse")
	const denied, other = "codex-policy-x", "codex-policy-y"
	f := newUpstream(t, codexWire, func(w http.ResponseWriter, r *http.Request, _ int, key string) {
		body, _ := io.ReadAll(r.Body)
		if key == denied && bytes.Contains(body, []byte(`"model":"gpt-6-sol"`)) {
			writeJSON(w, http.StatusForbidden, nil, codexModelDenied)
			return
		}
		writeSSE(w, sse)
	})
	dir := t.TempDir()
	b := startBroker(t, f, dir, "127.0.0.1:0")
	gm, token := startGateway(t, f, b, filepath.Join(dir, "gw-a"))
	s := &stack{fake: f, broker: b.client(), gw: gm, gwURL: gm.URL(), token: token}
	expires := time.Now().Add(24 * time.Hour).UnixMilli()
	xID := s.upload(t, "openai-codex", vault.Credential{Type: vault.TypeOAuth, Access: denied, Refresh: "codex-policy-refresh-x",
		Expires: expires, AccountID: "acct-policy-x", Email: "x@example.com"}, 1)
	s.upload(t, "openai-codex", vault.Credential{Type: vault.TypeOAuth, Access: other, Refresh: "codex-policy-refresh-y",
		Expires: expires, AccountID: "acct-policy-y", Email: "y@example.com"}, 2)

	// Sessions until one starts on the denied account (selection is
	// deterministic per session id).
	sid := ""
	for i := range 16 {
		n := len(f.requests())
		try := fmt.Sprintf("policy-session-%d", i)
		if code := codexChat(t, s.gwURL, token, "openai-codex/gpt-6-sol", try); code != http.StatusOK {
			t.Fatalf("session %s: status %d, want 200 (the sibling serves)", try, code)
		}
		if reqs := f.requests()[n:]; reqs[0].key == denied {
			if len(reqs) != 2 || reqs[1].key != other {
				t.Fatalf("after the denial the upstream saw %d more requests, want one with the sibling", len(reqs)-1)
			}
			sid = try
			break
		}
	}
	if sid == "" {
		t.Fatal("no session started on the denied account")
	}
	if got := f.refreshes(); len(got) != 0 {
		t.Errorf("a policy denial re-minted the token (%d refreshes): the token is valid", len(got))
	}

	// The block reached the broker, model-scoped, about 60 s.
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	var got []vault.CredentialBlock
	for {
		snap, err := s.broker.Snapshot(ctx, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		got = nil
		for _, e := range snap.Snapshot.Credentials {
			if len(e.Blocks) > 0 {
				if e.ID != xID {
					t.Fatalf("block on credential %d, want only %d: %+v", e.ID, xID, e.Blocks)
				}
				got = e.Blocks
			}
		}
		if len(got) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the model-policy block never reached the broker")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if len(got) != 1 || got[0].ProviderKey != "openai-codex:oauth" || got[0].Scope != "model-policy:gpt-6-sol" {
		t.Fatalf("broker blocks %+v, want one openai-codex:oauth model-policy:gpt-6-sol", got)
	}
	if left := time.Until(time.UnixMilli(got[0].UntilMs)); left < 50*time.Second || left > 61*time.Second {
		t.Fatalf("block ends in %v, want about 60 s", left)
	}

	// The denied account is skipped for gpt-6-sol only: sessions that
	// start on it for gpt-5.5 still get it.
	served := func(url, tok, model, session string) []string {
		t.Helper()
		n := len(f.requests())
		if code := codexChat(t, url, tok, model, session); code != http.StatusOK {
			t.Fatalf("%s: status %d", model, code)
		}
		var keys []string
		for _, r := range f.requests()[n:] {
			keys = append(keys, r.key)
		}
		return keys
	}
	if k := served(s.gwURL, token, "openai-codex/gpt-6-sol", sid); strings.Join(k, ",") != other {
		t.Errorf("gpt-6-sol after the block went to %v, want the sibling only", k)
	}
	usedDenied := false
	for i := range 16 {
		k := served(s.gwURL, token, "openai-codex/gpt-5.5", fmt.Sprintf("other-model-session-%d", i))
		if len(k) != 1 {
			t.Fatalf("gpt-5.5 took %d upstream calls (%v), want 1", len(k), k)
		}
		usedDenied = usedDenied || k[0] == denied
	}
	if !usedDenied {
		t.Error("no gpt-5.5 request used the account blocked for gpt-6-sol only")
	}

	// A second gateway of the fleet holds the shared block and never sends
	// gpt-6-sol to the denied account, whatever the session.
	gm2, token2 := startGateway(t, f, b, filepath.Join(dir, "gw-b"))
	s2 := &stack{fake: f, broker: b.client(), gw: gm2, gwURL: gm2.URL(), token: token2}
	s2.waitStore(t, "openai-codex", 2)
	for i := range 8 {
		if k := served(s2.gwURL, token2, "openai-codex/gpt-6-sol", fmt.Sprintf("fleet-session-%d", i)); strings.Join(k, ",") != other {
			t.Fatalf("gateway B sent gpt-6-sol to %v, want the sibling only", k)
		}
	}
}

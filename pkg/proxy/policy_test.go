package proxy_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

// An account-wide policy denial (cyber_policy) moves the request to the
// sibling without re-minting the denied token: the token is
// valid, the account may not do this. The denied account stays skipped
// for the next request.
func TestAccountPolicyDenialRotatesWithoutRefresh(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, key string) {
		if key == "tok-a" {
			writeJSON(w, 403, nil, `{"type":"error","error":{"type":"permission_error","message":"This request was refused under cyber_policy."}}`)
			return
		}
		writeSSE(w, anthropicText)
	})
	src := &memSource{entries: []vault.Entry{oauthEntry(1, "anthropic", "tok-a"), oauthEntry(2, "anthropic", "tok-b")}}
	gw := gateway(t, src, map[string]string{"anthropic": up.srv.URL}, nil)
	c := openaiClient(gw.URL)
	for range 3 {
		if _, err := c.Chat.Completions.New(context.Background(), chatParams("anthropic/claude-sonnet-4-5")); err != nil {
			t.Fatal(err)
		}
	}
	got := up.seen()
	denied := 0
	for _, k := range got {
		if k == "tok-a" {
			denied++
		}
	}
	if denied != 1 || len(got) != 4 {
		t.Errorf("upstream credentials %q, want the denied account once and the sibling for every completion", got)
	}
	if r := src.refreshed(); len(r) != 0 {
		t.Errorf("refreshes %v: a policy denial re-minted the token", r)
	}
}

package refresh

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

// encodedForms are the forms a token endpoint echoing its request shows a
// secret in: raw, form-encoded, path-encoded and inside a JSON string.
func encodedForms(secret string) []string {
	j, _ := json.Marshal(secret)
	return []string{secret, url.QueryEscape(secret), url.PathEscape(secret), strings.Trim(string(j), `"`)}
}

func assertNoEncodedSecret(t *testing.T, where, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		for _, form := range encodedForms(s) {
			if strings.Contains(text, form) {
				t.Errorf("%s holds %q (a form of a secret): %q", where, form, text)
			}
		}
	}
}

func TestDefinitiveFailureEchoingTheRequestStoresNoSecret(t *testing.T) {
	f := newFixture(t)
	const refresh = "rt/1+a&b<c>=d"
	id := f.add(t, "anthropic", "echo@x", refresh, t0.UnixMilli())
	access := "acc0-" + refresh
	f.fp.setReply(func(w http.ResponseWriter, _ *http.Request, got string) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusBadRequest)
		j, _ := json.Marshal(got)
		_, _ = io.WriteString(w, "invalid_grant: cannot use refresh_token="+url.QueryEscape(got)+" body "+string(j)+" auth "+url.PathEscape(access))
	})

	_, err := f.r.RefreshNow(context.Background(), id)
	if err == nil {
		t.Fatal("RefreshNow succeeded")
	}
	if f.fp.hits.Load() != 1 {
		t.Fatalf("token endpoint hits = %d", f.fp.hits.Load())
	}
	assertNoEncodedSecret(t, "client message", vault.ErrorMessage(err), refresh, access)
	assertNoEncodedSecret(t, "logs", f.logs.String(), refresh, access)
	rec := f.get(t, id)
	if rec.Active() {
		t.Fatalf("row still active after a 400 invalid_grant reply: %+v", rec)
	}
	assertNoEncodedSecret(t, "disabled cause", rec.DisabledCause, refresh, access)
	if !strings.Contains(rec.DisabledCause, "400") {
		t.Errorf("disabled cause %q does not keep the status", rec.DisabledCause)
	}
}

func TestRedirectingTokenEndpointGetsNoSecretAndKeepsTheRow(t *testing.T) {
	f := newFixture(t)
	var stolen atomic.Int64
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		rotate(3600)(w, r, "stolen")
	}))
	t.Cleanup(thief.Close)
	id := f.add(t, "anthropic", "redirect@x", "r1", t0.UnixMilli())
	f.fp.setReply(func(w http.ResponseWriter, r *http.Request, _ string) {
		http.Redirect(w, r, thief.URL+"/token?next=1", http.StatusTemporaryRedirect)
	})

	_, err := f.r.RefreshNow(context.Background(), id)
	if err == nil {
		t.Fatal("RefreshNow succeeded")
	}
	if stolen.Load() != 0 {
		t.Fatalf("the redirect target got %d token request(s)", stolen.Load())
	}
	if msg := vault.ErrorMessage(err); !strings.Contains(msg, "307 redirect to "+thief.URL) || strings.Contains(msg, "next=1") {
		t.Errorf("message %q should name the status and the target origin only", msg)
	}
	if rec := f.get(t, id); !rec.Active() || rec.Credential.Refresh != "r1" {
		t.Errorf("a redirect changed the row: %+v", rec)
	}
	if got := f.resultList(); len(got) != 1 || got[0] != "anthropic:"+OutcomeTransient {
		t.Errorf("results = %v, want one transient", got)
	}
}

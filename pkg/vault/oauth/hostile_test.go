package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/oauth2"

	"github.com/ompgo/omp/internal/provider"
	"github.com/ompgo/omp/pkg/vault"
)

// echoBody answers status with the request body as it arrived (a broken
// token endpoint that quotes the form it could not parse).
func echoBody(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		_, _ = w.Write(raw)
	}
}

// echoJSON answers status with the request body quoted in a JSON error.
func echoJSON(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_request", "error_description": "cannot parse " + string(raw)})
	}
}

// assertNoSecret fails when any encoding of any secret is in text.
func assertNoSecret(t *testing.T, where, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if l := leaks(text, s); len(l) > 0 {
			t.Errorf("%s leaks %v of %q: %q", where, l, s, text)
		}
	}
}

// retrieveText is the text of the *oauth2.RetrieveError cause, which a
// caller logging the whole chain would print.
func retrieveText(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return re.Error() + " " + string(re.Body) + " " + re.ErrorDescription
	}
	return ""
}

func TestRefreshErrorNeverEchoesTheRequestSecrets(t *testing.T) {
	// Characters that URL-encoding, JSON escaping and base64 all change.
	const refresh, access = "1//0g+Refresh/Token=&<x>", "ya29.access/token+1"
	cred := vault.Credential{Type: vault.TypeOAuth, Access: access, Refresh: refresh, ProjectID: "p"}
	secrets := []string{refresh, access, provider.GeminiCLIClientSecret}
	for name, reply := range map[string]http.HandlerFunc{"form echoed as text": echoBody(400), "form echoed in JSON": echoJSON(400), "form echoed on a 502": echoBody(502)} {
		t.Run(name, func(t *testing.T) {
			ts := newTokenServer(t, reply)
			_, err := testRegistry(ts, t0).Refresh(context.Background(), "google-gemini-cli", cred, ts.Client())
			if err == nil {
				t.Fatal("Refresh succeeded")
			}
			if !strings.Contains(ts.last.Load().Raw, "client_secret=") {
				t.Fatalf("the request carried no client secret (the test proves nothing): %q", ts.last.Load().Raw)
			}
			assertNoSecret(t, "error text", err.Error(), secrets...)
			assertNoSecret(t, "cause text", retrieveText(err), secrets...)
			var re *RefreshError
			if !errors.As(err, &re) || re.Status == 0 {
				t.Fatalf("error %v is not a RefreshError with a status", err)
			}
			assertNoSecret(t, "description", re.Description+" "+re.Code, secrets...)
			if !strings.Contains(err.Error(), "withheld") {
				t.Errorf("error %q does not say the echoing body was withheld", err)
			}
		})
	}
}

func TestMCPRefreshErrorNeverEchoesTheRequestSecrets(t *testing.T) {
	ts := newTokenServer(t, echoBody(400))
	cred := mcpCred("mcp-client/secret+1", "mcp-refresh/token=&1")
	cred.Extra["tokenUrl"] = json.RawMessage(`"` + ts.URL + `/token"`)
	_, err := testRegistry(ts, t0).Refresh(context.Background(), "mcp_oauth_x1", cred, ts.Client())
	if err == nil {
		t.Fatal("Refresh succeeded")
	}
	assertNoSecret(t, "error text", err.Error(), "mcp-client/secret+1", "mcp-refresh/token=&1", cred.Access)
	assertNoSecret(t, "cause text", retrieveText(err), "mcp-client/secret+1", "mcp-refresh/token=&1", cred.Access)
}

func TestExchangeErrorNeverEchoesTheCode(t *testing.T) {
	ts := newTokenServer(t, echoBody(400))
	const code, verifier = "auth/code+1=x", "verifier-secret-0123456789"
	_, err := testRegistry(ts, t0).Exchange(context.Background(), "google-gemini-cli", code, "", verifier, "", ts.Client())
	if err == nil {
		t.Fatal("Exchange succeeded")
	}
	assertNoSecret(t, "error text", err.Error(), code, verifier, provider.GeminiCLIClientSecret)
}

// redirectPair is a token endpoint answering status with a Location on a
// second listener, which counts the requests it gets.
func redirectPair(t *testing.T, status int) (*tokenServer, *atomic.Int64) {
	t.Helper()
	var stolen atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		jsonReply(200, `{"access_token":"x","refresh_token":"y","expires_in":3600}`)(w, r)
	}))
	t.Cleanup(other.Close)
	ts := newTokenServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/steal?refresh_token=in-the-query", status)
	})
	return ts, &stolen
}

func TestTokenRequestsNeverFollowRedirects(t *testing.T) {
	cred := vault.Credential{Type: vault.TypeOAuth, Access: "secret-access", Refresh: "secret-refresh", ProjectID: "p"}
	for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound} {
		t.Run("refresh "+http.StatusText(status), func(t *testing.T) {
			ts, stolen := redirectPair(t, status)
			hc := ts.Client()
			_, err := testRegistry(ts, t0).Refresh(context.Background(), "anthropic", cred, hc)
			if stolen.Load() != 0 {
				t.Fatalf("the redirect target got %d request(s)", stolen.Load())
			}
			if hc.CheckRedirect != nil {
				t.Error("Refresh changed the caller's client")
			}
			if err == nil {
				t.Fatal("Refresh succeeded")
			}
			if Classify(err) != Transient {
				t.Errorf("Classify(%v) = %v, want transient: a redirect says nothing about the grant", err, Classify(err))
			}
			msg := err.Error()
			if !strings.Contains(msg, itoa(status)+" redirect to http://127.0.0.1:") || strings.Contains(msg, "steal") || strings.Contains(msg, "in-the-query") {
				t.Errorf("error %q should name the status and the Location's origin only", msg)
			}
		})
	}
	t.Run("MCP refresh", func(t *testing.T) {
		ts, stolen := redirectPair(t, http.StatusTemporaryRedirect)
		c := mcpCred("mcp-secret-1", "mcp-refresh-1")
		c.Extra["tokenUrl"] = json.RawMessage(`"` + ts.URL + `/token"`)
		_, err := testRegistry(ts, t0).Refresh(context.Background(), "mcp_oauth_x1", c, ts.Client())
		if stolen.Load() != 0 || err == nil {
			t.Fatalf("redirect target got %d request(s); err %v", stolen.Load(), err)
		}
		if Classify(err) != Transient || !strings.Contains(err.Error(), "307 redirect to http://127.0.0.1:") || strings.Contains(err.Error(), "steal") {
			t.Errorf("err %q (class %v), want a transient failure naming the status and origin", err, Classify(err))
		}
	})
	t.Run("login code exchange", func(t *testing.T) {
		ts, stolen := redirectPair(t, http.StatusPermanentRedirect)
		_, err := testRegistry(ts, t0).Exchange(context.Background(), "anthropic", "code-1#state-1", "", "verifier", "", ts.Client())
		if stolen.Load() != 0 || err == nil {
			t.Fatalf("redirect target got %d request(s); err %v", stolen.Load(), err)
		}
		if !strings.Contains(err.Error(), "308 redirect to http://127.0.0.1:") {
			t.Errorf("err %q, want it to name the redirect", err)
		}
	})
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// mcpCred is an MCP row with a client secret (tokenUrl set by the caller).
func mcpCred(secret, refresh string) vault.Credential {
	return vault.Credential{Type: vault.TypeOAuth, Access: "mcp-access-1", Refresh: refresh,
		Extra: map[string]json.RawMessage{"clientSecret": json.RawMessage(`"` + secret + `"`), "clientId": json.RawMessage(`"cid"`)}}
}

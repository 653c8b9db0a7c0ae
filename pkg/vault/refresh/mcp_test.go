package refresh

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/oauth"
)

// mcpEndpoint is an MCP server's token endpoint (form refresh_token grant).
// By default it rotates: refresh r → access "mcp-acc-"+r, refresh r+"'".
type mcpEndpoint struct {
	*httptest.Server
	mu    sync.Mutex
	forms []url.Values
	reply func(w http.ResponseWriter, r *http.Request, form url.Values)
}

func newMCPEndpoint(t *testing.T) *mcpEndpoint {
	t.Helper()
	m := &mcpEndpoint{reply: func(w http.ResponseWriter, _ *http.Request, form url.Values) {
		w.Header().Set("Content-Type", "application/json")
		rt := form.Get("refresh_token")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "mcp-acc-" + rt, "refresh_token": rt + "'", "expires_in": 1800})
	}}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			http.Error(w, "want a form POST", http.StatusUnsupportedMediaType)
			return
		}
		m.mu.Lock()
		m.forms = append(m.forms, form)
		reply := m.reply
		m.mu.Unlock()
		reply(w, r, form)
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *mcpEndpoint) set(f func(http.ResponseWriter, *http.Request, url.Values)) {
	m.mu.Lock()
	m.reply = f
	m.mu.Unlock()
}

func (m *mcpEndpoint) last(t *testing.T) url.Values {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.forms) == 0 {
		t.Fatal("no token request reached the MCP endpoint")
	}
	return m.forms[len(m.forms)-1]
}

const mcpProvider = "mcp_oauth:profile:default:https://mcp.example/sse"

func (f *fixture) addMCP(t *testing.T, provider string, extra map[string]string, expires int64) int64 {
	t.Helper()
	c := vault.Credential{Type: vault.TypeOAuth, Access: "mcp-acc0", Refresh: "mcp-rt", Expires: expires, Extra: map[string]json.RawMessage{}}
	for k, v := range extra {
		b, _ := json.Marshal(v)
		c.Extra[k] = b
	}
	recs, err := f.store.Upsert(context.Background(), provider, c)
	if err != nil {
		t.Fatal(err)
	}
	return recs[len(recs)-1].ID
}

// TestMCPRefresh covers the MCP OAuth refresh (a refresh_token grant to the
// row's tokenUrl, http or https only) through the real refresher, vault and an MCP token endpoint on a local listener.
func TestMCPRefresh(t *testing.T) {
	material := func(m *mcpEndpoint) map[string]string {
		return map[string]string{"tokenUrl": m.URL + "/token", "clientId": " cid ", "clientSecret": "csecret",
			"authorizationUrl": m.URL + "/authorize"}
	}

	t.Run("sweep rotates and keeps the refresh material", func(t *testing.T) {
		f := newFixture(t)
		f.r.OAuth.(*oauth.Registry).Now = func() time.Time { return time.UnixMilli(f.now.Load()) }
		m := newMCPEndpoint(t)
		id := f.addMCP(t, mcpProvider, material(m), t0.UnixMilli()+60_000)
		f.r.Sweep(context.Background())
		form := m.last(t)
		want := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"mcp-rt"}, "client_id": {"cid"},
			"client_secret": {"csecret"}, "resource": {"https://mcp.example/sse"}}
		if form.Encode() != want.Encode() {
			t.Fatalf("token request form\n got %s\nwant %s", form.Encode(), want.Encode())
		}
		rec := f.get(t, id)
		c := rec.Credential
		if c.Access != "mcp-acc-mcp-rt" || c.Refresh != "mcp-rt'" || c.Expires != t0.UnixMilli()+1_800_000 {
			t.Fatalf("refreshed credential access=%q refresh=%q expires=%d", c.Access, c.Refresh, c.Expires)
		}
		for _, k := range []string{"tokenUrl", "clientId", "clientSecret", "authorizationUrl"} {
			if c.ExtraString(k) != material(m)[k] {
				t.Errorf("refresh material %s lost: %q", k, c.ExtraString(k))
			}
		}
		// The rotated token is the one used next time.
		if _, err := f.r.RefreshNow(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		if got := m.last(t).Get("refresh_token"); got != "mcp-rt'" {
			t.Fatalf("second refresh sent %q, want the rotated token", got)
		}
		if c := f.get(t, id).Credential; c.Refresh != "mcp-rt''" {
			t.Fatalf("second rotation not persisted: %q", c.Refresh)
		}
	})

	t.Run("resource: stored value wins; fallback on the auth server origin is dropped", func(t *testing.T) {
		f := newFixture(t)
		m := newMCPEndpoint(t)
		mat := material(m)
		mat["resource"] = "https://api.example/mcp"
		id := f.addMCP(t, mcpProvider, mat, t0.UnixMilli())
		if _, err := f.r.RefreshNow(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		if got := m.last(t).Get("resource"); got != "https://api.example/mcp" {
			t.Fatalf("resource %q", got)
		}
		same := f.addMCP(t, "mcp_oauth:"+m.URL+"/sse", map[string]string{"tokenUrl": m.URL + "/token"}, t0.UnixMilli())
		if _, err := f.r.RefreshNow(context.Background(), same); err != nil {
			t.Fatal(err)
		}
		if form := m.last(t); form.Has("resource") || form.Has("client_id") || form.Has("client_secret") {
			t.Fatalf("same-origin fallback resource or absent client fields sent: %s", form.Encode())
		}
	})

	t.Run("invalid_grant disables with the 18.1.21 cause", func(t *testing.T) {
		f := newFixture(t)
		m := newMCPEndpoint(t)
		m.set(func(w http.ResponseWriter, _ *http.Request, _ url.Values) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"invalid_grant"}`)
		})
		id := f.addMCP(t, "mcp_oauth_k3y", material(m), t0.UnixMilli())
		_, err := f.r.RefreshNow(context.Background(), id)
		const msg = `MCP OAuth refresh failed: 400 {"error":"invalid_grant"}`
		if vault.ErrorMessage(err) != msg {
			t.Fatalf("error %q, want %q", vault.ErrorMessage(err), msg)
		}
		rec := f.get(t, id)
		if want := "oauth refresh failed: Error: " + msg; rec.DisabledCause != want {
			t.Fatalf("cause %q, want %q", rec.DisabledCause, want)
		}
		if !strings.Contains(f.logs.String(), `level=WARN msg="auth-broker refresh failed definitively" id=`+itoa(id)) {
			t.Fatalf("missing warn line:\n%s", f.logs.String())
		}
	})

	t.Run("a slow endpoint times out and the row stays", func(t *testing.T) {
		f := newFixture(t)
		f.r.Timeout = 100 * time.Millisecond
		m := newMCPEndpoint(t)
		m.set(func(_ http.ResponseWriter, r *http.Request, _ url.Values) { <-r.Context().Done() })
		id := f.addMCP(t, mcpProvider, material(m), t0.UnixMilli())
		_, err := f.r.RefreshNow(context.Background(), id)
		if want := "OAuth token refresh timed out for provider: " + mcpProvider; vault.ErrorMessage(err) != want {
			t.Fatalf("error %q, want %q", vault.ErrorMessage(err), want)
		}
		if !f.get(t, id).Active() {
			t.Fatal("a timeout disabled the row")
		}
	})

	t.Run("bad material fails without a request and keeps the row", func(t *testing.T) {
		for name, tc := range map[string]struct {
			extra map[string]string
			want  string
		}{
			"no token URL":       {map[string]string{"clientId": "x"}, "MCP OAuth credential is missing refresh material"},
			"non-http token URL": {map[string]string{"tokenUrl": "file:///etc/passwd"}, "MCP OAuth token URL must be an http or https URL"},
			"bad resource":       {map[string]string{"tokenUrl": "http://127.0.0.1:1/token", "resource": "https://x.example/#frag"}, "OAuth resource URI must not include a fragment"},
		} {
			t.Run(name, func(t *testing.T) {
				f := newFixture(t)
				id := f.addMCP(t, mcpProvider, tc.extra, t0.UnixMilli())
				_, err := f.r.RefreshNow(context.Background(), id)
				if vault.ErrorMessage(err) != tc.want {
					t.Fatalf("error %q, want %q", vault.ErrorMessage(err), tc.want)
				}
				if !f.get(t, id).Active() {
					t.Fatal("row disabled")
				}
			})
		}
	})
}

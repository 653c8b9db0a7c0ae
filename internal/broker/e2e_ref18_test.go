package broker_test

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

	"github.com/ompgo/omp/pkg/vault"
)

// TestE2EClient18Traffic replays what an 18.1.21 client sends to a broker:
// uploads with extension fields, an OAuth login replacing an API key, and
// MCP OAuth refreshes through POST /v1/credential/:id/refresh against the
// row's own token endpoint.
func TestE2EClient18Traffic(t *testing.T) {
	h := newHarness(t)
	b := h.start(t)

	var mu sync.Mutex
	var seen []string
	dead := false
	mcp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		rt := form.Get("refresh_token")
		mu.Lock()
		seen = append(seen, rt)
		isDead := dead
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if isDead {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"invalid_grant"}`)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "mcp-at-" + rt, "refresh_token": rt + "-next", "expires_in": 3600})
	}))
	t.Cleanup(mcp.Close)

	post := func(path, body string) rawResponse {
		t.Helper()
		return b.do(t, http.MethodPost, path, b.bearer(), strings.NewReader(body))
	}

	// An API key from `login` (source), then an OAuth login of the same provider.
	if r := post("/v1/credential", `{"provider":"zai","credential":{"type":"api_key","key":"sk-zai-e2e","source":"login"}}`); r.status != 200 ||
		r.body != `{"entries":[{"id":1,"provider":"zai","credential":{"type":"api_key","key":"sk-zai-e2e","source":"login"},"identityKey":null}]}` {
		t.Fatalf("api key upload = %d %s", r.status, r.body)
	}
	r := post("/v1/credential", `{"provider":"zai","credential":{"type":"oauth","refresh":"","access":"zai-at","expires":4070908800000,"email":"z@x.io","orgId":"o","foo":{"bar":1}}}`)
	if r.status != 200 || !strings.Contains(r.body, `"email":"z@x.io","foo":{"bar":1},"orgId":"o"}`) || strings.Contains(r.body, "sk-zai-e2e") {
		t.Fatalf("oauth upload = %d %s", r.status, r.body)
	}
	ctx := context.Background()
	dis, err := b.m.Store.ListDisabled(ctx, "zai")
	if err != nil || len(dis) != 1 || dis[0].DisabledCause != vault.CauseReplacedByOAuth {
		t.Fatalf("disabled zai rows = %+v %v", dis, err)
	}

	// An MCP row with its refresh material, refreshed by the endpoint.
	const provider = "mcp_oauth:profile:default:https://mcp.example/sse"
	r = post("/v1/credential", `{"provider":"`+provider+`","credential":{"type":"oauth","refresh":"mcp-rt","access":"mcp-at","expires":1,"tokenUrl":"`+mcp.URL+`/token","clientId":"cid","clientSecret":"cs"}}`)
	if r.status != 200 {
		t.Fatalf("mcp upload = %d %s", r.status, r.body)
	}
	var up struct{ Entries []struct{ ID int64 } }
	_ = json.Unmarshal([]byte(r.body), &up)
	id := up.Entries[0].ID
	path := "/v1/credential/" + itoa(int(id)) + "/refresh"
	r = post(path, "")
	if r.status != 200 || !strings.Contains(r.body, `"access":"mcp-at-mcp-rt"`) || !strings.Contains(r.body, `"tokenUrl":"`+mcp.URL+`/token"`) ||
		!strings.Contains(r.body, `"refresh":"__remote__"`) || strings.Contains(r.body, "mcp-rt-next") {
		t.Fatalf("mcp refresh = %d %s", r.status, r.body)
	}
	if r = post(path, ""); r.status != 200 || !strings.Contains(r.body, `"access":"mcp-at-mcp-rt-next"`) {
		t.Fatalf("second mcp refresh = %d %s", r.status, r.body)
	}
	mu.Lock()
	if len(seen) != 2 || seen[1] != "mcp-rt-next" {
		t.Errorf("token endpoint saw %q, want the rotated token the second time", seen)
	}
	dead = true
	mu.Unlock()
	r = post(path, "")
	if r.status != 500 || !strings.Contains(r.body, `MCP OAuth refresh failed: 400`) {
		t.Fatalf("dead mcp refresh = %d %s", r.status, r.body)
	}
	rec, err := b.m.Store.Get(ctx, id)
	if err != nil || !strings.HasPrefix(rec.DisabledCause, "oauth refresh failed: Error: MCP OAuth refresh failed: 400") {
		t.Fatalf("dead mcp row cause %q (%v)", rec.DisabledCause, err)
	}
	if rec.Credential.ExtraString("clientSecret") != "cs" {
		t.Fatal("refresh material lost from the stored row")
	}
}

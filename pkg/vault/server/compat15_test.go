package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
)

// The strict 15.x wire structs: a 15.11.7 client rejects
// any other key. Decoding with DisallowUnknownFields over them is that
// client.
type (
	cred15 struct {
		Type          string  `json:"type"`
		Refresh       *string `json:"refresh,omitempty"`
		Access        *string `json:"access,omitempty"`
		Expires       *int64  `json:"expires,omitempty"`
		EnterpriseURL *string `json:"enterpriseUrl,omitempty"`
		ProjectID     *string `json:"projectId,omitempty"`
		Email         *string `json:"email,omitempty"`
		AccountID     *string `json:"accountId,omitempty"`
		Key           *string `json:"key,omitempty"`
	}
	entry15 struct {
		ID          int64   `json:"id"`
		Provider    string  `json:"provider"`
		Credential  cred15  `json:"credential"`
		IdentityKey *string `json:"identityKey"`
		RotatesInMs *int64  `json:"rotatesInMs"`
	}
	refresher15 struct {
		Enabled       bool  `json:"enabled"`
		IntervalMs    int64 `json:"intervalMs"`
		SkewMs        int64 `json:"skewMs"`
		NextSweepInMs int64 `json:"nextSweepInMs"`
	}
	snapshot15 struct {
		Kind        string      `json:"kind,omitempty"` // stream frames only
		Generation  int64       `json:"generation"`
		GeneratedAt int64       `json:"generatedAt"`
		ServerNowMs int64       `json:"serverNowMs"`
		Refresher   refresher15 `json:"refresher"`
		Credentials []entry15   `json:"credentials"`
	}
	entryFrame15 struct {
		Kind        string      `json:"kind"`
		Generation  int64       `json:"generation"`
		ServerNowMs int64       `json:"serverNowMs"`
		Refresher   refresher15 `json:"refresher"`
		Entry       entry15     `json:"entry"`
	}
)

func strict(t *testing.T, data string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("a strict 15.x client rejects %s: %v", data, err)
	}
}

// extended stores one credential of each 18.1.21 kind: an org-scoped OAuth
// login, an MCP row with refresh material, a login API key.
func extended(t *testing.T, e *env) {
	t.Helper()
	org := oauthCred("a@b.c", 1_765_503_600_000)
	org.Extra["orgId"] = json.RawMessage(`"org-1"`)
	org.Extra["orgName"] = json.RawMessage(`"Team"`)
	org.Extra["authorizedAt"] = json.RawMessage(`1765000000000`)
	e.upsert("anthropic", org)
	e.upsert("mcp_oauth:profile:default:https://mcp.example/sse", vault.Credential{Type: vault.TypeOAuth, Access: "mcp-at", Refresh: "mcp-rt",
		Expires: 1_765_503_600_000, Extra: map[string]json.RawMessage{"tokenUrl": json.RawMessage(`"https://mcp.example/token"`),
			"clientId": json.RawMessage(`"cid"`), "clientSecret": json.RawMessage(`"csecret"`)}})
	e.upsert("zai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-zai", Source: vault.SourceLogin})
}

func TestSnapshotWithoutCapabilitiesParsesAs15x(t *testing.T) {
	e := newEnv(t)
	extended(t, e)
	st, h, body := e.get("/v1/snapshot")
	if st != 200 || h.Get("Vary") != api.CapabilitiesHeader {
		t.Fatalf("snapshot = %d Vary=%q %s", st, h.Get("Vary"), body)
	}
	var snap snapshot15
	strict(t, body, &snap)
	if len(snap.Credentials) != 3 {
		t.Fatalf("credentials %d", len(snap.Credentials))
	}
	for _, leak := range []string{"orgId", "tokenUrl", "csecret", "source", "apiEndpoint"} {
		if strings.Contains(body, leak) {
			t.Errorf("15.x snapshot carries %s: %s", leak, body)
		}
	}
	if k := snap.Credentials[0].IdentityKey; k == nil || *k != "email:a@b.c|org:org-1" {
		t.Errorf("identityKey %v, want the 18.1.21 org key", k)
	}

	// With the header (any value) the same snapshot carries every stored field.
	st, _, body = e.get("/v1/snapshot", api.CapabilitiesHeader, "something-else")
	if st != 200 {
		t.Fatalf("snapshot = %d", st)
	}
	for _, want := range []string{
		`"email":"a@b.c","apiEndpoint":"https://x","authorizedAt":1765000000000,"orgId":"org-1","orgName":"Team"}`,
		`"clientId":"cid","clientSecret":"csecret","tokenUrl":"https://mcp.example/token"}`,
		`{"type":"api_key","key":"sk-zai","source":"login"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("capable snapshot lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, "mcp-rt") {
		t.Fatal("refresh token leaked")
	}
}

func TestStreamWithoutCapabilitiesParsesAs15x(t *testing.T) {
	for _, capable := range []bool{false, true} {
		t.Run(map[bool]string{false: "15.x", true: "capable"}[capable], func(t *testing.T) {
			e := newEnv(t)
			extended(t, e)
			req, _ := http.NewRequestWithContext(streamCtx(t), http.MethodGet, e.ts.URL+"/v1/snapshot/stream", nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			if capable {
				req.Header.Set(api.CapabilitiesHeader, "codex-meter-block-scopes")
			}
			resp, err := e.ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.Header.Get("Vary") != api.CapabilitiesHeader {
				t.Errorf("stream Vary = %q", resp.Header.Get("Vary"))
			}
			r := bufio.NewReader(resp.Body)
			first := dataOf(t, frame(t, r))
			// A change to an extended row yields an entry frame.
			c := oauthCred("a@b.c", 1_765_503_700_000)
			c.Extra["orgId"] = json.RawMessage(`"org-1"`)
			e.upsert("anthropic", c)
			next := dataOf(t, frame(t, r))
			if !capable {
				var snap snapshot15
				strict(t, first, &snap)
				var ef entryFrame15
				strict(t, next, &ef)
				if ef.Kind != "entry" || ef.Entry.ID != 1 {
					t.Fatalf("entry frame %s", next)
				}
				return
			}
			if !strings.Contains(first, `"orgId":"org-1"`) || !strings.Contains(first, `"tokenUrl":`) || !strings.Contains(first, `"source":"login"`) {
				t.Fatalf("capable snapshot frame lacks extensions: %s", first)
			}
			if !strings.Contains(next, `"kind":"entry"`) || !strings.Contains(next, `"orgId":"org-1"`) {
				t.Fatalf("capable entry frame lacks extensions: %s", next)
			}
		})
	}
}

func dataOf(t *testing.T, f string) string {
	t.Helper()
	for _, line := range strings.Split(f, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			var buf bytes.Buffer
			if err := json.Compact(&buf, []byte(d)); err != nil {
				t.Fatalf("frame data is not JSON: %s", d)
			}
			return d
		}
	}
	t.Fatalf("no data in frame %q", f)
	return ""
}

package oauth

import (
	"encoding/json"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

func TestMCPResource(t *testing.T) {
	cred := func(kv ...string) vault.Credential {
		c := vault.Credential{Type: vault.TypeOAuth, Extra: map[string]json.RawMessage{}}
		for i := 0; i+1 < len(kv); i += 2 {
			b, _ := json.Marshal(kv[i+1])
			c.Extra[kv[i]] = b
		}
		return c
	}
	const tok = "https://auth.example/token"
	tests := []struct {
		name, provider string
		cred           vault.Credential
		want, err      string
	}{
		{"profile id yields the server URL", "mcp_oauth:profile:work:https://mcp.example/sse", cred(), "https://mcp.example/sse", ""},
		{"legacy id yields the server URL", "mcp_oauth:https://mcp.example/sse", cred(), "https://mcp.example/sse", ""},
		{"random id has none", "mcp_oauth_x1", cred(), "", ""},
		{"profile id without URL has none", "mcp_oauth:profile:work", cred(), "", ""},
		{"fallback on the token URL origin is dropped", "mcp_oauth:https://auth.example:443/mcp", cred(), "", ""},
		{"fallback on the authorization URL origin is dropped", "mcp_oauth:https://login.example/mcp", cred("authorizationUrl", "https://login.example/authorize"), "", ""},
		{"authorization URL anchors instead of the token URL", "mcp_oauth:https://auth.example/mcp", cred("authorizationUrl", "https://login.example/authorize"), "https://auth.example/mcp", ""},
		{"a stored resource is kept even on the same origin", "mcp_oauth_x", cred("resource", "https://auth.example/"), "https://auth.example/", ""},
		{"surrounding whitespace is an error", "mcp_oauth_x", cred("resource", " https://a.example"), "", "OAuth resource URI must not include surrounding whitespace"},
		{"non-http scheme is an error", "mcp_oauth_x", cred("resource", "ftp://a.example"), "", "OAuth resource URI must use http or https"},
		{"fragment is an error", "mcp_oauth_x", cred("resource", "https://a.example/#x"), "", "OAuth resource URI must not include a fragment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mcpResourceFor(tt.provider, tt.cred, tok)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("= %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	for p, want := range map[string]bool{"mcp_oauth:x": true, "mcp_oauth_x": true, "mcp-oauth:x": false, "anthropic": false} {
		if IsMCP(p) != want {
			t.Errorf("IsMCP(%q) = %v", p, !want)
		}
	}
}

package vault_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

// Validate refuses a credential whose type the vault does not store, empty
// included, and names the type; the two known types pass.
func TestValidateCredentialType(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    vault.Credential
		want string // "" = valid; else a part of the message
	}{
		{"oauth", vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: "r"}, ""},
		{"api key", vault.Credential{Type: vault.TypeAPIKey, Key: "sk"}, ""},
		{"empty type", vault.Credential{Access: "a", Refresh: "r"}, `credential.type must be "oauth" or "api_key" (was empty)`},
		{"empty type with a key", vault.Credential{Key: "sk"}, "(was empty)"},
		{"unknown type", vault.Credential{Type: "bearer", Access: "a"}, `credential.type must be "oauth" or "api_key" (was "bearer")`},
		{"type in another case", vault.Credential{Type: "OAuth", Access: "a"}, `(was "OAuth")`},
		{"type with a space", vault.Credential{Type: "api_key ", Key: "sk"}, `(was "api_key ")`},
		{"long type is clipped", vault.Credential{Type: vault.CredentialType(strings.Repeat("x", 100))}, `(was "` + strings.Repeat("x", 64) + `…")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if vault.ErrorCode(err) != vault.EINVALID || !strings.Contains(vault.ErrorMessage(err), tc.want) {
				t.Fatalf("Validate = %v, want EINVALID containing %q", err, tc.want)
			}
		})
	}
}

// TestAppendWireBytes pins the wire bytes of both shapes: member order,
// omitted optionals, quoting and compacted extension values.
func TestAppendWireBytes(t *testing.T) {
	oauth := vault.Credential{Type: vault.TypeOAuth, Refresh: "r<1>", Access: "a&b", Expires: 5, ProjectID: "p", Email: "e@x",
		Extra: map[string]json.RawMessage{"zeta": json.RawMessage(` { "k" : [1, 2] } `), "alpha": json.RawMessage(`"x\u2028"`), "email": json.RawMessage(`"ignored"`)}}
	key := vault.Credential{Type: vault.TypeAPIKey, Key: "sk-1", Source: "env"}
	for _, tc := range []struct {
		c    vault.Credential
		full bool
		want string
	}{
		{oauth, false, `{"type":"oauth","refresh":"r\u003c1\u003e","access":"a\u0026b","expires":5,"projectId":"p","email":"e@x"}`},
		{oauth, true, `{"type":"oauth","refresh":"r\u003c1\u003e","access":"a\u0026b","expires":5,"projectId":"p","email":"e@x","alpha":"x\u2028","zeta":{"k":[1,2]}}`},
		{vault.Credential{Type: vault.TypeOAuth}, true, `{"type":"oauth","refresh":"","access":"","expires":0}`},
		{key, false, `{"type":"api_key","key":"sk-1"}`},
		{key, true, `{"type":"api_key","key":"sk-1","source":"env"}`},
	} {
		got, err := tc.c.AppendWire([]byte("x"), tc.full)
		if err != nil || string(got) != "x"+tc.want {
			t.Errorf("AppendWire(full=%v) = %s, %v\nwant x%s", tc.full, got, err, tc.want)
		}
	}
	bad := vault.Credential{Type: vault.TypeOAuth, Extra: map[string]json.RawMessage{"k": json.RawMessage(`{`)}}
	if _, err := bad.AppendWire(nil, true); err == nil {
		t.Error("an invalid extension value was encoded")
	}
}

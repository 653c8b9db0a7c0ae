package vault_test

import (
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

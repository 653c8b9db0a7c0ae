package sqlite

import (
	"encoding/json"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

func FuzzParseReferenceData(f *testing.F) {
	f.Add("oauth", `{"access":"a","refresh":"r","expires":1765503600000,"email":"a@x.io","apiEndpoint":"x"}`)
	f.Add("api_key", `{"key":"sk-A","source":"login"}`)
	f.Add("oauth", `{"type":"api_key","expires":"soon"}`)
	f.Add("api_key", `[]`)
	f.Add("other", `{}`)
	f.Fuzz(func(t *testing.T, ctype, data string) {
		c, err := parseReferenceData(ctype, data)
		if err != nil {
			return
		}
		if c.Type != vault.CredentialType(ctype) {
			t.Fatalf("type %q from credential_type %q", c.Type, ctype)
		}
		// A parsed credential is storable: its extras re-encode.
		if _, err := json.Marshal(c.Extra); err != nil {
			t.Fatal(err)
		}
		_ = vault.IdentityKey("p", c)
	})
}

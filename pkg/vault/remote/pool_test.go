package remote_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/remote"
)

// Every pool-file error, exact texts, in the order the loader checks them.
func TestLoadPoolErrors(t *testing.T) {
	dir := t.TempDir()
	const env = "OMP_AUTH_BROKER_ACCOUNT_POOL_FILE"
	cases := []struct{ name, body, want string }{
		{"invalid JSON", `{"anthropic":`, "Unable to read " + env + " at %s"},
		{"trailing data", `{} {}`, "Unable to read " + env + " at %s"},
		{"empty file", ``, "Unable to read " + env + " at %s"},
		{"array", `[]`, env + " must contain a JSON object"},
		{"null", `null`, env + " must contain a JSON object"},
		{"scalar", `"x"`, env + " must contain a JSON object"},
		{"empty key", `{" ":[]}`, env + " contains an empty provider id"},
		{"spaced key", `{" anthropic":[]}`, env + " contains a provider id with surrounding whitespace"},
		{"value not array", `{"anthropic":"email:a@b.c"}`, env + " entry for anthropic must be an array of identity keys"},
		{"item not string", `{"anthropic":[1]}`, env + " entry for anthropic contains an invalid identity key"},
		{"empty item", `{"anthropic":[""]}`, env + " entry for anthropic contains an invalid identity key"},
		{"spaced item", `{"anthropic":["email:a@b.c "]}`, env + " entry for anthropic contains an identity key with surrounding whitespace"},
		{"first bad key wins", `{"b":"x"," a":[]}`, env + " entry for b must be an array of identity keys"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name+".json")
			if err := os.WriteFile(path, []byte(c.body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := remote.LoadPool("  " + path + "\n")
			want := c.want
			if want == "Unable to read "+env+" at %s" {
				want = "Unable to read " + env + " at " + path
			}
			if err == nil || err.Error() != want {
				t.Fatalf("LoadPool error = %v, want %q", err, want)
			}
		})
	}
	if _, err := remote.LoadPool(filepath.Join(dir, "missing.json")); err == nil || err.Error() != "Unable to read "+env+" at "+filepath.Join(dir, "missing.json") {
		t.Errorf("missing file: %v", err)
	}
	if p, err := remote.LoadPool("   "); p != nil || err != nil {
		t.Errorf("blank env = %v, %v; want no pool", p, err)
	}
}

// The pool rule: API keys always pass; OAuth passes when its provider is
// absent or its identity key is listed, exactly; [] excludes the provider's
// OAuth rows.
func TestPoolAllows(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pool.json")
	if err := os.WriteFile(path, []byte(`{"anthropic":["email:x@y.z","email:x@y.z"],"openai-codex":[],"openai":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := remote.LoadPool(path)
	if err != nil {
		t.Fatal(err)
	}
	oauth := func(prov, key string) vault.Entry {
		return vault.Entry{Provider: prov, IdentityKey: key, Credential: vault.Credential{Type: vault.TypeOAuth}}
	}
	cases := []struct {
		e    vault.Entry
		want bool
	}{
		{oauth("anthropic", "email:x@y.z"), true},
		{oauth("anthropic", "EMAIL:x@y.z"), false},
		{oauth("anthropic", ""), false},
		{oauth("openai-codex", "email:x@y.z"), false},
		{oauth("google-antigravity", "email:any@y.z"), true},
		{vault.Entry{Provider: "openai", Credential: vault.Credential{Type: vault.TypeAPIKey}}, true},
	}
	for _, c := range cases {
		if got := p.Allows(c.e); got != c.want {
			t.Errorf("Allows(%s %q) = %v, want %v", c.e.Provider, c.e.IdentityKey, got, c.want)
		}
	}
	un := p.Unmatched([]vault.Entry{oauth("anthropic", "email:other@y.z")})
	if len(un) != 1 || len(un["anthropic"]) != 1 || un["anthropic"][0] != "email:x@y.z" {
		t.Errorf("Unmatched = %v, want only anthropic [email:x@y.z] (empty lists are silent)", un)
	}
}

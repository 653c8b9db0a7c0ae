package sqlite_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

// TestClientTokensLifecycle: create, list (ordered, digest only), conflict
// on name and on digest, revoke, ENOTFOUND on a second revoke, and the
// version moving on each change — also as seen by a second store on the same
// file (another process: the CLI beside a running broker). The credential
// generation does not move.
func TestClientTokensLifecycle(t *testing.T) {
	ctx := context.Background()
	st, e := newStore(t)
	other := e.open(t)

	gen0, _ := st.Generation(ctx)
	v0, err := other.TokensVersion(ctx)
	if err != nil || v0 != 0 {
		t.Fatalf("TokensVersion on a fresh vault = %d, %v; want 0", v0, err)
	}
	tokB, dB := vault.NewClientToken()
	_, dA := vault.NewClientToken()
	if err := st.CreateToken(ctx, vault.ClientToken{Name: "gw-b", Scope: vault.ScopeClient, Digest: dB}); err != nil {
		t.Fatal(err)
	}
	v1, _ := other.TokensVersion(ctx)
	if v1 <= v0 {
		t.Fatalf("version did not move on create: %d → %d", v0, v1)
	}
	if err := st.CreateToken(ctx, vault.ClientToken{Name: "ops", Scope: vault.ScopeAdmin, Digest: dA}); err != nil {
		t.Fatal(err)
	}
	for _, dup := range []vault.ClientToken{
		{Name: "gw-b", Scope: vault.ScopeClient, Digest: vault.TokenDigest("other")},
		{Name: "gw-c", Scope: vault.ScopeClient, Digest: dB},
	} {
		if err := st.CreateToken(ctx, dup); vault.ErrorCode(err) != vault.ECONFLICT {
			t.Fatalf("CreateToken(%s) = %v, want ECONFLICT", dup.Name, err)
		}
	}
	for _, bad := range []vault.ClientToken{
		{Name: "", Scope: vault.ScopeClient}, {Name: "shared", Scope: vault.ScopeAdmin},
		{Name: "-x", Scope: vault.ScopeClient}, {Name: "a b", Scope: vault.ScopeClient},
		{Name: "ok", Scope: "root"},
	} {
		if err := st.CreateToken(ctx, bad); vault.ErrorCode(err) != vault.EINVALID {
			t.Fatalf("CreateToken(%q, %q) = %v, want EINVALID", bad.Name, bad.Scope, err)
		}
	}
	toks, err := other.ClientTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(toks) != 2 || toks[0].Name != "gw-b" || toks[1].Name != "ops" || toks[0].Digest != dB ||
		toks[1].Scope != vault.ScopeAdmin || !toks[0].CreatedAt.Equal(e.clk.Now().Truncate(1e6)) {
		t.Fatalf("ClientTokens = %+v", toks)
	}
	v2, _ := st.TokensVersion(ctx)
	if err := other.RevokeToken(ctx, "gw-b"); err != nil {
		t.Fatal(err)
	}
	if v3, _ := st.TokensVersion(ctx); v3 <= v2 {
		t.Fatalf("version did not move on revoke: %d → %d", v2, v3)
	}
	if err := st.RevokeToken(ctx, "gw-b"); vault.ErrorCode(err) != vault.ENOTFOUND || vault.ErrorMessage(err) != `no token named "gw-b"` {
		t.Fatalf("second revoke = %v", err)
	}
	if toks, _ := st.ClientTokens(ctx); len(toks) != 1 || toks[0].Name != "ops" {
		t.Fatalf("after revoke: %+v", toks)
	}
	if gen1, _ := st.Generation(ctx); gen1 != gen0 {
		t.Fatalf("credential generation moved %d → %d on token writes", gen0, gen1)
	}
	st.Close()
	other.Close()
	raw, err := os.ReadFile(e.path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(tokB)) {
		t.Fatal("the token text reached the vault file")
	}
}

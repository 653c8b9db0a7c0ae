package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

func TestRekeyAddResealRetire(t *testing.T) {
	ctx := context.Background()
	keyPath := filepath.Join(t.TempDir(), "cfg", "vault.key")
	kr1, _, err := seal.LoadOrCreateKeyFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	e.kr = kr1
	st := e.open(t)
	for i, c := range []vault.Credential{oauth("a@x.io", "r1"), oauth("b@x.io", "r2"), apiKey("sk-A")} {
		if _, err := st.Upsert(ctx, []string{"anthropic", "anthropic", "openai"}[i], c); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Disable(ctx, 2, ""); err != nil {
		t.Fatal(err)
	}
	for i := range 70 { // more than one reseal batch of cache rows
		st.SetCache(ctx, "usage_cache:"+string(rune('A'+i)), []byte("v"), e.clk.Now().UnixMilli()+3_600_000)
	}
	before := state(t, st)

	// Step 1: a new active key; the running store switches to it online.
	kr2, err := seal.AddKey(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetKeyring(ctx, kr2); err != nil {
		t.Fatal(err)
	}
	g := gen(t, st)
	// Step 2: reseal. 3 rows × 4 columns + 70 cache rows + canary.
	n, err := st.Reseal(ctx)
	if err != nil || n != 3*4+70+1 {
		t.Fatalf("Reseal = %d, %v; want %d", n, err, 3*4+70+1)
	}
	if n, err := st.Reseal(ctx); err != nil || n != 0 {
		t.Fatalf("second Reseal = %d, %v; want 0", n, err)
	}
	if gen(t, st) != g {
		t.Fatal("reseal advanced the generation")
	}
	st.Close()

	// Step 3: retire the old key; everything still opens with the new one only.
	kr3, err := seal.RetireKeys(keyPath, kr2.ActiveID())
	if err != nil {
		t.Fatal(err)
	}
	e.kr = kr3
	st = e.open(t)
	wantState(t, st, before...)
	if v, ok, err := st.GetCache(ctx, "usage_cache:A", false); err != nil || !ok || string(v) != "v" {
		t.Fatalf("cache after rekey: %q %v %v", v, ok, err)
	}
	st.Close()

	// The retired key alone no longer opens the vault.
	_, err = sqlite.Open(ctx, e.path, kr1, sqlite.Options{})
	if !errors.Is(err, seal.ErrUnknownKey) {
		t.Fatalf("open with the retired key: %v", err)
	}
}

func TestSetKeyringRejectsForeignKey(t *testing.T) {
	st, _ := newStore(t)
	other, _ := seal.NewKeyring(seal.NewKey())
	if err := st.SetKeyring(context.Background(), other); !errors.Is(err, seal.ErrUnknownKey) {
		t.Fatalf("SetKeyring = %v", err)
	}
	if _, err := st.Upsert(context.Background(), "openai", apiKey("k")); err != nil {
		t.Fatalf("store unusable after a rejected keyring: %v", err)
	}
}

package pick

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

var ctx = context.Background()

func mustPick(t *testing.T, p *Picker, provider, session string, opts Options) vault.Entry {
	t.Helper()
	e, err := p.Pick(ctx, provider, session, opts)
	if err != nil {
		t.Fatalf("Pick(%s, %q): %v", provider, session, err)
	}
	return e
}

func threeKeys() *fakeSource {
	return &fakeSource{entries: []vault.Entry{apiKey(1, "openai", "k1"), apiKey(2, "openai", "k2"), apiKey(3, "openai", "k3")}}
}

func TestPickAPIKeyStartsAtSessionHash(t *testing.T) {
	p, _ := newPicker(threeKeys())
	for _, s := range []string{"session-1", "session-2", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "abc"} {
		want := int64(XXHash32(s)%3) + 1
		for range 3 { // stable across calls
			if got := mustPick(t, p, "openai", s, Options{}).ID; got != want {
				t.Fatalf("session %q: got id %d, want %d", s, got, want)
			}
		}
	}
}

func TestPickAPIKeyRoundRobinsWithoutSession(t *testing.T) {
	p, _ := newPicker(threeKeys())
	var got []int64
	for range 4 {
		got = append(got, mustPick(t, p, "openai", "", Options{}).ID)
	}
	if fmt.Sprint(got) != "[1 2 3 1]" {
		t.Fatalf("round robin = %v, want [1 2 3 1]", got)
	}
}

func TestPickSkipsBlockedThenUsesFirstWhenAllBlocked(t *testing.T) {
	p, clk := newPicker(threeKeys())
	s := "session-1"
	first := mustPick(t, p, "openai", s, Options{}).ID
	pk := ProviderKey("openai", "api_key")
	until := clk.Now().Add(time.Minute).UnixMilli()
	p.Blocks.Block(pk, "", first, until)
	if got := mustPick(t, p, "openai", s, Options{}).ID; got == first {
		t.Fatalf("blocked credential %d picked", got)
	}
	for id := int64(1); id <= 3; id++ {
		p.Blocks.Block(pk, "", id, until)
	}
	if got := mustPick(t, p, "openai", s, Options{}).ID; got != first {
		t.Fatalf("all blocked: got %d, want the first in order %d", got, first)
	}
}

func TestPickWithoutCredentialsIsNoCredential(t *testing.T) {
	p, _ := newPicker(&fakeSource{})
	_, err := p.Pick(ctx, "anthropic", "s", Options{})
	if !errors.Is(err, ErrNoCredential) || vault.ErrorCode(err) != vault.ENOTFOUND ||
		vault.ErrorMessage(err) != "No credential available for provider anthropic" {
		t.Fatalf("err = %v (code %s)", err, vault.ErrorCode(err))
	}
}

func TestPickPrefersAPIKeysOverOAuth(t *testing.T) {
	p, _ := newPicker(&fakeSource{entries: []vault.Entry{oauth(1, "anthropic", "a"), apiKey(2, "anthropic", "k")}})
	if got := mustPick(t, p, "anthropic", "s", Options{}).ID; got != 2 {
		t.Fatalf("got %d, want the API key 2", got)
	}
}

func TestBlockEndsByItselfWhenItsTimePasses(t *testing.T) {
	clk := &fakeClock{t: t0}
	b := &Blocks{Now: clk.Now}
	b.Block("openai:api_key", "", 7, clk.Now().Add(time.Minute).UnixMilli())
	b.Block("openai:api_key", "", 7, clk.Now().Add(time.Second).UnixMilli()) // never shortened
	if !b.Blocked("openai:api_key", nil, 7) {
		t.Fatal("not blocked")
	}
	clk.Advance(59 * time.Second)
	if !b.Blocked("openai:api_key", nil, 7) {
		t.Fatal("block was shortened")
	}
	clk.Advance(time.Second)
	if b.Blocked("openai:api_key", nil, 7) {
		t.Fatal("block did not end at its time")
	}
}

func TestScopedBlockAppliesOnlyToItsScope(t *testing.T) {
	clk := &fakeClock{t: t0}
	b := &Blocks{Now: clk.Now}
	b.Block("openai-codex:oauth", "spark", 1, clk.Now().Add(time.Minute).UnixMilli())
	if b.Blocked("openai-codex:oauth", nil, 1) {
		t.Fatal("scoped block applied globally")
	}
	if !b.Blocked("openai-codex:oauth", []string{"spark"}, 1) {
		t.Fatal("scoped block not applied to its scope")
	}
}

func TestCredentialSetChangeClearsBlocksStickyAndCursor(t *testing.T) {
	src := threeKeys()
	p, clk := newPicker(src)
	mustPick(t, p, "openai", "", Options{}) // cursor → 2
	mustPick(t, p, "openai", "s", Options{})
	pk := ProviderKey("openai", "api_key")
	p.Blocks.Block(pk, "", 1, clk.Now().Add(time.Hour).UnixMilli())
	src.remove(3)
	if got := mustPick(t, p, "openai", "", Options{}).ID; got != 1 {
		t.Fatalf("after the change got %d, want 1 (cursor reset, block cleared)", got)
	}
	if _, ok := p.getSticky("openai", "s"); ok {
		t.Fatal("sticky credential survived the change")
	}
}

func TestTokenRotationKeepsBlocks(t *testing.T) {
	src := &fakeSource{entries: []vault.Entry{oauth(1, "anthropic", "a"), oauth(2, "anthropic", "b")}}
	p, clk := newPicker(src)
	mustPick(t, p, "anthropic", "", Options{})
	pk := ProviderKey("anthropic", "oauth")
	p.Blocks.Block(pk, "", 1, clk.Now().Add(time.Hour).UnixMilli())
	if _, err := src.Refresh(ctx, 1); err != nil {
		t.Fatal(err)
	}
	mustPick(t, p, "anthropic", "", Options{})
	if !p.Blocks.Blocked(pk, nil, 1) {
		t.Fatal("a token rotation cleared the block")
	}
}

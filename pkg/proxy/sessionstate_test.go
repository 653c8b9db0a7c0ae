package proxy

import (
	"fmt"
	"testing"
)

// The store keeps at most max sessions and forgets the least recently
// used one; a used session survives.
func TestSessionStatesAreBoundedLRU(t *testing.T) {
	ss := newSessionStates(3)
	if ss.get("") != nil {
		t.Fatal("the empty session key got a state")
	}
	a := ss.get("a")
	a.DisableStrictTools("scope")
	ss.get("b")
	ss.get("c")
	if ss.get("a") != a { // a is now the most recent
		t.Fatal("session a lost its state while within the bound")
	}
	ss.get("d") // evicts b, the least recently used
	if n := ss.len(); n != 3 {
		t.Fatalf("%d sessions kept, want 3", n)
	}
	if !ss.get("a").StrictToolsDisabled("scope") {
		t.Fatal("session a forgot its fallback")
	}
	for i := range 1000 {
		ss.get(fmt.Sprintf("anon-%d", i))
	}
	if n := ss.len(); n != 3 {
		t.Fatalf("%d sessions kept after 1000 distinct keys, want 3", n)
	}
	if ss.get("a").StrictToolsDisabled("scope") {
		t.Fatal("an evicted session kept its state")
	}
}

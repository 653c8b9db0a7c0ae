package cli

import (
	"strings"
	"testing"
)

// TestAgentE2EPolicyDenialMovesToAnotherAccount: in broker mode an
// account-policy 403 (cyber_policy) blocks the session's account for 60 s
// — the block reaches the broker for the fleet — without refreshing its
// token, and the turn is retried at once on the other account.
func TestAgentE2EPolicyDenialMovesToAnotherAccount(t *testing.T) {
	e, _, creds := failoverToSibling(t, fakeError{403, `{"type":"error","error":{"type":"permission_error","message":"This request was refused under cyber_policy."}}`})
	blocked := 0
	for _, en := range creds {
		if !strings.HasPrefix(en.Credential.Access, "acc-") {
			t.Fatalf("credential %s was refreshed after a policy denial (access %q)", en.Credential.Email, en.Credential.Access)
		}
		for _, bl := range en.Blocks {
			blocked++
			if en.Credential.Access != e.fake.keys[0] || bl.ProviderKey != "anthropic:oauth" || bl.Scope != "" {
				t.Fatalf("block %+v on %s; the denied request used %s", bl, en.Credential.Email, e.fake.keys[0])
			}
		}
	}
	if blocked != 1 {
		t.Fatalf("%d blocks at the broker, want 1", blocked)
	}
}

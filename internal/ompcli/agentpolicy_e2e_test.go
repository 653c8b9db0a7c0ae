package ompcli

import (
	"context"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
)

// TestAgentE2EPolicyDenialMovesToAnotherAccount: in broker mode an
// account-policy 403 (cyber_policy) blocks the session's account for 60 s
// — the block reaches the broker for the fleet — without refreshing its
// token, and the turn is retried at once on the other account (fleet.md
// §5).
func TestAgentE2EPolicyDenialMovesToAnotherAccount(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	e := newE2E(t)
	b := startBroker(t, "")
	b.upload(t, oauthCred("anthropic", "alice@example.com", "rt-alice"), oauthCred("anthropic", "bob@example.com", "rt-bob"))
	e.anthropicAt(t, e.fake.srv.URL)
	e.fake.push(fakeError{403, `{"type":"error","error":{"type":"permission_error","message":"This request was refused under cyber_policy."}}`},
		asst(llm.StopEnd, llm.Text("answered by the other account")))
	out, stderr, err := e.brokerPrint(t, b)
	if err != nil || string(out) != "answered by the other account\n" {
		t.Fatalf("omp: %v, stdout %q\n%s", err, out, stderr.String())
	}
	if len(e.fake.keys) != 2 || e.fake.keys[0] == e.fake.keys[1] {
		t.Fatalf("upstream credentials %v: want two different accounts", e.fake.keys)
	}
	res, err := b.client.Snapshot(context.Background(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	blocked := 0
	for _, en := range res.Snapshot.Credentials {
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

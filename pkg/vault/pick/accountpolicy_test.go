package pick

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

// policy names account <name>@x of provider.
func policy(provider, name string, priority, reserve *float64) Policy {
	return Policy{Provider: provider, Account: Account{Email: name + "@x"}, Priority: priority, ReservePct: reserve}
}

// setSecondary sets the secondary (7 d) used fraction of account i.
func setSecondary(src *fakeSource, i int, used float64) {
	src.mu.Lock()
	defer src.mu.Unlock()
	now := t0.UnixMilli()
	src.reports[i].Limits[1] = limit("openai-codex:secondary", "7d", 7*dayMs, used, now+7*dayMs/2)
}

// A higher priority wins over a cooler account, for every session: a
// governed provider has no weighted pick.
func TestPolicyHigherPriorityFirst(t *testing.T) {
	for i := range 20 {
		s := fmt.Sprintf("s%d", i)
		if i == 0 {
			s = ""
		}
		p, _ := newPicker(codexPool(0.2, 0.6))
		p.Policies = &Policies{ReservePct: DefaultReservePct, List: []Policy{policy("openai-codex", "b", f64(5), nil)}}
		if got := mustPick(t, p, "openai-codex", s, Options{}).ID; got != 2 {
			t.Fatalf("session %q: got %d, want the priority-5 account 2", s, got)
		}
	}
	// Without the policy the cooler account a leads.
	p, _ := newPicker(codexPool(0.2, 0.6))
	if got := mustPick(t, p, "openai-codex", "", Options{}).ID; got != 1 {
		t.Fatalf("no policy: got %d, want 1", got)
	}
}

// An account whose remaining usage is inside its reserve is used only when
// no measured account is outside its own.
func TestPolicyReserveGivesWayToEligibleAccount(t *testing.T) {
	cases := []struct {
		name       string
		secA, secB float64
		reserveA   *float64
		global     float64
		want       int64
	}{
		{"a inside the global 10%, b eligible", 0.95, 0.6, nil, 10, 2},
		{"a exactly at its reserve is inside it", 0.9, 0.6, nil, 10, 2},
		{"both inside: priority decides", 0.95, 0.97, nil, 10, 1},
		{"a's override 0% keeps it eligible", 0.95, 0.6, f64(0), 10, 1},
		{"a's override 50% puts it inside", 0.6, 0.2, f64(50), 10, 2},
		{"global 0%: a eligible", 0.95, 0.6, nil, 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newPicker(codexPool(tc.secA, tc.secB))
			p.Policies = &Policies{ReservePct: tc.global, List: []Policy{policy("openai-codex", "a", f64(10), tc.reserveA)}}
			if got := mustPick(t, p, "openai-codex", "sess", Options{}).ID; got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
		})
	}
}

// A session stays on its account while it is eligible and leaves it once
// it enters its reserve and another account is eligible.
func TestPolicyStickySessionLeavesItsReserve(t *testing.T) {
	src := codexPool(0.2, 0.6)
	p, _ := newPicker(src)
	p.Policies = &Policies{ReservePct: 10, List: []Policy{policy("openai-codex", "a", f64(1), nil)}}
	if got := mustPick(t, p, "openai-codex", "s", Options{}).ID; got != 1 {
		t.Fatalf("first pick %d, want 1", got)
	}
	// b becomes the better ranked account: the session keeps a.
	p.Policies.List[0].Priority = nil
	setSecondary(src, 0, 0.7)
	setSecondary(src, 1, 0.1)
	if got := mustPick(t, p, "openai-codex", "s", Options{}).ID; got != 1 {
		t.Fatalf("eligible sticky account: got %d, want 1", got)
	}
	setSecondary(src, 0, 0.95)
	if got := mustPick(t, p, "openai-codex", "s", Options{}).ID; got != 2 {
		t.Fatalf("sticky account inside its reserve: got %d, want 2", got)
	}
}

// Two replicas with the same snapshot, usage and policies agree on every
// session.
func TestPolicyReplicasAgree(t *testing.T) {
	pols := []Policy{policy("openai-codex", "a", f64(2), f64(30)), policy("openai-codex", "b", f64(2), nil)}
	mk := func() *Picker {
		src := codexPool(0.3, 0.35)
		src.entries = append(src.entries, oauth(3, "openai-codex", "c"))
		src.reports = append(src.reports, report("openai-codex", "c", nil,
			limit("openai-codex:primary", "1h", hourMs, 0.1, t0.UnixMilli()+hourMs/2),
			limit("openai-codex:secondary", "7d", 7*dayMs, 0.1, t0.UnixMilli()+7*dayMs/2)))
		p, _ := newPicker(src)
		p.Policies = &Policies{ReservePct: 10, List: pols}
		return p
	}
	a, b := mk(), mk()
	for i := range 40 {
		s := fmt.Sprintf("conv-%d", i)
		x, y := mustPick(t, a, "openai-codex", s, Options{}).ID, mustPick(t, b, "openai-codex", s, Options{}).ID
		if x != y {
			t.Fatalf("session %q: replica a %d, replica b %d", s, x, y)
		}
		// a (70% left, reserve 30%) and b (65% left, reserve 10%) are
		// eligible and outrank c.
		if x != 2 && x != 1 {
			t.Fatalf("session %q picked %d: the priority-2 accounts come before c", s, x)
		}
	}
}

// A provider without a ranking strategy follows the policy priority.
func TestPolicyPriorityWithoutStrategy(t *testing.T) {
	src := &fakeSource{entries: []vault.Entry{oauth(1, "google-gemini-cli", "a"), oauth(2, "google-gemini-cli", "b"), oauth(3, "google-gemini-cli", "c")}}
	p, _ := newPicker(src)
	p.Policies = &Policies{ReservePct: 10, List: []Policy{
		policy("google-gemini-cli", "c", f64(3), nil), policy("google-gemini-cli", "b", f64(-1), nil)}}
	for _, s := range []string{"", "x", "y", "z"} {
		if got := mustPick(t, p, "google-gemini-cli", s, Options{}).ID; got != 3 {
			t.Fatalf("session %q: got %d, want 3", s, got)
		}
	}
}

// Policies must name exactly one stored account each, and no two the same.
func TestPolicyValidation(t *testing.T) {
	src := codexPool(0.2, 0.6)
	twin := oauth(3, "openai-codex", "a")
	twin.Credential.Extra = map[string]json.RawMessage{vault.FieldOrgID: json.RawMessage(`"org-2"`)}
	src.entries = append(src.entries, twin)
	cases := []struct {
		pols []Policy
		want string
	}{
		{[]Policy{policy("openai-codex", "zz", nil, nil)},
			"auth.accountPolicies[0].account matches no stored OAuth account for openai-codex"},
		{[]Policy{policy("openai-codex", "b", nil, nil), policy("openai-codex", "a", nil, nil)},
			"auth.accountPolicies[1].account matches 2 stored OAuth accounts for openai-codex; add another identity field"},
		{[]Policy{policy("openai-codex", "b", nil, nil), {Provider: "openai-codex", Account: Account{AccountID: "acct-b"}}},
			"auth.accountPolicies[0] and auth.accountPolicies[1] match the same stored OAuth account for openai-codex"},
	}
	for _, tc := range cases {
		p, _ := newPicker(src)
		p.Policies = &Policies{ReservePct: 10, List: tc.pols}
		_, err := p.Pick(ctx, "openai-codex", "", Options{})
		if err == nil || vault.ErrorMessage(err) != tc.want {
			t.Errorf("policies %+v: err %v, want %q", tc.pols, err, tc.want)
		}
	}
	// The org id tells the two a@x accounts apart.
	p, _ := newPicker(src)
	p.Policies = &Policies{ReservePct: 10, List: []Policy{{Provider: "openai-codex", Account: Account{Email: "a@x", OrgID: "org-2"}, Priority: f64(9)}}}
	if got := mustPick(t, p, "openai-codex", "", Options{}).ID; got != 3 {
		t.Fatalf("org-scoped policy: got %d, want 3", got)
	}
}

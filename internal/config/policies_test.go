package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAccountPoliciesParse(t *testing.T) {
	dir := t.TempDir()
	doc := `auth:
  accountPolicies:
    - provider: anthropic
      account: {email: a@x.io, orgId: org-1}
      priority: 2
      reservePct: 25
    - provider: openai-codex
      account: {accountId: acct-9}
      priority: -1.5
retry:
  usageReservePct: 15
`
	if err := os.WriteFile(filepath.Join(dir, "config.yml"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	settings, err := LoadSettings(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := settings.AccountPolicies()
	if err != nil {
		t.Fatal(err)
	}
	if ps.ReservePct != 15 || len(ps.List) != 2 {
		t.Fatalf("got %+v", ps)
	}
	a, b := ps.List[0], ps.List[1]
	if a.Provider != "anthropic" || a.Account.Email != "a@x.io" || a.Account.OrgID != "org-1" || *a.Priority != 2 || *a.ReservePct != 25 {
		t.Errorf("first policy %+v", a)
	}
	if b.Provider != "openai-codex" || b.Account.AccountID != "acct-9" || *b.Priority != -1.5 || b.ReservePct != nil {
		t.Errorf("second policy %+v", b)
	}
}

func TestAccountPoliciesDefaults(t *testing.T) {
	for _, doc := range []string{"", "auth:\n  broker:\n    url: http://b\n"} {
		s, err := ParseSettings([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		ps, err := s.AccountPolicies()
		if err != nil || ps.ReservePct != 10 || len(ps.List) != 0 {
			t.Errorf("%q: got %+v, %v; want no policies and a 10%% reserve", doc, ps, err)
		}
	}
}

func TestAccountPoliciesErrorsNameFileAndEntry(t *testing.T) {
	entry := func(body string) string {
		return "auth:\n  accountPolicies:\n    - provider: anthropic\n      account: {email: a@x}\n" + body
	}
	tests := []struct{ yaml, want string }{
		{"auth:\n  accountPolicies: {provider: x}\n", "auth.accountPolicies must be an array"},
		{"auth:\n  accountPolicies: [3]\n", "auth.accountPolicies[0] must be an object"},
		{entry("    - provider: openai-codex\n      account: {email: b@x}\n      weight: 3\n      colour: red\n"), "auth.accountPolicies[1] has unknown fields: colour, weight"},
		{"auth:\n  accountPolicies:\n    - account: {email: a@x}\n", "auth.accountPolicies[0].provider must be a non-empty string"},
		{"auth:\n  accountPolicies:\n    - provider: ' anthropic'\n      account: {email: a@x}\n", "auth.accountPolicies[0].provider must not contain surrounding whitespace"},
		{"auth:\n  accountPolicies:\n    - provider: anthropic\n      account: a@x\n", "auth.accountPolicies[0].account must be an object"},
		{"auth:\n  accountPolicies:\n    - provider: anthropic\n      account: {mail: a@x}\n", "auth.accountPolicies[0].account has unknown fields: mail"},
		{"auth:\n  accountPolicies:\n    - provider: anthropic\n      account: {email: ''}\n", "auth.accountPolicies[0].account.email must be a non-empty string"},
		{"auth:\n  accountPolicies:\n    - provider: anthropic\n      account: {orgId: org-1}\n", "auth.accountPolicies[0].account must include at least one of email, accountId, or projectId"},
		{entry("      priority: high\n"), "auth.accountPolicies[0].priority must be a finite number"},
		{entry("      priority: .inf\n"), "auth.accountPolicies[0].priority must be a finite number"},
		{entry("      reservePct: 101\n"), "auth.accountPolicies[0].reservePct must be between 0 and 100"},
		{entry("      reservePct: -1\n"), "auth.accountPolicies[0].reservePct must be between 0 and 100"},
		{"retry:\n  usageReservePct: lots\n", "retry.usageReservePct must be a finite number"},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		path := filepath.Join(dir, "config.yml")
		if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		settings, err := LoadSettings(dir, nil)
		if err == nil {
			_, err = settings.AccountPolicies()
		}
		if want := path + ": " + tt.want; err == nil || err.Error() != want {
			t.Errorf("%q:\n got %v\nwant %s", tt.yaml, err, want)
		}
	}
}

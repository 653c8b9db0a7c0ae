package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	vaultpick "github.com/ompgo/omp/pkg/vault/pick"
)

// AccountPolicies reads auth.accountPolicies and retry.usageReservePct
// (default vaultpick.DefaultReservePct): the per-account routing priority and
// usage reserve of credential choice, in the gateway and the agent alike.
// The policies are strict: an entry of the wrong shape is an error that
// names the file and the entry, e.g.
// `<path>: auth.accountPolicies[1].reservePct must be between 0 and 100`.
// Whether each policy names exactly one stored account is checked by the
// picker against the credentials it sees.
func (s *Settings) AccountPolicies() (*vaultpick.Policies, error) {
	out := &vaultpick.Policies{ReservePct: vaultpick.DefaultReservePct}
	if s == nil || s.root == nil {
		return out, nil
	}
	fail := func(err error) (*vaultpick.Policies, error) {
		return nil, fmt.Errorf("%s: %w", s.Path, err)
	}
	if v := lookup(s.root, "retry.usageReservePct", present); v != nil {
		f, ok := finite(v)
		if !ok {
			return fail(errors.New("retry.usageReservePct must be a finite number"))
		}
		out.ReservePct = f
	}
	raw := lookup(s.root, "auth.accountPolicies", present)
	if raw == nil {
		return out, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return fail(errors.New("auth.accountPolicies must be an array"))
	}
	for i, item := range list {
		p, err := parsePolicy(fmt.Sprintf("auth.accountPolicies[%d]", i), item)
		if err != nil {
			return fail(err)
		}
		out.List = append(out.List, p)
	}
	return out, nil
}

// parsePolicy decodes one auth.accountPolicies entry named name.
func parsePolicy(name string, item any) (vaultpick.Policy, error) {
	var p vaultpick.Policy
	m, ok := asMap(item)
	if !ok {
		return p, fmt.Errorf("%s must be an object", name)
	}
	if err := unknownFields(name, m, "provider", "account", "priority", "reservePct"); err != nil {
		return p, err
	}
	provider, ok := m["provider"].(string)
	if !ok || provider == "" {
		return p, fmt.Errorf("%s.provider must be a non-empty string", name)
	}
	if strings.TrimSpace(provider) != provider {
		return p, fmt.Errorf("%s.provider must not contain surrounding whitespace", name)
	}
	p.Provider = provider
	acct, ok := asMap(m["account"])
	if !ok {
		return p, fmt.Errorf("%s.account must be an object", name)
	}
	an := name + ".account"
	if err := unknownFields(an, acct, "email", "accountId", "projectId", "orgId"); err != nil {
		return p, err
	}
	fields := []struct {
		key string
		dst *string
	}{{"email", &p.Account.Email}, {"accountId", &p.Account.AccountID}, {"projectId", &p.Account.ProjectID}, {"orgId", &p.Account.OrgID}}
	for _, f := range fields {
		v, set := acct[f.key]
		if !set {
			continue
		}
		str, ok := v.(string)
		if !ok || str == "" {
			return p, fmt.Errorf("%s.%s must be a non-empty string", an, f.key)
		}
		*f.dst = str
	}
	if p.Account.Email == "" && p.Account.AccountID == "" && p.Account.ProjectID == "" {
		return p, fmt.Errorf("%s must include at least one of email, accountId, or projectId", an)
	}
	if v, set := m["priority"]; set {
		f, ok := finite(v)
		if !ok {
			return p, fmt.Errorf("%s.priority must be a finite number", name)
		}
		p.Priority = &f
	}
	if v, set := m["reservePct"]; set {
		f, ok := finite(v)
		if !ok || f < 0 || f > 100 {
			return p, fmt.Errorf("%s.reservePct must be between 0 and 100", name)
		}
		p.ReservePct = &f
	}
	return p, nil
}

// unknownFields fails when m has keys other than known, listed sorted.
func unknownFields(name string, m map[string]any, known ...string) error {
	var extra []string
	for k := range m {
		if !slices.Contains(known, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	slices.Sort(extra)
	return fmt.Errorf("%s has unknown fields: %s", name, strings.Join(extra, ", "))
}

// finite is a YAML number (not a string) that is neither NaN nor infinite.
func finite(v any) (float64, bool) {
	if _, isString := v.(string); isString {
		return 0, false
	}
	f, ok := number(v)
	return f, ok && !math.IsNaN(f) && !math.IsInf(f, 0)
}

func present(v any) bool { return v != nil }

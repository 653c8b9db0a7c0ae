package usageview

import (
	"regexp"
	"strings"
	"sync"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
)

// Tombstone is a disabled credential as the broker lists it.
type Tombstone = api.DisabledCredential

// Actionable keeps the tombstones worth a line: OAuth rows
// torn down automatically, not replaced or deleted by the user, and with
// no active account of the same provider sharing their email, account id
// or org id.
func Actionable(t Tombstone, active []Account) bool {
	if t.Type != string(vault.TypeOAuth) {
		return false
	}
	c := strings.ToLower(t.Cause)
	if strings.HasPrefix(c, "replaced by") || strings.HasPrefix(c, "deleted by user") {
		return false
	}
	same := func(a, b string) bool { return a != "" && b != "" && strings.EqualFold(a, b) }
	for _, a := range active {
		if a.Provider == t.Provider && (same(a.Email, t.Email) || same(a.AccountID, t.AccountID) || same(a.OrgID, t.OrgID)) {
			return false
		}
	}
	return true
}

// errorDescription is compiled on first use: every omp command runs the
// package's initialisers, and only `omp usage` needs it.
var errorDescription = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\\?"error_description\\?"\s*:\s*\\?"([^"\\]+)`)
})

// shortCause is the upstream error_description embedded in a cause, else
// its first clause without "oauth refresh failed: ", 77 characters + "…"
// when longer than 80.
func shortCause(cause string) string {
	if m := errorDescription().FindStringSubmatch(cause); m != nil {
		return m[1]
	}
	c := cause
	if len(c) >= 21 && strings.EqualFold(c[:21], "oauth refresh failed:") {
		c = strings.TrimLeft(c[21:], " \t\n\r")
	}
	if i := strings.IndexAny(c, ";\n"); i >= 0 {
		c = c[:i]
	}
	if r := []rune(c); len(r) > 80 {
		c = string(r[:77]) + "…"
	}
	return c
}

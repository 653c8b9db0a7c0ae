package cliproxy

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// Options controls Parse and Scan.
type Options struct {
	// Provider, when non-empty, is the omp provider id used for every file
	// (--provider), bypassing the type map.
	Provider string
	// IncludeDisabled imports files marked "disabled": true (--include-disabled).
	IncludeDisabled bool
	// Now is the clock callers pass to Describe (default time.Now). Parse
	// and Scan never read it: their results do not depend on the time.
	Now func() time.Time
	// Home expands a leading "~" in Scan's path; default os.UserHomeDir().
	Home string
}

// Entry is one importable credential.
type Entry struct {
	Provider   string           // omp provider id
	Credential vault.Credential // an OAuth credential (Access, Refresh, Expires, …)
	Disabled   bool             // the file said "disabled": true (only with IncludeDisabled)
	File       string           // the source file name as given
}

// SkipError reports why a file is not importable. Reason is the exact
// reference text shown after `skip <file>: `.
type SkipError struct{ Reason string }

// Error returns the skip reason.
func (e *SkipError) Error() string { return e.Reason }

// Skip reasons with fixed text.
const (
	ReasonDisabled      = "credential marked disabled (use --include-disabled to import anyway)"
	ReasonMissingTokens = "missing access_token or refresh_token"
)

// typeMap is the reference type → provider map, in its lookup order.
var typeMap = []struct{ typ, provider string }{
	{"claude", "anthropic"},
	{"codex", "openai-codex"},
	{"gemini", "google-gemini-cli"},
	{"antigravity", "google-antigravity"},
	{"gemini-cli", "google-gemini-cli"},
}

// ProviderForType maps a CLIProxyAPI type (trimmed, case-insensitive) to an
// omp provider id; "" when unmapped.
func ProviderForType(typ string) string {
	typ = strings.ToLower(strings.TrimSpace(typ))
	for _, m := range typeMap {
		if m.typ == typ {
			return m.provider
		}
	}
	return ""
}

// Parse decodes one auth file. fileName is used for the provider fallback
// (`<type>-<anything>.json`) and recorded in Entry.File. A file that is not
// importable yields a *SkipError; Parse returns no other error.
func Parse(data []byte, fileName string, opts Options) (Entry, error) {
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return Entry{}, &SkipError{"unreadable JSON: " + err.Error()}
	}
	m, _ := doc.(map[string]any) // a non-object document has no fields
	disabled := m["disabled"] == true
	if disabled && !opts.IncludeDisabled {
		return Entry{}, &SkipError{ReasonDisabled}
	}
	provider := resolveProvider(m, fileName, opts.Provider)
	if provider == "" {
		t := "?"
		if v, ok := m["type"]; ok && v != nil {
			t = jsString(v)
		}
		return Entry{}, &SkipError{fmt.Sprintf("cannot determine omp provider from type=%s (pass --provider to override)", t)}
	}
	nested := nestedToken(m)
	access := firstString(m["access_token"], nested["access_token"])
	refresh := firstString(m["refresh_token"], nested["refresh_token"])
	if access == "" || refresh == "" {
		return Entry{}, &SkipError{ReasonMissingTokens}
	}
	expires, ok := findExpiry(m, nested)
	if !ok {
		v := "?"
		if raw, present := m["expired"]; present && raw != nil {
			v = jsString(raw)
		}
		return Entry{}, &SkipError{"cannot parse expired=" + v}
	}
	cred := vault.Credential{
		Type:      vault.TypeOAuth,
		Access:    access,
		Refresh:   refresh,
		Expires:   expires,
		Email:     firstString(m["email"]),
		AccountID: firstString(m["account_id"]),
		ProjectID: firstString(m["project_id"]),
	}
	return Entry{Provider: provider, Credential: cred, Disabled: disabled, File: fileName}, nil
}

func resolveProvider(m map[string]any, fileName, override string) string {
	if override != "" {
		return override
	}
	if t, ok := m["type"].(string); ok {
		if p := ProviderForType(t); p != "" {
			return p
		}
	}
	// Fallback: the file name `<type>-<email>.json` or `<type>.json`.
	base := filepath.Base(fileName)
	if base != ".json" {
		base = strings.TrimSuffix(base, ".json")
	}
	base = strings.ToLower(base)
	for _, t := range typeMap {
		if base == t.typ || strings.HasPrefix(base, t.typ+"-") {
			return t.provider
		}
	}
	return ""
}

// nestedToken returns the "token" (else "Token") object, or nil.
func nestedToken(m map[string]any) map[string]any {
	for _, k := range []string{"token", "Token"} {
		if t, ok := m[k].(map[string]any); ok {
			return t
		}
	}
	return nil
}

// firstString returns the first non-empty string among vs.
func firstString(vs ...any) string {
	for _, v := range vs {
		if s, ok := v.(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// jsString renders a decoded JSON value as JavaScript's String() would, for
// skip reasons that quote a field.
func jsString(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case bool:
		if x {
			return "true"
		}
		return "false"
	case float64:
		return jsNumberString(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			if e != nil {
				parts[i] = jsString(e)
			}
		}
		return strings.Join(parts, ",")
	default:
		return "[object Object]"
	}
}

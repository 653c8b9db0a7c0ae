package interopdiff

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Decision is an accepted, known difference between the reference broker
// and ours, under a short id the suite prints. A step lists the
// decisions that may apply to it; a difference is accepted only when one
// of them matches its path and values.
type Decision struct {
	ID    string
	Title string
	Path  *regexp.Regexp // the difference's path
	Ref   *regexp.Regexp // the reference's value (nil: any)
	Ours  *regexp.Regexp // our value (nil: any)
}

func (d Decision) matches(diff Difference) bool {
	return d.Path.MatchString(diff.Path) &&
		(d.Ref == nil || d.Ref.MatchString(diff.Ref)) &&
		(d.Ours == nil || d.Ours.MatchString(diff.Ours))
}

// Decisions are the known differences, keyed by the short id that
// Step.Accept names.
var Decisions = map[string]Decision{
	"E1": {ID: "E1", Title: "capabilities gate: without OMP-Auth-Broker-Capabilities snapshot and stream carry the 15.x field set (no OAuth extras, no API-key source)",
		Path: regexp.MustCompile(`^body\.(data\.)?(credentials\[\d+\]|entry)\.credential\.[A-Za-z_]+$`),
		Ours: regexp.MustCompile(`^` + absent + `$`)},
	"E4": {ID: "E4", Title: "refresh failure on POST /v1/credential/:id/refresh: ours keeps the refresh error's text in the 500, 18.1.21 answers \"OAuth credential no longer exists\"",
		Path: regexp.MustCompile(`^body\.error$`),
		Ref:  regexp.MustCompile(`^"OAuth credential no longer exists for provider: `),
		Ours: regexp.MustCompile(`invalid_grant`)},
	"E5": {ID: "E5", Title: "a refresh keeps every stored field; 18.1.21 keeps only 11 named fields (MCP tokenUrl/clientId/… and extension keys lost)",
		Path: regexp.MustCompile(`^body\.(data\.)?(credentials\[\d+\]|entry|entries\[\d+\])\.credential\.[A-Za-z_]+$`),
		Ref:  regexp.MustCompile(`^` + absent + `$`)},
	"B6": {ID: "B6", Title: "schema-validation 400 texts are the Go validator's own wording",
		Path: regexp.MustCompile(`^body\.error$`)},
	"B1": {ID: "B1", Title: "sentinel refresh on upload: ours keeps the 15.x reference text \"refresh token must not equal the remote sentinel (__remote__)\"",
		Path: regexp.MustCompile(`^body\.error$`),
		Ours: regexp.MustCompile(`^"refresh token must not equal the remote sentinel \(__remote__\)"$`)},
	"R3T": {ID: "R3T", Title: "refresh timeout: ours answers \"OAuth token refresh timed out for provider: <p>\"; 18.1.21's outer timer aborts its own signal and answers \"OAuth token refresh aborted by caller\", a text ours keeps for a caller's abort",
		Path: regexp.MustCompile(`^body\.error$`),
		Ref:  regexp.MustCompile(`^"OAuth token refresh aborted by caller"$`),
		Ours: regexp.MustCompile(`^"OAuth token refresh timed out for provider: `)},
	"RL": {ID: "RL", Title: "forced refreshes are rate limited: within 30 s of a successful refresh of a credential, POST /v1/credential/:id/refresh answers the current credential without asking the provider (the reference refreshes every time, so a client token could rotate a family at will)",
		Path: regexp.MustCompile(`^(body\.entry\.credential\.access|body\.credentials\[0\]\.credential\.access|body)$`)},
	"AK": {ID: "AK", Title: "refreshing an API-key credential is a client error: 400 with the reference's text and why (the reference answers 500)",
		Path: regexp.MustCompile(`^(status|body\.error)$`),
		Ref:  regexp.MustCompile(`^(500|"Credential #\d+ is not OAuth \(provider=[^)]*\)")$`),
		Ours: regexp.MustCompile(`^(400|"Credential #\d+ is not OAuth \(provider=[^)]*\): API-key credentials have nothing to refresh")$`)},
	"ER": {ID: "ER", Title: "refreshing an OAuth row stored with an empty refresh token (an upload 18.1.21 accepts): ours asks no token endpoint and answers 500 \"<Provider> token refresh failed: <p> credentials are missing a refresh token; sign in again\"; the reference sends the grant with an empty refresh_token and answers the endpoint's 400 in its 500. Both keep the row. Sending it would gain nothing (an empty grant cannot succeed) and our classifier takes a token endpoint's 400 as definitive, so the row, and the access token the provider issued, would be disabled",
		Path: regexp.MustCompile(`^(body\.error|body)$`),
		Ref:  regexp.MustCompile(`^("[a-z-]+ token refresh failed: 400 .*"|\[.*"grant_type":"refresh_token".*\])$`),
		Ours: regexp.MustCompile(`^("[^"]* token refresh failed: [^ ]+ credentials are missing a refresh token; sign in again"|` + absent + `|null)$`)},
	"F1": {ID: "F1", Title: "fleet blocks only for requests with OMP-Auth-Broker-Capabilities (15.x clients reject unknown keys)",
		Path: regexp.MustCompile(`^body\.(data\.)?(credentials\[\d+\]|entry)\.blocks$`),
		Ours: regexp.MustCompile(`^` + absent + `$`)},
	"F2": {ID: "F2", Title: "block deadlines clamped to now + 31 days",
		Path: regexp.MustCompile(`^body\.(data\.)?(credentials\[\d+\]|entry)\.blocks\[\d+\]\.blockedUntilMs$`),
		Ref:  regexp.MustCompile(`^1000000000000000$`)},
	"F3": {ID: "F3", Title: "a block's providerKey must be the credential's <provider>:<type> (the reference stores an inert block)",
		Path: regexp.MustCompile(`^(status|body(\..+)?)$`)},
	"F5": {ID: "F5", Title: "/v1/usage/stale takes an optional strict {\"provider\"} body (the reference never reads it)",
		Path: regexp.MustCompile(`^(status|body(\..+)?)$`)},
	"F9": {ID: "F9", Title: "observed usage normalised: empty installId refused, negative counters stored as 0",
		Path: regexp.MustCompile(`^(status|body(\..+)?)$`)},
	"B30": {ID: "B30", Title: "1 MiB request body limit: 413 {\"error\":\"request body too large\"} (the reference has no limit)",
		Path: regexp.MustCompile(`^(status|type|header\..+|body(\..+)?)$`)},
}

// StepReport is the comparison of one step.
type StepReport struct {
	Index    int
	Label    string
	Diffs    []Difference
	Accepted []string // per diff: the decision id that explains it, "" when none
}

// SequenceReport is the comparison of one sequence.
type SequenceReport struct {
	Name  string
	Steps []StepReport
}

// Failed reports whether some difference is not explained by a decision.
func (r SequenceReport) Failed() bool {
	for _, s := range r.Steps {
		if slices.Contains(s.Accepted, "") {
			return true
		}
	}
	return false
}

// Same reports whether no step differs at all.
func (r SequenceReport) Same() bool {
	for _, s := range r.Steps {
		if len(s.Diffs) > 0 {
			return false
		}
	}
	return true
}

// CompareSequence compares the two brokers' results of seq.
func CompareSequence(seq Sequence, ref, ours []Result) SequenceReport {
	rep := SequenceReport{Name: seq.Name}
	for i, st := range seq.Steps {
		var r, o Result
		if i < len(ref) {
			r = ref[i]
		}
		if i < len(ours) {
			o = ours[i]
		}
		sr := StepReport{Index: i + 1, Label: st.label()}
		sr.Diffs = append(sr.Diffs, Compare("status", r.Status, o.Status)...)
		sr.Diffs = append(sr.Diffs, Compare("type", r.Type, o.Type)...)
		sr.Diffs = append(sr.Diffs, Compare("header", anyMap(r.Header), anyMap(o.Header))...)
		sr.Diffs = append(sr.Diffs, Compare("body", r.Body, o.Body)...)
		if path, _, _ := strings.Cut(st.Path, "?"); !st.capable() && (st.Stream || path == "/v1/snapshot") {
			sr.Diffs = append(sr.Diffs, Check15x(o.Body)...)
		}
		for _, d := range sr.Diffs {
			id := ""
			for _, a := range st.Accept {
				if dec, ok := Decisions[a]; ok && dec.matches(d) {
					id = a
					break
				}
			}
			sr.Accepted = append(sr.Accepted, id)
		}
		if len(sr.Diffs) > 0 {
			rep.Steps = append(rep.Steps, sr)
		}
	}
	return rep
}

func (st Step) label() string {
	switch {
	case st.Upstream:
		return "upstream token requests"
	case st.Stream:
		return "stream" + capsLabel(st.capable())
	}
	m := st.Method
	if m == "" {
		m = "GET"
		if st.Body != "" {
			m = "POST"
		}
	}
	return m + " " + st.Path + capsLabel(st.capable())
}

// capable reports whether the step sends the capabilities header.
func (st Step) capable() bool {
	_, set := st.Header[CapabilitiesHeader]
	return st.Caps || set
}

func capsLabel(caps bool) string {
	if caps {
		return " +caps"
	}
	return ""
}

// Line is the one-line verdict of a sequence: "same", "accepted" (only
// decision-backed differences) or "DIFFERS", with a compact diff.
func (r SequenceReport) Line() string {
	switch {
	case r.Same():
		return "same     " + r.Name
	case !r.Failed():
		var ids []string
		for _, s := range r.Steps {
			for _, a := range s.Accepted {
				if !slices.Contains(ids, a) {
					ids = append(ids, a)
				}
			}
		}
		return "accepted " + r.Name + " (" + strings.Join(ids, ", ") + ")"
	}
	var parts []string
	more := 0
	for _, s := range r.Steps {
		for i, d := range s.Diffs {
			if s.Accepted[i] != "" {
				continue
			}
			if len(parts) == 3 {
				more++
				continue
			}
			parts = append(parts, fmt.Sprintf("step %d %s: %s", s.Index, s.Label, clip(d.String(), 240)))
		}
	}
	line := "DIFFERS  " + r.Name + ": " + strings.Join(parts, "; ")
	if more > 0 {
		line += fmt.Sprintf(" (+%d more)", more)
	}
	return line
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Fields a 15.x client accepts; its schemas are strict, so any other key
// fails its parse.
var (
	fields15OAuth  = []string{"type", "access", "refresh", "expires", "enterpriseUrl", "projectId", "email", "accountId"}
	fields15APIKey = []string{"type", "key"}
	fields15Entry  = []string{"id", "provider", "credential", "identityKey", "rotatesInMs"}
)

// Check15x lists what in our normalised snapshot (or first stream frame)
// a strict 15.x client would reject: a snapshot and stream without the
// capabilities header must carry the 15.x field set only. Each
// finding is a Difference with Ref "(15.x schema)", never accepted.
func Check15x(body any) []Difference {
	m, _ := body.(map[string]any)
	if d, ok := m["data"].(map[string]any); ok {
		m = d
	}
	creds, _ := m["credentials"].([]any)
	var out []Difference
	for i, c := range creds {
		e, _ := c.(map[string]any)
		path := fmt.Sprintf("ours 15.x schema: credentials[%d]", i)
		out = append(out, extraKeys(path, e, fields15Entry)...)
		cred, _ := e["credential"].(map[string]any)
		allowed := fields15OAuth
		if cred["type"] == "api_key" {
			allowed = fields15APIKey
		}
		out = append(out, extraKeys(path+".credential", cred, allowed)...)
	}
	return out
}

func extraKeys(path string, m map[string]any, allowed []string) []Difference {
	var out []Difference
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			out = append(out, Difference{Path: path + "." + k, Ref: "(15.x schema)", Ours: show(m[k], true)})
		}
	}
	return out
}

func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

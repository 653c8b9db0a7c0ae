package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ompgo/omp/pkg/vault"
)

// Lenient answer decoders, as the client reads the broker: unknown keys are ignored,
// required keys and their JSON types are checked. Errors name the key path,
// never a value.

type fields map[string]json.RawMessage

func object(raw json.RawMessage, path string) (fields, error) {
	var f fields
	if err := json.Unmarshal(raw, &f); err != nil || f == nil {
		return nil, fmt.Errorf("%s must be an object", path)
	}
	return f, nil
}

func (f fields) has(k string) bool { return len(f[k]) > 0 }

func (f fields) isNull(k string) bool { return string(f[k]) == "null" }

func (f fields) number(k, path string) (float64, error) {
	var v float64
	if !f.has(k) || f.isNull(k) || json.Unmarshal(f[k], &v) != nil {
		return 0, fmt.Errorf("%s.%s must be a number", path, k)
	}
	return v, nil
}

// integer requires a number with an integral value within ±2^53.
func (f fields) integer(k, path string) (int64, error) {
	v, err := f.number(k, path)
	if err != nil || v != math.Trunc(v) || math.Abs(v) > vault.MaxSafeInteger {
		return 0, fmt.Errorf("%s.%s must be an integer", path, k)
	}
	return int64(v), nil
}

// millis reads a number (epoch or duration ms) truncated to an integer.
func (f fields) millis(k, path string) (int64, error) {
	v, err := f.number(k, path)
	if err != nil {
		return 0, err
	}
	return clampInt(v), nil
}

func clampInt(v float64) int64 {
	switch {
	case v >= math.MaxInt64:
		return math.MaxInt64
	case v <= math.MinInt64:
		return math.MinInt64
	}
	return int64(v)
}

func (f fields) str(k, path string) (string, error) {
	var s string
	if !f.has(k) || f.isNull(k) || json.Unmarshal(f[k], &s) != nil {
		return "", fmt.Errorf("%s.%s must be a string", path, k)
	}
	return s, nil
}

func (f fields) boolean(k, path string) (bool, error) {
	var b bool
	if !f.has(k) || f.isNull(k) || json.Unmarshal(f[k], &b) != nil {
		return false, fmt.Errorf("%s.%s must be a boolean", path, k)
	}
	return b, nil
}

// DecodeHealth decodes the GET /v1/healthz answer.
func DecodeHealth(raw json.RawMessage) (Health, error) {
	f, err := object(raw, "healthz")
	if err != nil {
		return Health{}, err
	}
	var h Health
	if h.OK, err = f.boolean("ok", "healthz"); err != nil {
		return Health{}, err
	}
	if f.has("version") && !f.isNull("version") {
		if h.Version, err = f.str("version", "healthz"); err != nil {
			return Health{}, err
		}
	}
	return h, nil
}

// DecodeOK decodes the {"ok": true} answer of the write routes.
func DecodeOK(raw json.RawMessage) (bool, error) {
	f, err := object(raw, "response")
	if err != nil {
		return false, err
	}
	return f.boolean("ok", "response")
}

func decodeRefresher(raw json.RawMessage, path string) (vault.RefresherSchedule, error) {
	f, err := object(raw, path)
	if err != nil {
		return vault.RefresherSchedule{}, err
	}
	var r vault.RefresherSchedule
	if r.Enabled, err = f.boolean("enabled", path); err != nil {
		return r, err
	}
	if r.IntervalMs, err = f.millis("intervalMs", path); err != nil {
		return r, err
	}
	if r.SkewMs, err = f.millis("skewMs", path); err != nil {
		return r, err
	}
	r.NextSweepInMs, err = f.millis("nextSweepInMs", path)
	return r, err
}

// decodeCredential checks the required keys of a snapshot credential, then
// decodes it leniently (unknown OAuth keys land in Extra).
func decodeCredential(raw json.RawMessage, path string) (vault.Credential, error) {
	f, err := object(raw, path)
	if err != nil {
		return vault.Credential{}, err
	}
	typ, err := f.str("type", path)
	if err != nil {
		return vault.Credential{}, err
	}
	switch vault.CredentialType(typ) {
	case vault.TypeOAuth:
		for _, k := range []string{"refresh", "access"} {
			if _, err := f.str(k, path); err != nil {
				return vault.Credential{}, err
			}
		}
		if _, err := f.number("expires", path); err != nil {
			return vault.Credential{}, err
		}
	case vault.TypeAPIKey:
		if _, err := f.str("key", path); err != nil {
			return vault.Credential{}, err
		}
	default:
		return vault.Credential{}, fmt.Errorf("%s.type must be \"oauth\" or \"api_key\"", path)
	}
	var c vault.Credential
	if err := c.UnmarshalJSON(raw); err != nil {
		return vault.Credential{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// decodeEntry decodes a CredentialSnapshotEntry, or a SnapshotEntry when
// withRotation (then rotatesInMs is required, number or null).
func decodeEntry(raw json.RawMessage, path string, withRotation bool) (vault.Entry, error) {
	f, err := object(raw, path)
	if err != nil {
		return vault.Entry{}, err
	}
	var e vault.Entry
	if e.ID, err = f.integer("id", path); err != nil {
		return e, err
	}
	if e.Provider, err = f.str("provider", path); err != nil {
		return e, err
	}
	if e.Provider == "" {
		return e, fmt.Errorf("%s.provider must be non-empty", path)
	}
	if e.Credential, err = decodeCredential(f["credential"], path+".credential"); err != nil {
		return e, err
	}
	if !f.has("identityKey") {
		return e, fmt.Errorf("%s.identityKey must be a string or null", path)
	}
	if !f.isNull("identityKey") {
		if e.IdentityKey, err = f.str("identityKey", path); err != nil {
			return e, fmt.Errorf("%s.identityKey must be a string or null", path)
		}
	}
	if withRotation {
		if !f.has("rotatesInMs") {
			return e, fmt.Errorf("%s.rotatesInMs must be a number or null", path)
		}
		if !f.isNull("rotatesInMs") {
			ms, err := f.millis("rotatesInMs", path)
			if err != nil {
				return e, fmt.Errorf("%s.rotatesInMs must be a number or null", path)
			}
			e.RotatesInMs = &ms
		}
		if f.has("blocks") && !f.isNull("blocks") {
			if e.Blocks, err = decodeBlocks(f["blocks"], path+".blocks"); err != nil {
				return e, err
			}
		}
	}
	return e, nil
}

// decodeBlocks decodes a snapshot entry's blocks: any broker
// may send them. An item without a string providerKey and blockScope and a
// numeric blockedUntilMs (updatedAtMs optional) is dropped, not fatal: a
// malformed block must not cost the client every credential. A list that
// is not an array is a schema error; an empty list is nil.
func decodeBlocks(raw json.RawMessage, path string) ([]vault.CredentialBlock, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil || list == nil {
		return nil, fmt.Errorf("%s must be an array", path)
	}
	var out []vault.CredentialBlock
	for _, item := range list {
		f, err := object(item, path)
		if err != nil {
			continue
		}
		var b vault.CredentialBlock
		var e1, e2, e3, e4 error
		b.ProviderKey, e1 = f.str("providerKey", path)
		b.Scope, e2 = f.str("blockScope", path)
		b.UntilMs, e3 = f.millis("blockedUntilMs", path)
		if f.has("updatedAtMs") {
			b.UpdatedAtMs, e4 = f.millis("updatedAtMs", path)
		}
		if e1 == nil && e2 == nil && e3 == nil && e4 == nil {
			out = append(out, b)
		}
	}
	return out, nil
}

func decodeEntryList(raw json.RawMessage, path string, withRotation bool) ([]vault.Entry, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil || list == nil {
		return nil, fmt.Errorf("%s must be an array", path)
	}
	out := make([]vault.Entry, len(list))
	for i, item := range list {
		e, err := decodeEntry(item, fmt.Sprintf("%s[%d]", path, i), withRotation)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

func decodeSnapshotFields(f fields, path string) (vault.Snapshot, error) {
	var s vault.Snapshot
	var err error
	if s.Generation, err = f.integer("generation", path); err != nil {
		return s, err
	}
	if s.GeneratedAt, err = f.millis("generatedAt", path); err != nil {
		return s, err
	}
	if s.ServerNowMs, err = f.millis("serverNowMs", path); err != nil {
		return s, err
	}
	if s.Refresher, err = decodeRefresher(f["refresher"], path+".refresher"); err != nil {
		return s, err
	}
	s.Credentials, err = decodeEntryList(f["credentials"], path+".credentials", true)
	return s, err
}

// DecodeSnapshot decodes a SnapshotResponse (the body of GET /v1/snapshot,
// or a snapshot cache's plaintext) as the client does: required keys and
// their types checked, unknown keys ignored. Errors name the key path,
// never a value.
func DecodeSnapshot(raw json.RawMessage) (vault.Snapshot, error) {
	f, err := object(raw, "snapshot")
	if err != nil {
		return vault.Snapshot{}, err
	}
	return decodeSnapshotFields(f, "snapshot")
}

// DecodeRefresh decodes the POST /v1/credential/<id>/refresh answer, its
// entry without rotatesInMs.
func DecodeRefresh(raw json.RawMessage) (vault.Entry, error) {
	f, err := object(raw, "response")
	if err != nil {
		return vault.Entry{}, err
	}
	return decodeEntry(f["entry"], "response.entry", false)
}

// DecodeEntries decodes the POST /v1/credential answer: the provider's
// active entries after the upload.
func DecodeEntries(raw json.RawMessage) ([]vault.Entry, error) {
	f, err := object(raw, "response")
	if err != nil {
		return nil, err
	}
	return decodeEntryList(f["entries"], "response.entries", false)
}

// DecodeUsage decodes the GET /v1/usage answer.
func DecodeUsage(raw json.RawMessage) (Usage, error) {
	f, err := object(raw, "usage")
	if err != nil {
		return Usage{}, err
	}
	var u Usage
	if u.GeneratedAt, err = f.millis("generatedAt", "usage"); err != nil {
		return u, err
	}
	var reports []json.RawMessage
	if err := json.Unmarshal(f["reports"], &reports); err != nil || reports == nil {
		return u, errors.New("usage.reports must be an array")
	}
	u.Reports = make([]vault.UsageReport, len(reports))
	for i, r := range reports {
		path := fmt.Sprintf("usage.reports[%d]", i)
		rf, err := object(r, path)
		if err != nil {
			return u, err
		}
		if _, err := rf.str("provider", path); err != nil {
			return u, err
		}
		if err := json.Unmarshal(r, &u.Reports[i]); err != nil {
			return u, fmt.Errorf("%s has a field of the wrong type", path)
		}
	}
	return u, nil
}

// DecodeHistory decodes the GET /v1/usage/history answer.
func DecodeHistory(raw json.RawMessage) (History, error) {
	f, err := object(raw, "history")
	if err != nil {
		return History{}, err
	}
	var h History
	if h.GeneratedAt, err = f.millis("generatedAt", "history"); err != nil {
		return h, err
	}
	if err := json.Unmarshal(f["entries"], &h.Entries); err != nil || h.Entries == nil {
		return h, errors.New("history.entries must be an array of usage history entries")
	}
	if t, ok := f["truncated"]; ok {
		_ = json.Unmarshal(t, &h.Truncated)
	}
	return h, nil
}

// Health is the healthz answer.
type Health struct {
	OK      bool
	Version string // "" when the broker does not report one
}

// Usage is the GET /v1/usage answer.
type Usage struct {
	GeneratedAt int64
	Reports     []vault.UsageReport
}

// History is the GET /v1/usage/history answer.
type History struct {
	GeneratedAt int64
	Entries     []vault.UsageHistoryEntry
	Truncated   bool // the broker dropped the oldest entries (Go brokers only)
}

// Event kinds of the snapshot stream.
const (
	KindSnapshot = "snapshot"
	KindEntry    = "entry"
	KindRemoved  = "removed"
)

// Event is one frame of the snapshot stream. Snapshot is set for
// KindSnapshot, Entry for KindEntry, ID for KindRemoved; Generation,
// ServerNowMs and Refresher are always set.
type Event struct {
	Kind        string
	Generation  int64
	ServerNowMs int64
	Refresher   vault.RefresherSchedule
	Snapshot    *vault.Snapshot
	Entry       *vault.Entry
	ID          int64
	// Raw is a snapshot frame's JSON as received, "kind" included (the
	// snapshot cache stores it without); nil for the
	// other kinds.
	Raw []byte
}

// DecodeEvent decodes one data payload of the snapshot stream.
func DecodeEvent(raw json.RawMessage) (Event, error) {
	f, err := object(raw, "event")
	if err != nil {
		return Event{}, err
	}
	kind, err := f.str("kind", "event")
	if err != nil {
		return Event{}, err
	}
	ev := Event{Kind: kind}
	switch kind {
	case KindSnapshot:
		s, err := decodeSnapshotFields(f, "event")
		if err != nil {
			return Event{}, err
		}
		ev.Generation, ev.ServerNowMs, ev.Refresher, ev.Snapshot = s.Generation, s.ServerNowMs, s.Refresher, &s
		ev.Raw = append([]byte(nil), raw...) // raw is reused by the next read
		return ev, nil
	case KindEntry, KindRemoved:
	default:
		return Event{}, errors.New(`event.kind must be "snapshot", "entry" or "removed"`)
	}
	if ev.Generation, err = f.integer("generation", "event"); err != nil {
		return Event{}, err
	}
	if ev.ServerNowMs, err = f.millis("serverNowMs", "event"); err != nil {
		return Event{}, err
	}
	if ev.Refresher, err = decodeRefresher(f["refresher"], "event.refresher"); err != nil {
		return Event{}, err
	}
	if kind == KindEntry {
		e, err := decodeEntry(f["entry"], "event.entry", true)
		if err != nil {
			return Event{}, err
		}
		ev.Entry = &e
		return ev, nil
	}
	if ev.ID, err = f.integer("id", "event"); err != nil {
		return Event{}, err
	}
	return ev, nil
}

// ParseGenerationTag parses an If-None-Match or ETag value as the reference does: trim, strip
// a leading W/ (then trim), strip one pair of quotes; the rest must be a
// non-negative integer.
func ParseGenerationTag(h string) (int64, bool) {
	v := strings.TrimSpace(h)
	if v == "" {
		return 0, false
	}
	if rest, ok := strings.CutPrefix(v, "W/"); ok {
		v = strings.TrimSpace(rest)
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	return ParseSafeInt(strings.TrimSpace(v))
}

// ParseSafeInt accepts what JavaScript's Number() turns into a non-negative
// safe integer from decimal notation ("5", "5.0", "5e3").
func ParseSafeInt(v string) (int64, bool) {
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 || n > vault.MaxSafeInteger {
			return 0, false
		}
		return n, true
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > vault.MaxSafeInteger || f != float64(int64(f)) || strings.ContainsAny(v, "xXnN") {
		return 0, false
	}
	return int64(f), true
}

package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ompgo/omp/pkg/vault"
)

// Strict decoders of the fleet request bodies. Their 400 texts follow the
// reference validator ("<key> must be a string (was missing)", one line
// per problem); they name keys and JSON kinds, never
// values.

// jsonKind names the JSON kind of raw as the reference validator does.
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "missing"
	}
	switch raw[0] {
	case 'n':
		return "null"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case '[':
		return "an array"
	case '{':
		return "an object"
	default:
		return "a number"
	}
}

// schemaObject reads raw as an object; an array reads as {} (the reference
// reports every key missing for []). Other kinds are a 400.
func schemaObject(raw json.RawMessage) (map[string]json.RawMessage, error) {
	if k := jsonKind(raw); k == "an array" {
		return map[string]json.RawMessage{}, nil
	} else if k != "an object" {
		return nil, vault.Errorf(vault.EINVALID, "request body must be an object (was %s)", k)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, vault.Errorf(vault.EINVALID, "request body must be an object")
	}
	return m, nil
}

// problems collects schema problems, one line each.
type problems []string

func (p *problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return vault.Errorf(vault.EINVALID, "%s", strings.Join(p, "\n"))
}

// extras reports the keys of m not in allowed, sorted, as "<k> must be
// removed" (long keys cut).
func (p *problems) extras(m map[string]json.RawMessage, allowed ...string) {
	var extra []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	for _, k := range extra {
		if len(k) > 64 {
			k = vault.CutUTF8(k, 64) + "…"
		}
		p.add("%s must be removed", k)
	}
}

// str reads the string at key; ok false (a problem added) when it is not one.
func (p *problems) str(m map[string]json.RawMessage, path, key, want string) (string, bool) {
	v := m[key]
	var s string
	if jsonKind(v) != "a string" || json.Unmarshal(v, &s) != nil {
		p.add("%s%s must be %s (was %s)", path, key, want, jsonKind(v))
		return "", false
	}
	return s, true
}

// num reads the finite number at key.
func (p *problems) num(m map[string]json.RawMessage, path, key string) (float64, bool) {
	v := m[key]
	if jsonKind(v) != "a number" {
		p.add("%s%s must be a number (was %s)", path, key, jsonKind(v))
		return 0, false
	}
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) { // 1e999
		p.add("%s%s must be a number (was a number)", path, key)
		return 0, false
	}
	return f, true
}

// truncInt truncates a finite float to an int64, saturating.
func truncInt(f float64) int64 {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// DecodeBlock decodes a strict CredentialBlock and applies the length
// bounds vault.MaxBlockProviderKeyLen and vault.MaxBlockScopeLen;
// updatedAtMs is accepted and ignored.
func DecodeBlock(raw json.RawMessage) (vault.CredentialBlock, error) {
	m, err := schemaObject(raw)
	if err != nil {
		return vault.CredentialBlock{}, err
	}
	var p problems
	var b vault.CredentialBlock
	if pk, ok := p.str(m, "", "providerKey", "a string (length at least 1)"); ok {
		if pk == "" {
			p.add("providerKey must be at least length 1 (was 0)")
		} else if len(pk) > vault.MaxBlockProviderKeyLen {
			p.add("providerKey must be at most %d bytes (was %d)", vault.MaxBlockProviderKeyLen, len(pk))
		}
		b.ProviderKey = pk
	}
	if sc, ok := p.str(m, "", "blockScope", "a string"); ok {
		if len(sc) > vault.MaxBlockScopeLen {
			p.add("blockScope must be at most %d bytes (was %d)", vault.MaxBlockScopeLen, len(sc))
		}
		b.Scope = sc
	}
	if f, ok := p.num(m, "", "blockedUntilMs"); ok {
		b.UntilMs = truncInt(f)
	}
	if _, ok := m["updatedAtMs"]; ok {
		p.num(m, "", "updatedAtMs")
	}
	p.extras(m, "providerKey", "blockScope", "blockedUntilMs", "updatedAtMs")
	return b, p.err()
}

// observedEntryKeys are the required keys of an ObservedUsageEntry; other
// keys are tolerated, as by the reference.
var observedEntryKeys = []string{"at", "provider", "model", "requests", "inputTokens", "outputTokens",
	"cacheReadTokens", "cacheWriteTokens", "costUsd"}

// DecodeClientUsage decodes a strict ClientUsageReport.
// More than vault.MaxObservedEntries entries is a 400;
// normalisation is vault.NormalizeClientUsage's job.
func DecodeClientUsage(raw json.RawMessage) (vault.ClientUsageReport, error) {
	m, err := schemaObject(raw)
	if err != nil {
		return vault.ClientUsageReport{}, err
	}
	var p problems
	var r vault.ClientUsageReport
	r.InstallID, _ = p.str(m, "", "installId", "a string")
	if _, ok := m["hostname"]; ok {
		r.Hostname, _ = p.str(m, "", "hostname", "a string")
	}
	if _, ok := m["app"]; ok {
		r.App, _ = p.str(m, "", "app", "a string")
	}
	var items []json.RawMessage
	if k := jsonKind(m["entries"]); k != "an array" || json.Unmarshal(m["entries"], &items) != nil {
		p.add("entries must be an array (was %s)", k)
	} else if len(items) > vault.MaxObservedEntries {
		p.add("entries must hold at most %d items (was %d)", vault.MaxObservedEntries, len(items))
		items = nil
	}
	p.extras(m, "installId", "hostname", "app", "entries")
	r.Entries = make([]vault.ObservedUsage, 0, len(items))
	for i, item := range items {
		path := fmt.Sprintf("entries[%d].", i)
		var em map[string]json.RawMessage
		if jsonKind(item) != "an object" || json.Unmarshal(item, &em) != nil {
			p.add("entries[%d] must be an object (was %s)", i, jsonKind(item))
			continue
		}
		var e vault.ObservedUsage
		for _, k := range observedEntryKeys {
			switch k {
			case "provider":
				e.Provider, _ = p.str(em, path, k, "a string")
			case "model":
				e.Model, _ = p.str(em, path, k, "a string")
			default:
				f, ok := p.num(em, path, k)
				if !ok {
					continue
				}
				switch k {
				case "at":
					e.At = truncInt(f)
				case "requests":
					e.Requests = truncInt(f)
				case "inputTokens":
					e.InputTokens = truncInt(f)
				case "outputTokens":
					e.OutputTokens = truncInt(f)
				case "cacheReadTokens":
					e.CacheReadTokens = truncInt(f)
				case "cacheWriteTokens":
					e.CacheWriteTokens = truncInt(f)
				case "costUsd":
					e.CostUsd = f
				}
			}
		}
		// credentialId (Go clients, ObservedCredentialIDs) is optional and
		// never a 400: anything but a positive number means "not named".
		if v, ok := em["credentialId"]; ok && jsonKind(v) == "a number" {
			if f, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64); err == nil && !math.IsInf(f, 0) {
				e.CredentialID = max(truncInt(f), 0)
			}
		}
		r.Entries = append(r.Entries, e)
		if len(p) > 20 { // enough to fix the sender; do not build a huge answer
			break
		}
	}
	return r, p.err()
}

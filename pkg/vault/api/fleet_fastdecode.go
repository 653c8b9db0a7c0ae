package api

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/ompgo/omp/pkg/vault"
)

// A hand-written parser of the common ClientUsageReport: what every
// sender's well-formed report looks like (plain strings, the nine entry
// keys once each, at most vault.MaxObservedEntries entries). It reads the
// body in one pass without reflection or intermediate maps. Anything else —
// an escape sequence, a missing, repeated or extra key, a wrong kind,
// invalid JSON — makes it give up (ok false), and the handler runs the
// full schema path (JSON syntax check, DecodeClientUsage) that words the
// exact 400 texts and tolerates extra entry keys. So the fast path accepts
// a subset of valid JSON and, where it accepts, yields exactly what the
// schema path yields (FuzzFastClientUsage checks both).

// usageParser is a cursor over a request body.
type usageParser struct {
	b []byte
	i int
	// seen interns strings: providers, models and apps repeat across the
	// entries of a report.
	seen map[string]string
}

func (p *usageParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// lit consumes c after optional whitespace.
func (p *usageParser) lit(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// peek reports whether the next non-space byte is c, without consuming it.
func (p *usageParser) peek(c byte) bool {
	p.ws()
	return p.i < len(p.b) && p.b[p.i] == c
}

// str reads a string without escapes or control characters whose bytes
// are valid UTF-8 (encoding/json would rewrite the others).
func (p *usageParser) str() (string, bool) {
	if !p.lit('"') {
		return "", false
	}
	start, ascii := p.i, true
	for ; p.i < len(p.b); p.i++ {
		switch c := p.b[p.i]; {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			if !ascii && !utf8.Valid(s) {
				return "", false
			}
			if v, ok := p.seen[string(s)]; ok { // no allocation for the lookup
				return v, true
			}
			v := string(s)
			if p.seen == nil {
				p.seen = map[string]string{}
			}
			p.seen[v] = v
			return v, true
		case c == '\\' || c < 0x20:
			return "", false
		case c >= 0x80:
			ascii = false
		}
	}
	return "", false
}

// key reads an object key and its colon.
func (p *usageParser) key() (string, bool) {
	k, ok := p.str()
	return k, ok && p.lit(':')
}

// digits consumes one or more ASCII digits.
func (p *usageParser) digits() bool {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

// num reads a finite JSON number (RFC 8259 grammar).
func (p *usageParser) num() (float64, bool) {
	p.ws()
	start := p.i
	neg := p.i < len(p.b) && p.b[p.i] == '-'
	if neg {
		p.i++
	}
	switch {
	case p.i < len(p.b) && p.b[p.i] == '0':
		p.i++
	case !p.digits():
		return 0, false
	}
	frac := false
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i, frac = p.i+1, true
		if !p.digits() {
			return 0, false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i, frac = p.i+1, true
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if !p.digits() {
			return 0, false
		}
	}
	if intEnd := p.i; !frac && intEnd-start <= 16 {
		// A plain integer of at most 16 characters fits an int64, and its
		// conversion rounds as ParseFloat does.
		var n int64
		for _, c := range p.b[start:intEnd] {
			if c != '-' {
				n = n*10 + int64(c-'0')
			}
		}
		if neg {
			n = -n
		}
		return float64(n), true
	}
	f, err := strconv.ParseFloat(string(p.b[start:p.i]), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// Entry keys as bits; all nine are required exactly once.
const (
	ekAt = 1 << iota
	ekProvider
	ekModel
	ekRequests
	ekInput
	ekOutput
	ekCacheRead
	ekCacheWrite
	ekCost
	ekAll  = 1<<iota - 1
	ekCred = 1 << iota // optional
)

// entry reads one ObservedUsageEntry object.
func (p *usageParser) entry() (vault.ObservedUsage, bool) {
	var e vault.ObservedUsage
	if !p.lit('{') {
		return e, false
	}
	seen := 0
	for {
		k, ok := p.key()
		if !ok {
			return e, false
		}
		var bit int
		switch k {
		case "provider":
			bit = ekProvider
			e.Provider, ok = p.str()
		case "model":
			bit = ekModel
			e.Model, ok = p.str()
		default:
			var dst *int64
			switch k {
			case "at":
				bit, dst = ekAt, &e.At
			case "requests":
				bit, dst = ekRequests, &e.Requests
			case "inputTokens":
				bit, dst = ekInput, &e.InputTokens
			case "outputTokens":
				bit, dst = ekOutput, &e.OutputTokens
			case "cacheReadTokens":
				bit, dst = ekCacheRead, &e.CacheReadTokens
			case "cacheWriteTokens":
				bit, dst = ekCacheWrite, &e.CacheWriteTokens
			case "costUsd":
				bit = ekCost
			case "credentialId":
				bit, dst = ekCred, &e.CredentialID
			default:
				return e, false // tolerated extra keys: the schema path
			}
			var f float64
			if f, ok = p.num(); ok {
				if dst != nil {
					*dst = truncInt(f)
				} else {
					e.CostUsd = f
				}
			}
		}
		if !ok || seen&bit != 0 {
			return e, false
		}
		seen |= bit
		if p.lit('}') {
			e.CredentialID = max(e.CredentialID, 0)
			return e, seen&ekAll == ekAll
		}
		if !p.lit(',') {
			return e, false
		}
	}
}

// FastClientUsage parses raw as a common ClientUsageReport; ok false sends
// the caller to the schema path.
func FastClientUsage(raw []byte) (r vault.ClientUsageReport, ok bool) {
	p := usageParser{b: raw}
	if !p.lit('{') {
		return r, false
	}
	const (
		kInstall = 1 << iota
		kHost
		kApp
		kEntries
	)
	seen := 0
	for {
		k, ok := p.key()
		if !ok {
			return r, false
		}
		var bit int
		switch k {
		case "installId":
			bit = kInstall
			r.InstallID, ok = p.str()
		case "hostname":
			bit = kHost
			r.Hostname, ok = p.str()
		case "app":
			bit = kApp
			r.App, ok = p.str()
		case "entries":
			bit = kEntries
			r.Entries, ok = p.entries()
		default:
			return r, false
		}
		if !ok || seen&bit != 0 {
			return r, false
		}
		seen |= bit
		if p.lit('}') {
			break
		}
		if !p.lit(',') {
			return r, false
		}
	}
	p.ws()
	return r, p.i == len(p.b) && seen&(kInstall|kEntries) == kInstall|kEntries
}

// entries reads the entries array (at most vault.MaxObservedEntries).
func (p *usageParser) entries() ([]vault.ObservedUsage, bool) {
	if !p.lit('[') {
		return nil, false
	}
	out := make([]vault.ObservedUsage, 0, 16)
	if p.lit(']') {
		return out, true
	}
	for {
		if len(out) == vault.MaxObservedEntries || !p.peek('{') {
			return nil, false
		}
		e, ok := p.entry()
		if !ok {
			return nil, false
		}
		out = append(out, e)
		if p.lit(']') {
			return out, true
		}
		if !p.lit(',') {
			return nil, false
		}
	}
}

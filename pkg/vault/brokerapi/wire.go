package brokerapi

import (
	"encoding/json"
	"strconv"

	"github.com/ompgo/omp/pkg/vault"
)

// Server-side wire encoding. Snapshot entries are encoded once per shared
// snapshot into a prefix holding every field but rotatesInMs; responses are
// assembled from these prefixes so a GET /v1/snapshot only formats numbers.

// encodedEntry is one credential of a shared snapshot.
type encodedEntry struct {
	id       int64
	provider string
	oauth    bool
	expires  int64
	// prefix is `{"id":…,"provider":…,"credential":{…},"identityKey":…`
	// without the closing brace, with the 15.x credential fields.
	prefix []byte
	// target is the rotation target (serverNowMs + rotatesInMs) at build
	// time; valid when rotates.
	target  int64
	rotates bool
	// src is what prefix was encoded from (redacted), so a record that did
	// not change reuses prefix instead of being encoded again, and the full
	// encoding. A pointer keeps encodedEntry small: snapshots copy it once
	// per credential.
	src *entrySrc
}

// entrySrc is an entry's redacted source and, when its credential holds
// 18.1.21 extension fields, its full encoding (prefix with those fields,
// Decision E1; nil otherwise, then it equals prefix).
type entrySrc struct {
	vault.Entry
	full []byte
}

// encodes reports whether e's prefix is the encoding of record r: the
// same id, provider, identity key and wire credential fields.
func (e *encodedEntry) encodes(r vault.Record) bool {
	return e.src != nil && e.src.ID == r.ID && e.src.Provider == r.Provider && e.src.IdentityKey == r.IdentityKey &&
		sameWire(e.src.Credential, r.Credential.Redacted())
}

// pfx returns the encoding for a 15.x (full false) or 18.1.21 reader.
func (e *encodedEntry) pfx(full bool) []byte {
	if full && e.src != nil && e.src.full != nil {
		return e.src.full
	}
	return e.prefix
}

// sameWire reports whether two redacted credentials encode to the same
// JSON in both shapes: it compares exactly the fields of
// vault.Credential.AppendWire (TestSameWireCoversEveryField keeps the two in
// step).
func sameWire(a, b vault.Credential) bool {
	if a.Type != b.Type || a.Access != b.Access || a.Refresh != b.Refresh || a.Expires != b.Expires ||
		a.EnterpriseURL != b.EnterpriseURL || a.ProjectID != b.ProjectID || a.Email != b.Email ||
		a.AccountID != b.AccountID || a.Key != b.Key || a.Source != b.Source || len(a.Extra) != len(b.Extra) {
		return false
	}
	for k, v := range a.Extra {
		w, ok := b.Extra[k]
		if !ok || string(v) != string(w) {
			return false
		}
	}
	return true
}

// encodeRecord encodes r, reusing prev's encoding of it when r is unchanged.
func encodeRecord(r vault.Record, prev *shared) (encodedEntry, error) {
	if prev != nil {
		if j, ok := prev.index[r.ID]; ok && prev.entries[j].encodes(r) {
			return prev.entries[j], nil
		}
	}
	return encodeEntry(vault.NewEntry(r))
}

// encodeEntry redacts nothing itself: e.Credential must already be redacted
// (vault.NewEntry does it).
func encodeEntry(e vault.Entry) (encodedEntry, error) {
	provider, _ := json.Marshal(e.Provider)
	enc := func(full bool) ([]byte, error) {
		b := make([]byte, 0, len(provider)+len(e.IdentityKey)+256)
		b = append(b, `{"id":`...)
		b = strconv.AppendInt(b, e.ID, 10)
		b = append(b, `,"provider":`...)
		b = append(b, provider...)
		b = append(b, `,"credential":`...)
		b, err := e.Credential.AppendWire(b, full)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"identityKey":`...)
		return appendNullableString(b, e.IdentityKey), nil
	}
	src := &entrySrc{Entry: e}
	out := encodedEntry{id: e.ID, provider: e.Provider, oauth: e.Credential.IsOAuth(), expires: e.Credential.Expires, src: src}
	var err error
	if out.prefix, err = enc(false); err != nil {
		return encodedEntry{}, err
	}
	if e.Credential.HasExtensions() {
		if src.full, err = enc(true); err != nil {
			return encodedEntry{}, err
		}
	}
	return out, nil
}

func appendNullableString(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// rotatesInMs evaluates broker.md §2.6 for e at now.
func (e *encodedEntry) rotatesInMs(sched vault.Schedule, now int64) (int64, bool) {
	if !e.oauth {
		return 0, false
	}
	return sched.RotatesInMs(vault.Credential{Type: vault.TypeOAuth, Expires: e.expires}, now)
}

// appendSnapshotEntry appends the SnapshotEntry JSON of e at now.
func appendSnapshotEntry(b []byte, e *encodedEntry, sched vault.Schedule, now int64, full bool) []byte {
	b = append(b, e.pfx(full)...)
	b = append(b, `,"rotatesInMs":`...)
	if ms, ok := e.rotatesInMs(sched, now); ok {
		b = strconv.AppendInt(b, ms, 10)
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}')
}

// appendPlainEntry appends the CredentialSnapshotEntry JSON (no rotatesInMs)
// of upload and refresh replies, which always carry the extension fields
// (Decision E1).
func appendPlainEntry(b []byte, e *encodedEntry) []byte {
	return append(append(b, e.pfx(true)...), '}')
}

func appendRefresher(b []byte, r vault.RefresherSchedule) []byte {
	b = append(b, `{"enabled":`...)
	b = strconv.AppendBool(b, r.Enabled)
	b = append(b, `,"intervalMs":`...)
	b = strconv.AppendInt(b, r.IntervalMs, 10)
	b = append(b, `,"skewMs":`...)
	b = strconv.AppendInt(b, r.SkewMs, 10)
	b = append(b, `,"nextSweepInMs":`...)
	b = strconv.AppendInt(b, r.NextSweepInMs, 10)
	return append(b, '}')
}

// appendSnapshot appends the SnapshotResponse of sh as seen at now with
// sched; with kind it is the stream's snapshot event body; with full the
// credentials carry their extension fields.
func appendSnapshot(b []byte, sh *shared, sched vault.Schedule, now int64, kind, full bool) []byte {
	b = append(b, '{')
	if kind {
		b = append(b, `"kind":"snapshot",`...)
	}
	b = append(b, `"generation":`...)
	b = strconv.AppendInt(b, sh.gen, 10)
	b = append(b, `,"generatedAt":`...)
	b = strconv.AppendInt(b, sh.builtAt, 10)
	b = append(b, `,"serverNowMs":`...)
	b = strconv.AppendInt(b, now, 10)
	b = append(b, `,"refresher":`...)
	b = appendRefresher(b, sched.Wire(now))
	b = append(b, `,"credentials":[`...)
	for i := range sh.entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendSnapshotEntry(b, &sh.entries[i], sched, now, full)
	}
	return append(b, "]}"...)
}

// appendEntryFrame appends an SSE `entry` frame built at sh's build time.
func appendEntryFrame(b []byte, sh *shared, e *encodedEntry, full bool) []byte {
	b = append(b, "event: entry\ndata: {\"kind\":\"entry\",\"generation\":"...)
	b = strconv.AppendInt(b, sh.gen, 10)
	b = append(b, `,"serverNowMs":`...)
	b = strconv.AppendInt(b, sh.builtAt, 10)
	b = append(b, `,"refresher":`...)
	b = append(b, sh.refresher...)
	b = append(b, `,"entry":`...)
	b = append(b, e.pfx(full)...)
	b = append(b, `,"rotatesInMs":`...)
	if e.rotates {
		b = strconv.AppendInt(b, e.target-sh.builtAt, 10)
	} else {
		b = append(b, "null"...)
	}
	return append(b, "}}\n\n"...)
}

// appendRemovedFrame appends an SSE `removed` frame.
func appendRemovedFrame(b []byte, sh *shared, id int64) []byte {
	b = append(b, "event: removed\ndata: {\"kind\":\"removed\",\"generation\":"...)
	b = strconv.AppendInt(b, sh.gen, 10)
	b = append(b, `,"serverNowMs":`...)
	b = strconv.AppendInt(b, sh.builtAt, 10)
	b = append(b, `,"refresher":`...)
	b = append(b, sh.refresher...)
	b = append(b, `,"id":`...)
	b = strconv.AppendInt(b, id, 10)
	return append(b, "}\n\n"...)
}

// Small fixed responses.
type healthzBody struct {
	OK            bool         `json:"ok"`
	Version       string       `json:"version,omitempty"`
	PendingWrites int          `json:"pendingWrites,omitempty"`
	Vault         *vaultHealth `json:"vault,omitempty"`
}

type vaultHealth struct {
	Writable bool   `json:"writable"`
	Error    string `json:"error,omitempty"`
}

type okBody struct {
	OK bool `json:"ok"`
}

type usageBody struct {
	GeneratedAt int64               `json:"generatedAt"`
	Reports     []vault.UsageReport `json:"reports"`
}

package server

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/ompgo/omp/pkg/vault"
)

// Server-side wire encoding. Snapshot entries are encoded once per shared
// snapshot into a prefix holding every field but blocks and rotatesInMs;
// the credentials array is rendered from them once per reader shape
// (render), so a GET /v1/snapshot copies that and only formats numbers.

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
	// blk holds the credential's live blocks at build time; nil when none.
	blk *entryBlocks
}

// shape is what a reader of a snapshot sees: a
// request without the capabilities header gets the strict 15.x shape (no
// extension fields, no blocks); with the header it gets the extension
// fields and blocks, the Codex meter blocks folded into one "shared" block
// unless the header lists codex-meter-block-scopes.
type shape uint8

const (
	shape15     shape = iota // no capabilities header
	shapeShared              // header without codex-meter-block-scopes
	shapeFull                // header with codex-meter-block-scopes
)

// ext reports whether the shape carries the 18.1.21 extension fields.
func (s shape) ext() bool { return s != shape15 }

// entryBlocks is an entry's live blocks at build time with their encodings.
type entryBlocks struct {
	list   []vault.CredentialBlock // wire order
	min    int64                   // earliest UntilMs of list
	full   []byte                  // `,"blocks":[…]`
	shared []byte                  // the same after vault.SharedProjection
}

// newEntryBlocks encodes bs (live, in wire order); nil when bs is empty.
// It reuses prev when prev holds the same blocks.
func newEntryBlocks(bs []vault.CredentialBlock, prev *entryBlocks) *entryBlocks {
	if len(bs) == 0 {
		return nil
	}
	if prev != nil && slices.Equal(prev.list, bs) {
		return prev
	}
	eb := &entryBlocks{list: bs, min: bs[0].UntilMs}
	for _, b := range bs {
		eb.min = min(eb.min, b.UntilMs)
	}
	eb.full = appendBlockList(nil, bs)
	eb.shared = appendBlockList(nil, vault.SharedProjection(bs))
	return eb
}

// blockWire is a CredentialBlock as a snapshot entry carries it.
type blockWire struct {
	ProviderKey    string `json:"providerKey"`
	BlockScope     string `json:"blockScope"`
	BlockedUntilMs int64  `json:"blockedUntilMs"`
	UpdatedAtMs    int64  `json:"updatedAtMs,omitempty"` // 0: unknown
}

// appendBlockList appends `,"blocks":[…]`, nothing for an empty list.
func appendBlockList(b []byte, bs []vault.CredentialBlock) []byte {
	if len(bs) == 0 {
		return b
	}
	list := make([]blockWire, len(bs))
	for i, x := range bs {
		list[i] = blockWire{ProviderKey: x.ProviderKey, BlockScope: x.Scope, BlockedUntilMs: x.UntilMs, UpdatedAtMs: max(x.UpdatedAtMs, 0)}
	}
	enc, _ := json.Marshal(list) // strings and integers only: it cannot fail
	return append(append(b, `,"blocks":`...), enc...)
}

// appendBlocks appends e's blocks as a reader of shape sh sees them at
// now: the pre-encoded list while none expired, else the live ones
// re-encoded (expiry by clock changes no generation).
func (e *encodedEntry) appendBlocks(b []byte, sh shape, now int64) []byte {
	if sh == shape15 || e.blk == nil {
		return b
	}
	if now < e.blk.min {
		return append(b, e.blk.enc(sh)...)
	}
	live := vault.LiveBlocks(e.blk.list, now)
	if sh == shapeShared {
		live = vault.SharedProjection(live)
	}
	return appendBlockList(b, live)
}

// enc is the pre-encoded block list for shape sh; nil for shape15 or none.
func (eb *entryBlocks) enc(sh shape) []byte {
	switch {
	case eb == nil || sh == shape15:
		return nil
	case sh == shapeShared:
		return eb.shared
	default:
		return eb.full
	}
}

// entrySrc is an entry's redacted source and, when its credential holds
// 18.1.21 extension fields, its full encoding (prefix with those fields;
// nil otherwise, then it equals prefix).
type entrySrc struct {
	vault.Entry
	full []byte
}

// encodes reports whether e's prefix is the encoding of record r: the
// same id, provider, identity key and wire credential fields.
func (e *encodedEntry) encodes(r *vault.Record) bool {
	if e.src == nil || e.src.ID != r.ID || e.src.Provider != r.Provider || e.src.IdentityKey != r.IdentityKey {
		return false
	}
	red := r.Credential.Redacted()
	return sameWire(&e.src.Credential, &red)
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
func sameWire(a, b *vault.Credential) bool {
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

// encodeRecord encodes r, reusing old (the entry of r's id in an earlier
// snapshot; nil when none) when r is unchanged since.
func encodeRecord(r *vault.Record, old *encodedEntry) (encodedEntry, error) {
	if old != nil && old.encodes(r) {
		return *old, nil
	}
	return encodeEntry(vault.NewEntry(*r))
}

// entryWire is a snapshot entry without blocks and rotatesInMs.
type entryWire struct {
	ID          int64           `json:"id"`
	Provider    string          `json:"provider"`
	Credential  json.RawMessage `json:"credential"`
	IdentityKey *string         `json:"identityKey"` // nil: none
}

// encodeEntry redacts nothing itself: e.Credential must already be redacted
// (vault.NewEntry does it).
func encodeEntry(e vault.Entry) (encodedEntry, error) {
	w := entryWire{ID: e.ID, Provider: e.Provider}
	if e.IdentityKey != "" {
		w.IdentityKey = &e.IdentityKey
	}
	encode := func(full bool) ([]byte, error) {
		var err error
		if w.Credential, err = e.Credential.AppendWire(nil, full); err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		// Without HTML escaping the credential's extension values keep
		// their bytes (Credential.Equal compares them raw).
		enc.SetEscapeHTML(false)
		if err := enc.Encode(w); err != nil {
			return nil, err
		}
		// The entry's closing brace comes after blocks and rotatesInMs.
		return bytes.TrimSuffix(buf.Bytes(), []byte("}\n")), nil
	}
	src := &entrySrc{Entry: e}
	out := encodedEntry{id: e.ID, provider: e.Provider, oauth: e.Credential.IsOAuth(), expires: e.Credential.Expires, src: src}
	var err error
	if out.prefix, err = encode(false); err != nil {
		return encodedEntry{}, err
	}
	if e.Credential.HasExtensions() {
		if src.full, err = encode(true); err != nil {
			return encodedEntry{}, err
		}
	}
	return out, nil
}

// rotatesInMs estimates when the refresher will rotate e, relative to now
// (see vault.Schedule.RotatesInMs).
func (e *encodedEntry) rotatesInMs(sched vault.Schedule, now int64) (int64, bool) {
	if !e.oauth {
		return 0, false
	}
	return sched.RotatesInMs(vault.Credential{Type: vault.TypeOAuth, Expires: e.expires}, now)
}

// render is the credentials array of one shared snapshot as readers of
// one shape see it, encoded once: every entry with the blocks live at
// build time, contiguous in memory, with a hole where each OAuth entry's
// rotatesInMs goes (the only per-request part of an entry). A request
// copies the body between the holes and formats the numbers, so its cost
// is one sequential copy of the body whatever the entries hold; blocks
// add their bytes and nothing else.
type render struct {
	body  []byte // `{…},{…}` without the rotatesInMs numbers of OAuth entries
	holes []hole
	// floor and until bound the request times the render is exact for:
	// until is the earliest deadline of a block in it (math.MaxInt64:
	// none), when one drops out; floor the latest deadline of a block left
	// out as expired (math.MinInt64: none), before which that block would
	// still be live (a request whose clock reading is older than the
	// build's).
	floor, until int64
}

// hole is where an entry's rotatesInMs number goes in render.body.
type hole struct {
	off   int   // offset in body
	entry int32 // index in shared.entries
}

// renderFor returns sh's render for shape sp at now, building it when
// there is none yet or the held one does not cover now (a block in it
// expired; expiry by clock changes no generation, so the
// render follows the clock). One request builds while the others of the
// moment wait for it.
func (sh *shared) renderFor(sp shape, now int64) *render {
	if r := sh.renders[sp].Load(); r != nil && now >= r.floor && now < r.until {
		return r
	}
	sh.renderMu.Lock()
	defer sh.renderMu.Unlock()
	if r := sh.renders[sp].Load(); r != nil && now >= r.floor && now < r.until {
		return r
	}
	r := &render{floor: math.MinInt64, until: math.MaxInt64}
	size := 0 // one allocation: the entries' encodings plus the framing
	for i := range sh.entries {
		size += len(sh.entries[i].pfx(sp.ext())) + len(sh.entries[i].blk.enc(sp)) + len(`,"rotatesInMs":null},`)
	}
	r.body = make([]byte, 0, size)
	for i := range sh.entries {
		e := &sh.entries[i]
		if i > 0 {
			r.body = append(r.body, ',')
		}
		r.body = append(r.body, e.pfx(sp.ext())...)
		r.body = e.appendBlocks(r.body, sp, now)
		if sp != shape15 && e.blk != nil {
			for _, b := range e.blk.list {
				if b.UntilMs > now {
					r.until = min(r.until, b.UntilMs)
				} else {
					r.floor = max(r.floor, b.UntilMs)
				}
			}
		}
		r.body = append(r.body, `,"rotatesInMs":`...)
		if e.oauth {
			r.holes = append(r.holes, hole{off: len(r.body), entry: int32(i)})
			r.body = append(r.body, '}')
		} else {
			r.body = append(r.body, "null}"...)
		}
	}
	sh.renders[sp].Store(r)
	return r
}

// appendPlainEntry appends the CredentialSnapshotEntry JSON (no rotatesInMs)
// of upload and refresh replies, which always carry the extension fields.
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
// sched; with kind it is the stream's snapshot event body; sp is the
// reader's shape. generatedAt is now, when the set is exported, not when
// sh was built: clients judge their snapshot cache's freshness by it, and
// a vault that has not changed for an hour is still current.
func appendSnapshot(b []byte, sh *shared, sched vault.Schedule, now int64, kind bool, sp shape) []byte {
	b = append(b, '{')
	if kind {
		b = append(b, `"kind":"snapshot",`...)
	}
	b = append(b, `"generation":`...)
	b = strconv.AppendInt(b, sh.gen, 10)
	b = append(b, `,"generatedAt":`...)
	b = strconv.AppendInt(b, now, 10)
	b = append(b, `,"serverNowMs":`...)
	b = strconv.AppendInt(b, now, 10)
	b = append(b, `,"refresher":`...)
	b = appendRefresher(b, sched.Wire(now))
	b = append(b, `,"credentials":[`...)
	r := sh.renderFor(sp, now)
	prev := 0
	for _, h := range r.holes {
		b = append(b, r.body[prev:h.off]...)
		if ms, ok := sh.entries[h.entry].rotatesInMs(sched, now); ok {
			b = strconv.AppendInt(b, ms, 10)
		} else {
			b = append(b, "null"...)
		}
		prev = h.off
	}
	b = append(b, r.body[prev:]...)
	return append(b, "]}"...)
}

// appendEntryFrame appends an SSE `entry` frame built at sh's build time.
func appendEntryFrame(b []byte, sh *shared, e *encodedEntry, sp shape) []byte {
	b = append(b, "event: entry\ndata: {\"kind\":\"entry\",\"generation\":"...)
	b = strconv.AppendInt(b, sh.gen, 10)
	b = append(b, `,"serverNowMs":`...)
	b = strconv.AppendInt(b, sh.builtAt, 10)
	b = append(b, `,"refresher":`...)
	b = append(b, sh.refresher...)
	b = append(b, `,"entry":`...)
	b = append(b, e.pfx(sp.ext())...)
	b = append(b, e.blk.enc(sp)...) // every block is live at build time
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

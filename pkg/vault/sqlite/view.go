package sqlite

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"slices"
	"strings"

	"github.com/ompgo/omp/pkg/vault"
)

// view is one write batch's picture of the active set: the committed set
// plus the changes of the batch's ops so far (nil entry = no longer
// active). An op's changes stay in op until its savepoint is released, so
// a failed op leaves no trace; the batch's changes reach the shared set only
// after the commit (applyView).
type view struct {
	s     *Store
	q     querier
	gen0  int64 // the generation the batch's transaction started at
	base  *activeSet
	batch map[int64]*entry
	op    map[int64]*entry
	// reload: the batch made a change the view does not follow; drop the
	// shared set after commit.
	reload bool
}

// ensure loads base: the shared set when it is at gen0, else a reload
// inside the write transaction (another process wrote since).
func (v *view) ensure(ctx context.Context) error {
	if v.base != nil {
		return nil
	}
	v.s.cmu.RLock()
	a := v.s.active
	v.s.cmu.RUnlock()
	if a == nil || a.gen != v.gen0 {
		var err error
		if a, err = v.s.loadActive(ctx, v.q); err != nil {
			return err
		}
		v.s.cmu.Lock()
		v.s.active = a
		v.s.cmu.Unlock()
	}
	v.base = a
	return nil
}

// override returns the batch's own version of id, if it has one.
func (v *view) override(id int64) (*entry, bool) {
	if e, ok := v.op[id]; ok {
		return e, true
	}
	e, ok := v.batch[id]
	return e, ok
}

// get returns the active entry id or nil.
func (v *view) get(ctx context.Context, id int64) (*entry, error) {
	if e, ok := v.override(id); ok {
		return e, nil
	}
	if err := v.ensure(ctx); err != nil {
		return nil, err
	}
	return v.base.byID[id], nil
}

// set records the running op's change of id (nil: no longer active).
func (v *view) set(id int64, e *entry) {
	if v.op == nil {
		v.op = map[int64]*entry{}
	}
	v.op[id] = e
}

// release keeps the running op's changes; rollback drops them.
func (v *view) release() {
	if v.batch == nil {
		v.batch = map[int64]*entry{}
	}
	for id, e := range v.op {
		v.batch[id] = e
	}
	clear(v.op)
}

func (v *view) rollback() { clear(v.op) }

// changed returns the ids the batch has its own version of, ascending.
func (v *view) changed() []int64 {
	if len(v.op) == 0 && len(v.batch) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(v.op)+len(v.batch))
	for id := range v.op {
		ids = append(ids, id)
	}
	for id := range v.batch {
		if _, ok := v.op[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// collect returns the active entries that satisfy keep among base (sorted
// by id) with the batch's changes applied, by id. It merges the few changed
// ids into base in one pass: no lookup or sort per base entry.
func (v *view) collect(base []*entry, keep func(*entry) bool) []*entry {
	changed := v.changed()
	out := make([]*entry, 0, len(base)+len(changed))
	add := func(e *entry) {
		if e != nil && keep(e) {
			out = append(out, e)
		}
	}
	addChanged := func(id int64) {
		e, _ := v.override(id)
		add(e)
	}
	j := 0
	for _, e := range base {
		id := e.rec.ID
		for j < len(changed) && changed[j] < id {
			addChanged(changed[j])
			j++
		}
		if j < len(changed) && changed[j] == id {
			addChanged(id)
			j++
			continue
		}
		add(e)
	}
	for ; j < len(changed); j++ {
		addChanged(changed[j])
	}
	return out
}

// provider returns provider's active entries by id.
func (v *view) provider(ctx context.Context, provider string) ([]*entry, error) {
	if err := v.ensure(ctx); err != nil {
		return nil, err
	}
	return v.collect(v.base.byProv[provider], func(e *entry) bool { return e.rec.Provider == provider }), nil
}

// apiKeys returns provider's active API-key entries by id.
func (v *view) apiKeys(ctx context.Context, provider string) ([]*entry, error) {
	if err := v.ensure(ctx); err != nil {
		return nil, err
	}
	return v.collect(v.base.entries(v.base.keys[provider]), func(e *entry) bool {
		return e.err == nil && e.rec.Provider == provider && e.rec.Credential.Type == vault.TypeAPIKey
	}), nil
}

// matching returns provider's active entries that are the same credential
// as c (matches), by id, through the identity and key indexes. An
// org-qualified OAuth credential may also claim rows by the one-way org
// upgrade (vault.ReplacementMatch); only then are the provider's rows
// scanned.
func (v *view) matching(ctx context.Context, provider string, c vault.Credential, ident string) ([]*entry, error) {
	if err := v.ensure(ctx); err != nil {
		return nil, err
	}
	switch c.Type {
	case vault.TypeOAuth:
		if ident == "" {
			return nil, nil
		}
		if ids := vault.Identifiers(c); strings.Contains(ident, "org:") {
			if _, org := vault.OrgUpgradeCandidates(ident, ids); org != "" {
				return v.collect(v.base.byProv[provider], func(e *entry) bool {
					return e.err == nil && e.rec.Provider == provider && e.rec.Credential.Type == vault.TypeOAuth &&
						vault.ReplacementMatch(e.rec.Credential, e.ident, ident, ids)
				}), nil
			}
		}
		return v.collect(v.base.entries(v.base.byIdnt[identKey{provider, ident}]), func(e *entry) bool {
			return e.err == nil && e.rec.Provider == provider && matchEntry(e, c, ident)
		}), nil
	case vault.TypeAPIKey:
		h := sha256.Sum256([]byte(vault.APIKeyMatchKey(provider, c.Key)))
		return v.collect(v.base.entries(v.base.byKey[apiKeyKey{provider, h}]), func(e *entry) bool {
			return e.err == nil && e.rec.Provider == provider && matchEntry(e, c, ident)
		}), nil
	}
	return nil, nil
}

// matchEntry is matches on an entry: API keys by equal match keys
// (vault.APIKeyMatchKey, constant time), OAuth by equal non-empty identity
// keys, never across types.
func matchEntry(e *entry, c vault.Credential, ident string) bool {
	r := e.rec.Credential
	if r.Type != c.Type {
		return false
	}
	if c.Type == vault.TypeAPIKey {
		a, b := vault.APIKeyMatchKey(e.rec.Provider, r.Key), vault.APIKeyMatchKey(e.rec.Provider, c.Key)
		return len(a) == len(b) && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
	}
	return ident != "" && ident == e.ident
}

// checked makes sure, inside the transaction, that every entry of es opens
// (a row that does not fails the op, as reading the provider's rows always
// has) and returns the entries for copyOut. The copy happens after the
// commit in the caller's goroutine, not in the leader under the write lock:
// entries are immutable, so it still shows the set right after the op.
func (v *view) checked(ctx context.Context, es []*entry) ([]*entry, error) {
	out := es[:0]
	for _, e := range es {
		if e.err != nil {
			rec, err := v.s.resolve(ctx, e)
			if errors.Is(err, errUnparsable) {
				continue
			}
			if err != nil {
				return nil, err
			}
			e = newEntry(rec)
		}
		out = append(out, e)
	}
	return out, nil
}

// copyOut copies checked entries out as records.
func copyOut(es []*entry) []vault.Record {
	if len(es) == 0 {
		return nil
	}
	out := make([]vault.Record, len(es))
	for i, e := range es {
		copyInto(&out[i], e)
	}
	return out
}

// applyView publishes a committed batch's changes to the shared set, which
// is then at gen1. When the shared set is not the one the batch started
// from (a reload since), it is left alone: the reload read the database
// after this commit or will be replaced by a newer one.
func (s *Store) applyView(v *view, gen1 int64) {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	a := s.active
	switch {
	case v.reload:
		s.active = nil
	case a == nil || a.gen != v.gen0:
	default:
		for id, e := range v.batch {
			a.put(id, e)
		}
		a.gen = gen1
	}
}

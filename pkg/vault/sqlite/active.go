package sqlite

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/ompgo/omp/pkg/vault"
)

// The in-memory active set: every active credential row, decoded once.
//
// Reads (List, Get of an active row) copy records out of it; writes match
// against it and decrypt nothing but the rows they write. It is valid for
// one persisted generation (activeSet.gen). Writers of this process update
// it after each commit (applyView); a generation this store did not
// produce (the CLI, a rekey's SetKeyring, another broker) makes the next
// read or write transaction reload it — the only O(n) decrypt left.
//
// Entries are immutable once built: a change replaces the pointer, so a
// reader can collect entries under cmu and copy them out after unlocking.
// Only the write leader mutates an activeSet in place (under cmu); a
// reload builds a new one and swaps the pointer.

// entry is one active row.
type entry struct {
	rec   vault.Record // the stored form; never handed out without copy()
	ident string       // rowIdentity(rec) for OAuth rows
	key   [32]byte     // sha256 of the API key, for API-key rows
	// raw and err are set for a row whose sealed columns did not open
	// (a *BlobError): reads retry it and fail with err if it still does not.
	raw rawRow
	err error
}

func newEntry(rec vault.Record) *entry {
	e := &entry{rec: rec}
	switch rec.Credential.Type {
	case vault.TypeOAuth:
		e.ident = rowIdentity(rec)
	case vault.TypeAPIKey:
		e.key = sha256.Sum256([]byte(vault.APIKeyMatchKey(rec.Provider, rec.Credential.Key)))
	}
	return e
}

type identKey struct{ provider, ident string }

type apiKeyKey struct {
	provider string
	key      [32]byte
}

// activeSet indexes the active rows by id, provider, OAuth identity and API
// key hash. The entry and id lists are sorted by id ascending. all and
// byProv hold the entries themselves, so listing the vault or a provider is
// one copy of a slice, with no lookup or sort per row.
type activeSet struct {
	gen    int64
	byID   map[int64]*entry
	all    []*entry
	byProv map[string][]*entry
	byIdnt map[identKey][]int64
	byKey  map[apiKeyKey][]int64
	keys   map[string][]int64 // API-key rows per provider (an OAuth upsert disables them)
}

func newActiveSet(gen int64) *activeSet {
	return &activeSet{gen: gen, byID: map[int64]*entry{}, byProv: map[string][]*entry{},
		byIdnt: map[identKey][]int64{}, byKey: map[apiKeyKey][]int64{}, keys: map[string][]int64{}}
}

// entries returns the entries of ids, in the same order.
func (a *activeSet) entries(ids []int64) []*entry {
	out := make([]*entry, len(ids))
	for i, id := range ids {
		out[i] = a.byID[id]
	}
	return out
}

func cmpEntryID(e *entry, id int64) int { return cmp.Compare(e.rec.ID, id) }

// setEntry puts e, whose id is id, into es sorted by id: it replaces the
// entry of that id or is inserted in order.
func setEntry(es []*entry, id int64, e *entry) []*entry {
	if n := len(es); n == 0 || es[n-1].rec.ID < id {
		return append(es, e) // ids are assigned ascending: the usual case
	}
	i, found := slices.BinarySearchFunc(es, id, cmpEntryID)
	if found {
		es[i] = e
		return es
	}
	return slices.Insert(es, i, e)
}

// dropEntry removes the entry of id from es sorted by id.
func dropEntry(es []*entry, id int64) []*entry {
	if i, found := slices.BinarySearchFunc(es, id, cmpEntryID); found {
		return slices.Delete(es, i, i+1)
	}
	return es
}

func insertSorted[K comparable](m map[K][]int64, k K, id int64) {
	ids := m[k]
	if n := len(ids); n == 0 || ids[n-1] < id {
		m[k] = append(ids, id) // ids are assigned ascending: the usual case
		return
	}
	i, found := slices.BinarySearch(ids, id)
	if !found {
		m[k] = slices.Insert(ids, i, id)
	}
}

func removeSorted[K comparable](m map[K][]int64, k K, id int64) {
	ids := m[k]
	if i, found := slices.BinarySearch(ids, id); found {
		if ids = slices.Delete(ids, i, i+1); len(ids) == 0 {
			delete(m, k)
		} else {
			m[k] = ids
		}
	}
}

// put adds or replaces entry e (nil removes id). An entry replaced by one
// of the same provider keeps its place in all and byProv.
func (a *activeSet) put(id int64, e *entry) {
	if old := a.byID[id]; old != nil {
		if e == nil || e.rec.Provider != old.rec.Provider {
			a.all = dropEntry(a.all, id)
			if es := dropEntry(a.byProv[old.rec.Provider], id); len(es) == 0 {
				delete(a.byProv, old.rec.Provider)
			} else {
				a.byProv[old.rec.Provider] = es
			}
		}
		if old.err == nil {
			if old.rec.Credential.Type == vault.TypeOAuth && old.ident != "" {
				removeSorted(a.byIdnt, identKey{old.rec.Provider, old.ident}, id)
			} else if old.rec.Credential.Type == vault.TypeAPIKey {
				removeSorted(a.byKey, apiKeyKey{old.rec.Provider, old.key}, id)
				removeSorted(a.keys, old.rec.Provider, id)
			}
		}
		delete(a.byID, id)
	}
	if e == nil {
		return
	}
	a.byID[id] = e
	a.all = setEntry(a.all, id, e)
	a.byProv[e.rec.Provider] = setEntry(a.byProv[e.rec.Provider], id, e)
	if e.err == nil {
		if e.rec.Credential.Type == vault.TypeOAuth && e.ident != "" {
			insertSorted(a.byIdnt, identKey{e.rec.Provider, e.ident}, id)
		} else if e.rec.Credential.Type == vault.TypeAPIKey {
			insertSorted(a.byKey, apiKeyKey{e.rec.Provider, e.key}, id)
			insertSorted(a.keys, e.rec.Provider, id)
		}
	}
}

// loadActive reads and decodes every active row and the generation in one
// statement (one implicit read transaction, so one snapshot). Unparsable
// rows are skipped with a warning, as every read skips them; rows that do
// not open are kept as error entries.
func (s *Store) loadActive(ctx context.Context, q querier) (*activeSet, error) {
	gen, err := getMeta[int64](ctx, q, metaGeneration)
	if err != nil {
		return nil, fmt.Errorf("load active credentials: read generation: %w", err)
	}
	rows, err := q.QueryContext(ctx, "SELECT "+credCols+" FROM auth_credentials WHERE disabled_cause IS NULL ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("load active credentials: %w", err)
	}
	defer rows.Close()
	a := newActiveSet(gen)
	kr := s.keyring()
	for rows.Next() {
		r, err := scanRow(rows)
		if err != nil {
			return nil, fmt.Errorf("load active credentials: %w", err)
		}
		rec, err := decode(kr, r)
		if err != nil && s.reloadForRead(ctx, err, r.blobs[:]...) {
			kr = s.keyring()
			rec, err = decode(kr, r)
		}
		var be *BlobError
		switch {
		case errors.Is(err, errUnparsable):
			s.log.Warn("vault: skipping credential row that does not parse", slog.Int64("id", r.id), slog.String("provider", r.provider), slog.Any("err", err))
		case errors.As(err, &be):
			a.put(r.id, &entry{rec: vault.Record{ID: r.id, Provider: r.provider}, raw: r, err: err})
		case err != nil:
			return nil, err
		default:
			a.put(r.id, newEntry(rec))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load active credentials: %w", err)
	}
	return a, nil
}

// loadSnapshot is loadActive outside a write transaction: on one
// connection in a deferred read transaction, so the generation and the rows
// come from one WAL snapshot.
func (s *Store) loadSnapshot(ctx context.Context) (*activeSet, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("load active credentials: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN DEFERRED"); err != nil {
		return nil, fmt.Errorf("load active credentials: %w", err)
	}
	// Background: the read transaction must end even if ctx is done.
	defer conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	return s.loadActive(ctx, conn)
}

// readActive runs f on the active set as of the vault's current
// generation, under cmu's read lock. f must not keep the set. A set newer
// than the generation just read is used as is: it is this store's own
// commit, landed after the read. (The generation only grows; a vault file
// replaced by an older copy under a running store is seen at its next
// write, which reloads on any mismatch.)
func (s *Store) readActive(ctx context.Context, f func(a *activeSet)) error {
	for {
		g, err := s.Generation(ctx)
		if err != nil {
			return err
		}
		s.cmu.RLock()
		a, pendGen, pendDone := s.active, s.pendGen, s.pendDone
		if a != nil && a.gen >= g {
			f(a)
			s.cmu.RUnlock()
			return nil
		}
		s.cmu.RUnlock()
		if a != nil && pendDone != nil && g <= pendGen {
			// This store's own commit, not applied yet: wait for it
			// rather than reload.
			<-pendDone
			continue
		}
		if err := s.reloadActive(ctx, g); err != nil {
			return err
		}
	}
}

// reloadActive replaces the active set with a fresh load when it is older
// than gen (one reload at a time; the others wait and reuse it).
func (s *Store) reloadActive(ctx context.Context, gen int64) error {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	// a.gen moves in place under cmu (applyView), so it is read under it.
	s.cmu.RLock()
	fresh := s.active != nil && s.active.gen >= gen
	s.cmu.RUnlock()
	if fresh {
		return nil
	}
	n, err := s.loadSnapshot(ctx)
	if err != nil {
		return err
	}
	s.cmu.Lock()
	if s.active == nil || s.active.gen < n.gen {
		s.active = n
	}
	s.cmu.Unlock()
	return nil
}

// resolve returns a copy of e's record, retrying the decode of an error
// entry (the keyring may have been reloaded since).
func (s *Store) resolve(ctx context.Context, e *entry) (vault.Record, error) {
	if e.err == nil {
		return copyRecord(e.rec), nil
	}
	rec, err := decode(s.keyring(), e.raw)
	if err != nil && s.reloadForRead(ctx, err, e.raw.blobs[:]...) {
		rec, err = decode(s.keyring(), e.raw)
	}
	return rec, err
}

func (s *Store) resolveAll(ctx context.Context, es []*entry) ([]vault.Record, error) {
	if len(es) == 0 {
		return nil, nil
	}
	out := make([]vault.Record, 0, len(es))
	for _, e := range es {
		if e.err == nil {
			i := len(out)
			out = out[:i+1]
			copyInto(&out[i], e)
			continue
		}
		rec, err := s.resolve(ctx, e)
		if errors.Is(err, errUnparsable) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// copyRecord returns r with its own Extra map and values: records handed
// out never alias the active set.
func copyRecord(r vault.Record) vault.Record {
	r.Credential.Extra = cloneExtra(r.Credential.Extra)
	return r
}

// copyInto sets *dst to a copy of e's record (see copyRecord). Copying in
// place moves each record once, which counts when a whole list is copied.
func copyInto(dst *vault.Record, e *entry) {
	*dst = e.rec
	dst.Credential.Extra = cloneExtra(e.rec.Credential.Extra)
}

func cloneExtra(x map[string]json.RawMessage) map[string]json.RawMessage {
	if x == nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(x))
	for k, v := range x {
		out[k] = slices.Clone(v)
	}
	return out
}

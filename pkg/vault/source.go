package vault

import (
	"context"
	"time"
)

// Source is where a credential consumer reads credentials: the redacted view
// a client of the broker sees. The gateway and the agent pick credentials
// from a Source; the broker host has one over its own vault (LocalSource) and
// every other process has one over the broker's HTTP API (pkg/vault/remote).
//
// Everything a Source returns is redacted (Credential.Redacted): OAuth
// refresh tokens are RemoteRefreshSentinel and Extra is empty. A Source
// never hands out a refresh token, whichever side of the wire it is on.
//
// One contract suite (pkg/vault/vaulttest.RunSourceContract) runs against
// every implementation.
type Source interface {
	// Snapshot returns every active credential at one generation.
	Snapshot(ctx context.Context) (Snapshot, error)

	// Get returns the active credential id. ENOTFOUND (NotFoundID) if there
	// is no such active credential.
	Get(ctx context.Context, id int64) (Entry, error)

	// List returns the active credentials of provider ("" = every
	// provider), ordered by id.
	List(ctx context.Context, provider string) ([]Entry, error)

	// Refresh forces an OAuth refresh of credential id and returns the
	// fresh entry (its new access token and expiry). ENOTFOUND for an
	// unknown or inactive id. Any other failure is an error whose message
	// says why: for a credential that is not OAuth exactly "Credential <id>
	// is not OAuth (provider=<p>, type=api_key): API-key credentials have
	// nothing to refresh" (code EINVALID, which the broker answers 400), and
	// the provider's error text when the provider refused (EUPSTREAM in
	// process; the broker answers it 500, so a remote source sees
	// EINTERNAL).
	Refresh(ctx context.Context, id int64) (Entry, error)

	// Usage returns one usage report per account the source can probe;
	// EUPSTREAM or EUNAVAILABLE when reports cannot be had.
	Usage(ctx context.Context) ([]UsageReport, error)
}

// LocalSource is the Source of the broker host, over its own vault: reads
// come from Store, refreshes and usage from the broker's refresher and usage
// service (given as functions, so this domain package links neither).
type LocalSource struct {
	// Store is the vault; required.
	Store Store
	// RefreshNow refreshes credential id regardless of its expiry and
	// returns the persisted record (refresh.Refresher.RefreshNow). nil: every
	// Refresh fails EUNAVAILABLE.
	RefreshNow func(ctx context.Context, id int64) (Record, error)
	// Reports returns usage reports (usage.Service.Reports). nil: none.
	Reports func(ctx context.Context) ([]UsageReport, error)
	// Schedule reports the refresher schedule for rotatesInMs. nil: the
	// refresher is disabled.
	Schedule func() Schedule
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Blocks supplies the fleet blocks of Snapshot entries. nil:
	// Store, if it implements BlockStore; else entries carry none.
	Blocks BlockStore
}

var _ Source = (*LocalSource)(nil)

func (l *LocalSource) now() int64 {
	if l.Now != nil {
		return l.Now().UnixMilli()
	}
	return time.Now().UnixMilli()
}

func (l *LocalSource) schedule() Schedule {
	if l.Schedule == nil {
		return Schedule{}
	}
	return l.Schedule()
}

// Snapshot reads the generation and the active records and redacts them.
func (l *LocalSource) Snapshot(ctx context.Context) (Snapshot, error) {
	gen, err := l.Store.Generation(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	recs, err := l.Store.List(ctx, "")
	if err != nil {
		return Snapshot{}, err
	}
	snap := BuildSnapshot(gen, recs, l.schedule(), l.now())
	if bs := l.blockStore(); bs != nil {
		blocks, err := bs.Blocks(ctx, snap.ServerNowMs)
		if err != nil {
			return Snapshot{}, err
		}
		snap.WithBlocks(blocks)
	}
	return snap, nil
}

func (l *LocalSource) blockStore() BlockStore {
	if l.Blocks != nil {
		return l.Blocks
	}
	bs, _ := l.Store.(BlockStore)
	return bs
}

// Get returns the active record id, redacted.
func (l *LocalSource) Get(ctx context.Context, id int64) (Entry, error) {
	r, err := l.Store.Get(ctx, id)
	if err != nil {
		return Entry{}, err
	}
	if !r.Active() {
		return Entry{}, NotFoundID(id)
	}
	return l.entry(r), nil
}

// List returns the active records of provider, redacted.
func (l *LocalSource) List(ctx context.Context, provider string) ([]Entry, error) {
	recs, err := l.Store.List(ctx, provider)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, len(recs))
	for i, r := range recs {
		out[i] = l.entry(r)
	}
	return out, nil
}

// Refresh refreshes id through RefreshNow and returns the redacted result.
func (l *LocalSource) Refresh(ctx context.Context, id int64) (Entry, error) {
	if l.RefreshNow == nil {
		return Entry{}, Errorf(EUNAVAILABLE, "OAuth refresher is disabled")
	}
	r, err := l.RefreshNow(ctx, id)
	if err != nil {
		return Entry{}, err
	}
	return l.entry(r), nil
}

// Usage returns the usage reports, or none when Reports is nil.
func (l *LocalSource) Usage(ctx context.Context) ([]UsageReport, error) {
	if l.Reports == nil {
		return []UsageReport{}, nil
	}
	return l.Reports(ctx)
}

func (l *LocalSource) entry(r Record) Entry {
	e := NewEntry(r)
	now := l.now()
	if ms, ok := l.schedule().RotatesInMs(r.Credential, now); ok {
		e.RotatesInMs = &ms
	}
	return e
}

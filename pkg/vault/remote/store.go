// Package remote is the broker client any process embeds to read credentials
// held by an auth broker on another host: the gateway, and the agent in
// broker mode (the reference's RemoteAuthCredentialStore).
//
// A Store keeps the broker's redacted snapshot in memory. Boot gives it its
// first snapshot as a client starts: from the encrypted
// snapshot cache (Cache, shared byte for byte with the reference's
// clients) when that is fresh, else from the broker (LiveFirst turns the
// order round: the cache serves only while the broker cannot be reached);
// every full snapshot the broker sends later is written back to the cache
// as received, and Run renews it every half TTL. Run
// fetches the initial snapshot (GET /v1/snapshot) unless Boot did, then follows the SSE stream
// (GET /v1/snapshot/stream), falling back to long-poll for the life of the
// store when the broker has no stream (404), and reconnecting after any
// error with a jittered backoff from 500 ms doubling to 30 s (reset once a
// stream delivered its snapshot, or after a successful long-poll). The
// first snapshot of every connection is applied whatever its generation, so
// a restarted broker (whose generation may be lower) is followed; later
// frames with a lower generation are ignored.
//
// Store implements vault.Source. Refresh goes through the broker (POST
// /v1/credential/{id}/refresh, single-flighted per id) — the store never
// sees a refresh token; Prepare refreshes a credential whose access token is
// within a minute of expiry before it is handed out. Usage reports come from
// the broker's GET /v1/usage with a 15 s single-flight cache. Local
// mutations are refused with the reference's read-only errors.
//
// Why the stream is read with brokerclient.Client.Stream and not
// github.com/r3labs/sse/v2: see the package's r3labs test
// (TestR3labsClientGaps) and docs/architecture.md. In short, its client
// caps an event at 64 KiB by default (a broker snapshot is larger with a few
// hundred credentials), returns nil without reconnecting when a stream ends
// cleanly, and bypasses the exact stream errors that
// Client.Stream already reports.
package remote

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/ompgo/omp/pkg/vault"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
)

// Defaults of the Options fields.
const (
	DefaultUsageTTL      = 15 * time.Second
	DefaultRefreshWithin = 60 * time.Second
	DefaultPollWait      = 30 * time.Second
	minBackoff           = 500 * time.Millisecond
	maxBackoff           = 30 * time.Second
)

// Read-only errors (the reference's exact texts).
const (
	ReadOnlyUpsert = "RemoteAuthCredentialStore is read-only on the client. Use `omp auth-broker login <provider>` to mutate credentials."
	ReadOnlyDelete = "RemoteAuthCredentialStore is read-only on the client. Use `omp auth-broker logout <provider>` to mutate credentials."
)

// Sync modes reported by Status.
const (
	ModeConnecting = "connecting" // no snapshot applied yet
	ModeCache      = "cache"      // serving the cached snapshot; the broker not reached yet
	ModeStream     = "stream"     // following the SSE stream
	ModePoll       = "poll"       // long-polling (stream unsupported or disabled)
	ModeBackoff    = "backoff"    // waiting to reconnect after an error
)

// Options configures New. Client is required; every other zero value is a
// documented default.
type Options struct {
	// Client talks to the broker. Its http.Client must have no overall
	// timeout (the stream is long-lived).
	Client *brokerclient.Client
	// Logger receives sync state changes (never a token). Default: discard.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// NoStream long-polls instead of following the stream.
	NoStream bool
	// UsageTTL is how long usage reports are reused; default DefaultUsageTTL.
	UsageTTL time.Duration
	// RefreshWithin is how close to expiry an access token is refreshed
	// by Prepare; default DefaultRefreshWithin.
	RefreshWithin time.Duration
	// PollWait is the long-poll wait; default DefaultPollWait.
	PollWait time.Duration
	// OnChange is called after every applied change (snapshot, entry,
	// removal, refresh reply), outside the store's lock. Default: none.
	OnChange func()
	// Cache is the encrypted snapshot cache: Boot starts
	// from it when it is fresh, and every full snapshot the broker sends
	// (GET /v1/snapshot 200s, stream snapshot frames) is written to it as
	// received. nil: no cache. While Run follows the broker, the cache is
	// rewritten from a fresh GET /v1/snapshot every half TTL, so a long
	// stream (which sends a full snapshot only when it connects) does not
	// let it go stale.
	Cache *Cache
	// LiveFirst makes Boot ask the broker first and read Cache only when
	// the broker cannot be reached (no answer, or a 5xx): a long-running
	// client starts from the broker's current state, and still starts
	// during a broker outage.
	LiveFirst bool
	// Pool restricts the OAuth accounts this client uses (LoadPool): every
	// applied snapshot, entry frame and refresh reply is filtered through it;
	// the snapshot cache keeps what the broker sent. nil: every credential.
	Pool Pool
}

// Status is the store's sync state, for /healthz detail and metrics.
type Status struct {
	Mode       string    // one of the Mode constants
	Generation int64     // generation of the applied state (0: none yet)
	LastSync   time.Time // when the broker last answered with data or a keepalive-free frame; zero before the first
	LastError  string    // the last sync error, "" after a success
	Entries    int       // active credentials held
}

// Store is the remote credential store. Create it with New, start Run, and
// wait for Ready before relying on reads. It is safe for concurrent use.
type Store struct {
	opts Options
	log  *slog.Logger

	ready     chan struct{}
	readyOnce sync.Once
	// booted is what Boot applied before Run: bootLive skips Run's
	// initial fetch, bootCache keeps it (it reconciles in the background).
	booted int

	flights singleflight.Group
	posts   sync.WaitGroup // fire-and-forget block posts in flight

	mu         sync.RWMutex // guards everything below
	gen        int64
	serverNow  int64
	receivedAt time.Time
	refresher  vault.RefresherSchedule
	entries    map[int64]vault.Entry
	status     Status
	usage      []vault.UsageReport
	usageAt    time.Time
	poolWarned bool // the unmatched-pool-key warnings were logged (first applied snapshot)
}

var _ vault.Source = (*Store)(nil)

// The store shares the blocks its picker sets with the fleet.
var _ interface {
	PublishBlock(vault.Entry, string, string, int64)
} = (*Store)(nil)

// New returns a store over opts.Client. Nothing is fetched until Run.
func New(opts Options) *Store {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.UsageTTL <= 0 {
		opts.UsageTTL = DefaultUsageTTL
	}
	if opts.RefreshWithin <= 0 {
		opts.RefreshWithin = DefaultRefreshWithin
	}
	if opts.PollWait <= 0 {
		opts.PollWait = DefaultPollWait
	}
	return &Store{opts: opts, log: opts.Logger, ready: make(chan struct{}), entries: map[int64]vault.Entry{},
		status: Status{Mode: ModeConnecting}}
}

// Client is the broker client the store talks through.
func (s *Store) Client() *brokerclient.Client { return s.opts.Client }

// Ready is closed once the first snapshot has been applied.
func (s *Store) Ready() <-chan struct{} { return s.ready }

// Status returns the sync state.
func (s *Store) Status() Status {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := s.status
	st.Generation = s.gen
	st.Entries = len(s.entries)
	return st
}

// Snapshot returns the held credentials at the held generation.
func (s *Store) Snapshot(ctx context.Context) (vault.Snapshot, error) {
	if err := s.wait(ctx); err != nil {
		return vault.Snapshot{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return vault.Snapshot{Generation: s.gen, GeneratedAt: s.serverNow, ServerNowMs: s.serverNow,
		Refresher: s.refresher, Credentials: s.listLocked("")}, nil
}

// Get returns the held credential id; ENOTFOUND if the broker has no such
// active credential.
func (s *Store) Get(ctx context.Context, id int64) (vault.Entry, error) {
	if err := s.wait(ctx); err != nil {
		return vault.Entry{}, err
	}
	s.mu.RLock()
	e, ok := s.entries[id]
	s.mu.RUnlock()
	if !ok {
		return vault.Entry{}, vault.NotFoundID(id)
	}
	return e, nil
}

// List returns the held credentials of provider ("" = all), by id.
func (s *Store) List(ctx context.Context, provider string) ([]vault.Entry, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.listLocked(provider), nil
}

// listLocked orders the ids, not the entries: a sort of Entry values
// swaps whole entries.
func (s *Store) listLocked(provider string) []vault.Entry {
	ids := make([]int64, 0, len(s.entries))
	for id, e := range s.entries {
		if provider == "" || e.Provider == provider {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	out := make([]vault.Entry, len(ids))
	for i, id := range ids {
		out[i] = s.entries[id]
	}
	return out
}

// Refresh asks the broker to refresh credential id (one request per id at a
// time, whoever asks) and holds the reply until a newer frame replaces it.
func (s *Store) Refresh(ctx context.Context, id int64) (vault.Entry, error) {
	ch := s.flights.DoChan("refresh/"+strconv.FormatInt(id, 10), func() (any, error) {
		// The flight outlives any one caller: the broker has rotated the
		// token by the time it answers, so the answer is always kept.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*brokerclient.DefaultTimeout+time.Second)
		defer cancel()
		e, err := s.opts.Client.Refresh(fctx, id)
		if err != nil {
			if vault.ErrorCode(err) == vault.ENOTFOUND {
				s.drop(id)
			}
			return vault.Entry{}, err
		}
		if !e.Credential.IsOAuth() {
			return vault.Entry{}, vault.Errorf(vault.EUPSTREAM, "Broker returned non-OAuth credential for id=%d", id)
		}
		if !s.opts.Pool.Allows(e) {
			s.drop(id)
			return vault.Entry{}, vault.Errorf(vault.EINVALID, "Broker refreshed credential id=%d outside the configured account pool", id)
		}
		s.put(e)
		return e, nil
	})
	select {
	case <-ctx.Done():
		return vault.Entry{}, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return vault.Entry{}, r.Err
		}
		return r.Val.(vault.Entry), nil
	}
}

// Prepare returns credential id ready for a request: an OAuth credential
// whose access token expires within RefreshWithin is refreshed through the
// broker first.
func (s *Store) Prepare(ctx context.Context, id int64) (vault.Entry, error) {
	e, err := s.Get(ctx, id)
	if err != nil {
		return vault.Entry{}, err
	}
	if e.Credential.IsOAuth() && e.Credential.Expires-s.opts.Now().UnixMilli() <= s.opts.RefreshWithin.Milliseconds() {
		return s.Refresh(ctx, id)
	}
	return e, nil
}

// Usage returns the broker's usage reports, reusing an answer younger than
// UsageTTL; concurrent callers share one request.
func (s *Store) Usage(ctx context.Context) ([]vault.UsageReport, error) {
	s.mu.RLock()
	if s.usage != nil && s.opts.Now().Sub(s.usageAt) < s.opts.UsageTTL {
		r := s.usage
		s.mu.RUnlock()
		return r, nil
	}
	s.mu.RUnlock()
	ch := s.flights.DoChan("usage", func() (any, error) {
		u, err := s.opts.Client.Usage(context.WithoutCancel(ctx))
		if err != nil {
			return nil, err
		}
		reports := u.Reports
		if reports == nil {
			reports = []vault.UsageReport{}
		}
		s.mu.Lock()
		s.usage, s.usageAt = reports, s.opts.Now()
		s.mu.Unlock()
		return reports, nil
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.([]vault.UsageReport), nil
	}
}

// Upsert is refused: credentials are written on the broker host.
func (s *Store) Upsert(context.Context, string, vault.Credential) error {
	return vault.Errorf(vault.EINVALID, "%s", ReadOnlyUpsert)
}

// DeleteProvider is refused: credentials are removed on the broker host.
func (s *Store) DeleteProvider(context.Context, string) error {
	return vault.Errorf(vault.EINVALID, "%s", ReadOnlyDelete)
}

// wait blocks until the first snapshot is applied or ctx ends.
func (s *Store) wait(ctx context.Context) error {
	select {
	case <-s.ready:
		return nil
	default:
	}
	select {
	case <-s.ready:
		return nil
	case <-ctx.Done():
		return &vault.Error{Code: vault.EUNAVAILABLE, Message: "auth broker snapshot not loaded yet", Err: ctx.Err()}
	}
}

// put holds e (a refresh reply) in place of the entry with its id. Refresh
// replies carry no blocks: the held entry's are kept.
func (s *Store) put(e vault.Entry) {
	s.mu.Lock()
	if held, ok := s.entries[e.ID]; ok && e.Blocks == nil {
		e.Blocks = held.Blocks
	}
	s.entries[e.ID] = e
	s.mu.Unlock()
	s.changed()
}

func (s *Store) drop(id int64) {
	s.mu.Lock()
	_, had := s.entries[id]
	delete(s.entries, id)
	s.mu.Unlock()
	if had {
		s.changed()
	}
}

func (s *Store) changed() {
	if s.opts.OnChange != nil {
		s.opts.OnChange()
	}
}

// jitter returns a duration in [d/2, d].
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

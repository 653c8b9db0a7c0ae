package vault

import "math"

// MaxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER, the nextSweepInMs of
// a disabled refresher.
const MaxSafeInteger = 9007199254740991

// Schedule is the refresher's state as needed to compute rotation estimates.
type Schedule struct {
	Enabled     bool
	IntervalMs  int64
	SkewMs      int64
	NextSweepAt int64 // epoch ms; while a sweep runs, its start time
}

// RefresherSchedule is the wire form of the schedule.
type RefresherSchedule struct {
	Enabled       bool  `json:"enabled"`
	IntervalMs    int64 `json:"intervalMs"`
	SkewMs        int64 `json:"skewMs"`
	NextSweepInMs int64 `json:"nextSweepInMs"`
}

// Wire returns the schedule as seen at now.
func (s Schedule) Wire(now int64) RefresherSchedule {
	if !s.Enabled {
		return RefresherSchedule{Enabled: false, NextSweepInMs: MaxSafeInteger}
	}
	return RefresherSchedule{Enabled: true, IntervalMs: s.IntervalMs, SkewMs: s.SkewMs, NextSweepInMs: max(0, s.NextSweepAt-now)}
}

// RotatesInMs estimates the milliseconds until the refresher rotates c;
// ok is false for the JSON null.
func (s Schedule) RotatesInMs(c Credential, now int64) (ms int64, ok bool) {
	if !s.Enabled || c.Type != TypeOAuth || s.IntervalMs <= 0 {
		return 0, false
	}
	dueAt := c.Expires - s.SkewMs
	eligibleAt := max(now, dueAt)
	switch {
	case dueAt <= now && s.NextSweepAt <= now:
		return 0, true
	case s.NextSweepAt >= eligibleAt:
		return max(0, s.NextSweepAt-now), true
	default:
		steps := int64(math.Ceil(float64(eligibleAt-s.NextSweepAt) / float64(s.IntervalMs)))
		return max(0, s.NextSweepAt+steps*s.IntervalMs-now), true
	}
}

// Entry is one redacted credential of a snapshot.
type Entry struct {
	ID          int64
	Provider    string
	Credential  Credential // already redacted
	IdentityKey string     // "" → null
	RotatesInMs *int64     // nil → null; absent from refresh/upload replies
	// Blocks are the credential's live fleet blocks in wire order;
	// nil when none. Snapshots carry them; upload and
	// refresh replies never do.
	Blocks []CredentialBlock
}

// NewEntry redacts r into a snapshot entry.
func NewEntry(r Record) Entry {
	return Entry{ID: r.ID, Provider: r.Provider, Credential: r.Credential.Redacted(), IdentityKey: r.IdentityKey}
}

// Snapshot is the redacted view of every active credential at one generation.
type Snapshot struct {
	Generation  int64
	GeneratedAt int64 // epoch ms when the credential set was exported
	ServerNowMs int64 // epoch ms when the snapshot was built
	Refresher   RefresherSchedule
	Credentials []Entry
}

// BuildSnapshot redacts records into a snapshot at now with rotation estimates.
func BuildSnapshot(gen int64, records []Record, sched Schedule, now int64) Snapshot {
	s := Snapshot{Generation: gen, GeneratedAt: now, ServerNowMs: now, Refresher: sched.Wire(now), Credentials: make([]Entry, len(records))}
	for i, r := range records {
		e := NewEntry(r)
		if ms, ok := sched.RotatesInMs(r.Credential, now); ok {
			e.RotatesInMs = &ms
		}
		s.Credentials[i] = e
	}
	return s
}

// WithBlocks sets each entry's Blocks to its live blocks at s.ServerNowMs
// from blocks (keyed by credential id, as BlockStore.Blocks returns them).
func (s *Snapshot) WithBlocks(blocks map[int64][]CredentialBlock) {
	for i := range s.Credentials {
		s.Credentials[i].Blocks = LiveBlocks(blocks[s.Credentials[i].ID], s.ServerNowMs)
	}
}

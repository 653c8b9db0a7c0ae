package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
)

// A pooled connection that ran the observed-usage write and is then
// discarded by database/sql (here: a read whose context is cancelled
// mid-statement — modernc reports an interrupted connection as invalid, so
// the pool closes it) must not keep its SQLite handle, and the vault's file
// descriptors, alive through unfinalised statements (they were cached per
// connection once; now they end with the call).
func TestObservedStatementsOutliveNoDiscardedConn(t *testing.T) {
	fds := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(es)
	}
	ctx := context.Background()
	kr, err := seal.NewKeyring(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "v.db")
	before := fds()
	for round := 0; round < 5; round++ {
		s, err := Open(ctx, path, kr, Options{})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UnixMilli()
		r := vault.ClientUsageReport{InstallID: "i", Entries: []vault.ObservedUsage{{At: now, Provider: "p", Model: "m", Requests: 1}}}
		if err := s.RecordClientUsage(ctx, r, now); err != nil {
			t.Fatal(err)
		}
		// Interrupt a long read on whatever connections the pool hands out.
		for i := 0; i < 2*maxOpenConns; i++ {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
			var n int64
			_ = s.db.QueryRowContext(cctx, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 500000000) SELECT count(*) FROM c`).Scan(&n)
			cancel()
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if after := fds(); after > before+2 {
		t.Fatalf("open descriptors %d → %d after 5 open/record/interrupted-read/close cycles", before, after)
	}
}

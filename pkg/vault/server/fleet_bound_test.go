package server_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
)

// fleetScaleEnv selects the full-size storage-bound run (make
// fleet-bound): 100 000 observed entries from 50 install ids and 10 000
// block posts. The default run is a tenth of that.
const fleetScaleEnv = "OMP_FLEET_BOUND_FULL"

// TestFleetStorageStaysBounded posts observed usage (worst case: a new
// model in every entry, so nothing merges) and block posts through the
// HTTP API round after round, moving the clock past the retention between
// rounds and running the broker's prune sweep (rows older than 400
// days, idle clients, expired blocks). The vault file (database + WAL) and the process memory level
// off: from the third round on neither grows by more than a small margin.
func TestFleetStorageStaysBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("storage volume test")
	}
	// Per round; the full run makes 100 000 entries and 10 000 block posts
	// over 5 rounds. The default run is small enough for -race on a
	// loaded CI host.
	entries, blocks, workers := 20_000, 2_000, 16
	if os.Getenv(fleetScaleEnv) == "" {
		entries, blocks, workers = 1_000, 100, 4
	}
	const rounds, installs, creds, scopes = 5, 50, 20, 60
	e := newEnv(t)
	e.client.Timeout = 2 * time.Minute // a loaded host; the test is about volume, not latency
	ctx := context.Background()
	ids := make([]int64, creds)
	for i := range ids {
		ids[i] = e.upsert("anthropic", oauthCred(fmt.Sprintf("u%d@x.y", i), e.clk.Now().UnixMilli()+3_600_000)).ID
	}
	var sizes []int64
	var heaps, rss []uint64
	for round := range rounds {
		now := e.clk.Now().UnixMilli()
		// Observed usage: one report per install id per round.
		perInstall := entries / installs
		work := make(chan func() error, installs+blocks)
		for i := range installs {
			rep := api.ClientUsageReport{InstallID: fmt.Sprintf("install-%02d", i), Hostname: "host", App: "gateway"}
			for j := range perInstall {
				rep.Entries = append(rep.Entries, api.ObservedUsageEntry{At: now, Provider: "anthropic",
					Model: fmt.Sprintf("model-r%d-%d", round, j), Requests: 1, InputTokens: 100, OutputTokens: 10, CostUsd: 0.01})
			}
			work <- func() error { return e.client.PostObserved(ctx, rep) }
		}
		for k := range blocks {
			b := vault.CredentialBlock{ProviderKey: "anthropic:oauth", Scope: "s" + strconv.Itoa(k%scopes), UntilMs: now + int64(60_000+k)}
			id := ids[k%creds]
			work <- func() error { return e.client.PostBlock(ctx, id, b) }
		}
		close(work)
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for range workers {
			wg.Go(func() {
				for w := range work {
					if err := w(); err != nil {
						select {
						case errs <- err:
						default:
						}
						return
					}
				}
			})
		}
		wg.Wait()
		select {
		case err := <-errs:
			t.Fatalf("round %d: %v", round, err)
		default:
		}
		// A retention period later, the daily sweep runs.
		e.clk.Add(vault.FleetRetention + time.Hour)
		before := e.clk.Now().Add(-vault.FleetRetention).UnixMilli()
		if _, err := e.store.PruneClientUsage(ctx, before); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.PruneBlocks(ctx, e.clk.Now().UnixMilli()); err != nil {
			t.Fatal(err)
		}
		debug.FreeOSMemory() // a GC that also returns freed memory, so VmRSS means something
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		sizes = append(sizes, fileSize(t, e.path)+fileSize(t, e.path+"-wal"))
		heaps = append(heaps, ms.HeapInuse)
		rss = append(rss, vmRSS())
		t.Logf("round %d: vault %d KiB (db+wal), heap in use %d KiB, VmRSS %d KiB", round, sizes[round]>>10, heaps[round]>>10, rss[round]>>10)
	}
	if got := must(e.client.UsageClients(ctx, 0)); len(got.Clients) != 0 {
		t.Fatalf("%d clients left after retention", len(got.Clients))
	}
	// The WAL fills up to its checkpoint size in the first rounds; from
	// the third round on, freed pages are reused.
	last := rounds - 1
	if sizes[last] > sizes[2]+sizes[2]/10 {
		t.Fatalf("vault grew after pruning: %d → %d bytes", sizes[2], sizes[last])
	}
	if heaps[last] > heaps[2]*3/2+8<<20 {
		t.Fatalf("heap grew: %d → %d bytes", heaps[2], heaps[last])
	}
	// Under -race VmRSS is mostly the detector's shadow memory.
	if !raceEnabled && rss[2] > 0 && rss[last] > rss[2]*5/4+8<<20 {
		t.Fatalf("VmRSS grew: %d → %d bytes", rss[2], rss[last])
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func fileSize(t *testing.T, path string) int64 {
	st, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// vmRSS is the process's resident set size in bytes (0 where /proc is missing).
func vmRSS() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestObservedOneInstallStaysBounded: one install id posting 1000 new
// models per report, every report on the same day, fills its daily row cap
// (vault.MaxObservedDayRows) and then stops growing the vault, while
// GET /v1/usage/clients still counts every token it posted (the excess is
// folded into that day's rows, not lost).
func TestObservedOneInstallStaysBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("storage volume test")
	}
	reports := 6
	if os.Getenv(fleetScaleEnv) != "" {
		reports = 30
	}
	e := newEnv(t)
	e.client.Timeout = 2 * time.Minute
	ctx := context.Background()
	now := e.clk.Now().UnixMilli()
	var sizes, rows []int64
	var posted int64
	db, err := sql.Open("sqlite", "file:"+e.path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for r := range reports {
		rep := api.ClientUsageReport{InstallID: "hammer", App: "gateway"}
		for j := range vault.MaxObservedEntries {
			rep.Entries = append(rep.Entries, api.ObservedUsageEntry{At: now, Provider: fmt.Sprintf("p%d", j%3),
				Model: fmt.Sprintf("model-%d-%d", r, j), Requests: 1, InputTokens: 7})
			posted += 7
		}
		if err := e.client.PostObserved(ctx, rep); err != nil {
			t.Fatal(err)
		}
		e.clk.Add(10 * time.Minute) // no merging across reports
		var n int64
		if err := db.QueryRow("SELECT count(*) FROM client_usage WHERE install_id = 'hammer'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, n)
		sizes = append(sizes, fileSize(t, e.path)+fileSize(t, e.path+"-wal"))
	}
	t.Logf("rows after each report: %v; vault (db+wal): %v bytes", rows, sizes)
	// Two reports fill the cap; later ones only update rows.
	for i, n := range rows {
		if want := min(int64(i+1)*vault.MaxObservedEntries, vault.MaxObservedDayRows); n != want {
			t.Fatalf("report %d: %d rows, want %d", i, n, want)
		}
	}
	// (The WAL grows with the updates until its checkpoint size, then is
	// reused: the rows are the bound.)
	got := must(e.client.UsageClients(ctx, 0))
	var tokens int64
	for _, p := range got.Clients[0].Providers {
		tokens += p.InputTokens
	}
	if len(got.Clients) != 1 || tokens != posted {
		t.Fatalf("clients %d, input tokens %d, want 1 client and all %d posted", len(got.Clients), tokens, posted)
	}
}

package sqlite_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

const fleetCrashEnvBase = "OMP_VAULT_FLEET_CRASH_BASE"

// TestFleetCrashChild is the helper process of TestFleetWritesSurviveKill:
// it alternates a block post raising credential 1's deadline to base+n and
// an observed-usage report of one request, printing "ok <n>" after each
// pair returned. It does nothing in a normal run.
func TestFleetCrashChild(t *testing.T) {
	path := os.Getenv(crashEnvPath)
	if path == "" || os.Getenv(fleetCrashEnvBase) == "" {
		t.Skip("helper process")
	}
	base, _ := strconv.ParseInt(os.Getenv(fleetCrashEnvBase), 10, 64)
	kr, err := seal.KeyringFromEnv(os.Getenv(crashEnvKey))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, kr, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bs := must[map[int64][]vault.CredentialBlock](t)(st.Blocks(ctx, 0))
	start := int64(0)
	if len(bs[1]) > 0 {
		start = bs[1][0].UntilMs - base
	}
	for n := start + 1; ; n++ {
		if _, err := st.PutBlock(ctx, 1, vault.CredentialBlock{ProviderKey: "anthropic:oauth", UntilMs: base + n}); err != nil {
			t.Fatal(err)
		}
		now := time.Now().UnixMilli()
		r := vault.ClientUsageReport{InstallID: fmt.Sprintf("inst-%d", n%7), Hostname: "h", Entries: []vault.ObservedUsage{
			{At: now, Provider: "anthropic", Model: fmt.Sprintf("m-%d", n%13), Requests: 1, InputTokens: 10},
		}}
		if err := st.RecordClientUsage(ctx, r, now); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(os.Stdout, "ok %d\n", n)
	}
}

// TestFleetWritesSurviveKill: SIGKILL in the middle of block and
// observed-usage writes leaves a database that passes PRAGMA
// integrity_check, with every acknowledged block deadline and usage report
// on disk.
func TestFleetWritesSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	ctx := context.Background()
	e := newEnv(t)
	key := e.kr.Keys()[0]
	st := e.open(t)
	if _, err := st.Upsert(ctx, "anthropic", oauth("a@x.io", "r0")); err != nil {
		t.Fatal(err)
	}
	st.Close()
	base := time.Now().Add(24 * time.Hour).UnixMilli()

	acked, totalAcks := int64(0), int64(0)
	for round := range 4 {
		ack := killChildMidWrite(t, "TestFleetCrashChild", []string{crashEnvPath + "=" + e.path,
			crashEnvKey + "=" + base64.StdEncoding.EncodeToString(key.Secret[:]), fleetCrashEnvBase + "=" + strconv.FormatInt(base, 10)},
			true, 120*time.Millisecond, acked)
		totalAcks += ack - acked

		db := rawDB(t, e.path)
		var check string
		if err := db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
			t.Fatalf("round %d: integrity_check = %q, %v", round, check, err)
		}
		var requests int64
		if err := db.QueryRow("SELECT coalesce(sum(requests), 0) FROM client_usage").Scan(&requests); err != nil {
			t.Fatal(err)
		}
		db.Close()
		// Each "ok" acknowledged one report; a kill may land after one
		// more committed.
		if requests < totalAcks || requests > totalAcks+int64(round)+1 {
			t.Fatalf("round %d: %d usage reports on disk, %d acknowledged", round, requests, totalAcks)
		}
		st := e.open(t)
		bs := must[map[int64][]vault.CredentialBlock](t)(st.Blocks(ctx, 0))[1]
		if len(bs) != 1 || bs[0].UntilMs < base+ack || bs[0].UntilMs > base+ack+1 {
			t.Fatalf("round %d: block %+v after kill; last acknowledged deadline base+%d", round, bs, ack)
		}
		st.Close()
		acked = bs[0].UntilMs - base
	}
	if totalAcks == 0 {
		t.Fatal("no write was acknowledged: the test exercised nothing")
	}
	t.Logf("%d acknowledged block+usage writes across 4 kills", totalAcks)
}

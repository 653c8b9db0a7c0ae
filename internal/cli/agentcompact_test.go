package cli

import (
	"testing"

	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/agent/compaction"
)

func TestCompactionSettings(t *testing.T) {
	parse := func(doc string) compaction.Settings {
		t.Helper()
		s, err := config.ParseSettings([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		return compactionSettings(s)
	}
	if got := parse(""); got != compaction.Defaults() {
		t.Fatalf("defaults = %+v", got)
	}
	got := parse(`
compaction:
  enabled: false
  strategy: handoff
  reserveTokens: 8000
  keepRecentTokens: "5000"
  autoContinue: false
  thresholdPercent: 70
  thresholdTokens: -1
branchSummary.enabled: true
branchSummary:
  reserveTokens: 4000
`)
	want := compaction.Settings{Enabled: false, Strategy: "handoff", ReserveTokens: 8000, KeepRecentTokens: 5000,
		AutoContinue: false, ThresholdPercent: 70, ThresholdTokens: -1, BranchSummaryEnabled: true, BranchReserveTokens: 4000}
	if got != want {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	// methodOrder wins over strategy; [] is off, any list context-full.
	if s := parse("compaction: {strategy: context-full, methodOrder: []}"); !s.Off() {
		t.Fatalf("[] = %q", s.Strategy)
	}
	if s := parse("compaction: {strategy: 'off', methodOrder: [remote, soft]}"); s.Strategy != "context-full" {
		t.Fatalf("list = %q", s.Strategy)
	}
	// Wrong types and non-positive sizes keep the defaults.
	if s := parse("compaction: {enabled: yes-please, reserveTokens: 0, keepRecentTokens: [1]}"); s != compaction.Defaults() {
		t.Fatalf("bad values = %+v", s)
	}
}

package config

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseSnapshotTTL(t *testing.T) {
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"", time.Hour, true},
		{"   ", time.Hour, true},
		{"0", 0, true},
		{"1500", 1500 * time.Millisecond, true},
		{" 2e3 ", 2 * time.Second, true},
		{"0.5", 500 * time.Microsecond, true},
		{"0x10", 16 * time.Millisecond, true},
		{"-0", 0, true},
		{"1e300", time.Duration(math.MaxInt64), true},
		{"-1", time.Hour, false},
		{"abc", time.Hour, false},
		{"Infinity", time.Hour, false},
		{"inf", time.Hour, false},
		{"NaN", time.Hour, false},
		{"1_000", time.Hour, false},
		{"0x1p4", time.Hour, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := ParseSnapshotTTL(tt.in)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("ParseSnapshotTTL(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestSnapshotTTLWarnsOnInvalid(t *testing.T) {
	log, buf := captureLog()
	if got := SnapshotTTL(NewEnv(map[string]string{EnvSnapshotTTL: "soon"}), log); got != DefaultSnapshotTTL {
		t.Fatalf("got %v", got)
	}
	if !strings.Contains(buf.String(), "Invalid OMP_AUTH_BROKER_SNAPSHOT_TTL_MS; using default") {
		t.Fatalf("log %q", buf)
	}
	buf.Reset()
	if got := SnapshotTTL(NewEnv(map[string]string{EnvSnapshotTTL: "0"}), log); got != 0 || buf.Len() != 0 {
		t.Fatalf("got %v, log %q", got, buf)
	}
}

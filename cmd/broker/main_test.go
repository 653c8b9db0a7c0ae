package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/syncbuf"
)

// TestJSONLogsOnStderr serves with --log-format json and reads the startup
// and shutdown records back from stderr, one JSON object a line.
func TestJSONLogsOnStderr(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncbuf.Buffer
	environ := []string{"HOME=" + t.TempDir()}
	done := make(chan error, 1)
	go func() { done <- run(ctx, flags{bind: "127.0.0.1:0", logFormat: "json"}, environ, &stderr) }()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "auth-broker bearer token loaded") {
		select {
		case err := <-done:
			t.Fatalf("run ended early: %v\nstderr %s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no startup line on stderr: %q", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	var msgs []string
	for _, line := range strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n") {
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("stderr line %q is not JSON: %v", line, err)
		}
		msgs = append(msgs, rec.Msg)
	}
	got := strings.Join(msgs, "\n")
	for _, want := range []string{"auth-broker listening", "auth-broker shutting down"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q record in %q", want, got)
		}
	}
}

func TestBadLogLevelFromTheEnvironment(t *testing.T) {
	environ := []string{"HOME=" + t.TempDir(), "OMP_LOG_LEVEL=loud"}
	err := run(context.Background(), flags{bind: "127.0.0.1:0"}, environ, new(syncbuf.Buffer))
	if err == nil || err.Error() != `invalid OMP_LOG_LEVEL "loud": want debug, info, warn or error` {
		t.Fatalf("run: %v", err)
	}
}

package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestResolveValues(t *testing.T) {
	env := NewEnv(map[string]string{
		"MY_TOKEN": "from-env",
		"$LIT":     "dollar-named",
		"EMPTY":    "",
		"X":        "x-value",
	})
	r := &Resolver{Env: env, Shell: "/bin/sh"}
	tests := []struct {
		name   string
		in     string
		want   string
		wantOK bool
	}{
		{"env var named exactly", "MY_TOKEN", "from-env", true},
		{"literal when no such var", "sk-literal", "sk-literal", true},
		{"empty var falls back to literal", "EMPTY", "EMPTY", true},
		{"variable literally named $LIT wins over $ expansion", "$LIT", "dollar-named", true},
		{"$NAME resolves (Go extension)", "$X", "x-value", true},
		{"${NAME} resolves (Go extension)", "${X}", "x-value", true},
		{"$NAME unset stays literal", "$NOPE", "$NOPE", true},
		{"${ unterminated stays literal", "${X", "${X", true},
		{"$ with invalid name stays literal", "$1X", "$1X", true},
		{"empty value is unresolved", "", "", false},
		{"command output trimmed", "!printf '  out \\n'", "out", true},
		{"command sees the merged env", "!printf %s \"$MY_TOKEN\"", "from-env", true},
		{"non-zero exit unresolved", "!echo partial; exit 3", "", false},
		{"empty output unresolved", "!printf '  \\n'", "", false},
		{"missing command unresolved", "!/nonexistent/cmd", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := r.Resolve(context.Background(), tt.in)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Resolve(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestResolveUsesSHELLFromEnv(t *testing.T) {
	dir := t.TempDir()
	shell := filepath.Join(dir, "fakesh")
	writeFile(t, shell, "#!/bin/sh\necho via-fake-shell\n")
	if err := os.Chmod(shell, 0o700); err != nil {
		t.Fatal(err)
	}
	r := NewResolver(NewEnv(map[string]string{"SHELL": shell}))
	if got, ok := r.Resolve(context.Background(), "!echo real"); got != "via-fake-shell" || !ok {
		t.Fatalf("got %q, %v", got, ok)
	}
}

func TestResolveCommandTimeoutIsUnresolved(t *testing.T) {
	r := &Resolver{Shell: "/bin/sh", Timeout: 200 * time.Millisecond}
	// Without the timeout this would resolve to "late".
	if got, ok := r.Resolve(context.Background(), "!sleep 3; echo late"); ok {
		t.Fatalf("timed-out command resolved to %q", got)
	}
}

func TestResolveCachesSuccessOnly(t *testing.T) {
	dir := t.TempDir()
	counter := filepath.Join(dir, "runs")
	flag := filepath.Join(dir, "ok")
	r := &Resolver{Shell: "/bin/sh"}
	ctx := context.Background()

	cmd := "!echo run >> " + counter + "; test -f " + flag + " && echo secret"
	if _, ok := r.Resolve(ctx, cmd); ok {
		t.Fatal("resolved before the flag exists")
	}
	writeFile(t, flag, "")
	for range 3 {
		if got, ok := r.Resolve(ctx, cmd); got != "secret" || !ok {
			t.Fatalf("got %q, %v", got, ok)
		}
	}
	data, _ := os.ReadFile(counter)
	if n := strings.Count(string(data), "run"); n != 2 {
		t.Fatalf("command ran %d times, want 2 (failure not cached, success cached)", n)
	}
}

func TestResolveDeduplicatesConcurrentRuns(t *testing.T) {
	counter := filepath.Join(t.TempDir(), "runs")
	r := &Resolver{Shell: "/bin/sh"}
	cmd := "!echo run >> " + counter + "; sleep 0.3; echo v"
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if got, ok := r.Resolve(context.Background(), cmd); got != "v" || !ok {
				t.Errorf("got %q, %v", got, ok)
			}
		})
	}
	wg.Wait()
	data, _ := os.ReadFile(counter)
	if n := strings.Count(string(data), "run"); n != 1 {
		t.Fatalf("command ran %d times, want 1", n)
	}
}

func TestResolveCancelledCallerGetsUnresolved(t *testing.T) {
	r := &Resolver{Shell: "/bin/sh"}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := r.Resolve(ctx, "!sleep 1; echo v"); ok {
		t.Fatal("cancelled caller got a value")
	}
}

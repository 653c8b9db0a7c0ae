package logbuf

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// sink is a goroutine-safe buffer that counts its writes.
type sink struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.b.Write(p)
}

func (s *sink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

func TestLinesGoOutTogetherAfterTheDelay(t *testing.T) {
	// Fake time: the lines are held exactly the delay, however slow the machine.
	synctest.Test(t, func(t *testing.T) {
		const delay = 300 * time.Millisecond
		var out sink
		w := &Writer{w: &out, delay: delay}
		log := slog.New(Handler(slog.NewTextHandler(w, nil), w))
		log.Info("first")
		log.Info("second")
		time.Sleep(delay - time.Nanosecond)
		synctest.Wait()
		if out.String() != "" {
			t.Fatalf("written before the delay: %q", out.String())
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if !strings.Contains(out.String(), "msg=second") {
			t.Fatalf("buffered lines not written at the delay: %q", out.String())
		}
		if n := out.count(); n != 1 {
			t.Fatalf("two lines in %d writes, want 1", n)
		}
		if i, j := strings.Index(out.String(), "msg=first"), strings.Index(out.String(), "msg=second"); i < 0 || j < i {
			t.Fatalf("lines out of order: %q", out.String())
		}
		// The timer re-arms for the next line.
		log.Info("third")
		time.Sleep(delay)
		synctest.Wait()
		if !strings.Contains(out.String(), "msg=third") || out.count() != 2 {
			t.Fatalf("a line after the first flush was not written at the delay: %d writes %q", out.count(), out.String())
		}
	})
}

func TestWarningFlushesAtOnce(t *testing.T) {
	var out sink
	w := &Writer{w: &out, delay: time.Hour}
	log := slog.New(Handler(slog.NewTextHandler(w, nil), w)).With("component", "test").WithGroup("g")
	log.Info("request")
	log.Warn("upstream failed")
	got := out.String()
	if !strings.Contains(got, "msg=request") || !strings.Contains(got, "msg=\"upstream failed\"") || strings.Index(got, "msg=request") > strings.Index(got, "upstream failed") {
		t.Fatalf("after a warning: %q, want the info line then the warning", got)
	}
	log.Info("later")
	if strings.Contains(out.String(), "later") {
		t.Fatal("an info line after a warning was not buffered")
	}
}

func TestFullBufferAndCloseFlush(t *testing.T) {
	var out sink
	w := &Writer{w: &out, delay: time.Hour}
	line := strings.Repeat("x", 1000) + "\n"
	for out.count() == 0 {
		if _, err := w.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		if len(out.String()) > 2*maxBuffered {
			t.Fatal("never flushed")
		}
	}
	if n := len(out.String()); n < maxBuffered {
		t.Fatalf("flushed %d bytes, before %d were buffered", n, maxBuffered)
	}
	_, _ = w.Write([]byte("tail\n"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "tail\n") {
		t.Fatal("Close did not write the buffered tail")
	}
	_, _ = w.Write([]byte("after close\n"))
	if !strings.HasSuffix(out.String(), "after close\n") {
		t.Fatal("a write after Close was buffered")
	}
}

func TestConcurrentLinesStayWhole(t *testing.T) {
	var out sink
	w := &Writer{w: &out, delay: time.Millisecond}
	log := slog.New(Handler(slog.NewTextHandler(w, nil), w))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				log.Info("line", "g", g, "i", i)
			}
		})
	}
	wg.Wait()
	w.Close()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 8*200 {
		t.Fatalf("%d lines, want %d", len(lines), 8*200)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		var g, i int
		k := strings.Index(l, "msg=line g=")
		if k < 0 {
			t.Fatalf("torn line %q", l)
		}
		if _, err := fmt.Sscanf(l[k:], "msg=line g=%d i=%d", &g, &i); err != nil {
			t.Fatalf("torn line %q: %v", l, err)
		}
		seen[fmt.Sprint(g, "/", i)] = true
	}
	if len(seen) != 8*200 {
		t.Fatalf("%d distinct lines, want %d", len(seen), 8*200)
	}
}

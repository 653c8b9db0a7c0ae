package client

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/vault/api"
)

// The stream reader (internal/sse with the broker's 64 MiB limit) takes a
// snapshot frame over the 32 MiB default.
func TestStreamReaderLimit(t *testing.T) {
	big := strings.Repeat("x", 40<<20)
	ev, err := newStreamReader(strings.NewReader("event: snapshot\ndata: " + big + "\n\n")).Next()
	if err != nil || len(ev.Data) != len(big) || ev.Name != "snapshot" {
		t.Fatalf("large line: %d %v", len(ev.Data), err)
	}
}

func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{"event: a\ndata: {}\n\n", ": k\r\n\r\n", "data: 1\rdata: 2\r\r", "data\n\n", "event\n", "\r"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := newStreamReader(bytes.NewReader(b))
		for range len(b) + 1 {
			ev, err := r.Next()
			if err != nil {
				return
			}
			if bytes.ContainsAny([]byte(ev.Name), "\r\n") {
				t.Fatalf("event name with a line break: %q", ev.Name)
			}
			if _, err := api.DecodeEvent(ev.Data); err == nil && !json.Valid(ev.Data) {
				t.Fatal("decoded invalid JSON")
			}
		}
		t.Fatal("reader did not terminate")
	})
}

package remote_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/r3labs/sse/v2"
	"gopkg.in/cenkalti/backoff.v1"
)

// TestR3labsClientGaps records why the remote store reads the broker stream
// with client.Client.Stream instead of github.com/r3labs/sse/v2 (the
// design card's SSE library): on v2.10.0 its client
//   - refuses an event larger than 64 KiB unless told a bigger buffer, and a
//     broker's initial snapshot frame passes that with a few hundred
//     credentials (here 300 entries of a realistic size);
//   - returns nil, without reconnecting, when the server ends a stream
//     cleanly, so the store would need its own reconnect loop anyway;
//   - keeps retrying a failed subscription with its default backoff for
//     15 minutes after the caller's context is cancelled;
//   - and reports neither the exact stream errors the broker sends nor the
//     connection boundary the "first snapshot of a connection is applied
//     whatever its generation" rule needs.
//
// If a later version fixes the first two, this test fails: reconsider then.
func TestR3labsClientGaps(t *testing.T) {
	var entries []string
	for i := range 300 {
		entries = append(entries, fmt.Sprintf(`{"id":%d,"provider":"anthropic","identityKey":"email:user%d@example.com","rotatesInMs":3000000,`+
			`"credential":{"type":"oauth","access":"sk-ant-oat01-%s","refresh":"__remote__","expires":1764000000000,"email":"user%d@example.com"}}`,
			i+1, i, strings.Repeat("a", 108), i))
	}
	frame := `{"kind":"snapshot","generation":7,"generatedAt":1,"serverNowMs":1,"refresher":{"enabled":true,"intervalMs":60000,"skewMs":300000,"nextSweepInMs":1000},"credentials":[` +
		strings.Join(entries, ",") + `]}`
	if len(frame) <= 64<<10 {
		t.Fatalf("frame is %d bytes, want > 64 KiB", len(frame))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: snapshot\ndata: %s\n\n", frame)
	}))
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// StopBackOff: with its default strategy the client keeps retrying a
	// failed subscription for 15 minutes even after ctx is cancelled
	// (backoff.RetryNotify does not watch ctx) — a third gap.
	c := sse.NewClient(srv.URL)
	c.ReconnectStrategy = &backoff.StopBackOff{}
	got := 0
	err := c.SubscribeRawWithContext(ctx, func(*sse.Event) { got++ })
	if err == nil || !strings.Contains(err.Error(), "token too long") {
		t.Errorf("default client on a %d-byte snapshot: err = %v, events %d; want a 'token too long' error", len(frame), err, got)
	}

	c = sse.NewClient(srv.URL, sse.ClientMaxBufferSize(1<<20))
	c.ReconnectStrategy = &backoff.StopBackOff{}
	got = 0
	err = c.SubscribeRawWithContext(ctx, func(*sse.Event) { got++ })
	if err != nil || got != 1 || ctx.Err() != nil {
		t.Errorf("after a clean end of stream: err = %v, events %d; want nil after exactly one event (no reconnect)", err, got)
	}
}

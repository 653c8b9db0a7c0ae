package server

import (
	"net/http"
	"time"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/internal/sse"
)

// stream serves GET /v1/snapshot/stream: one `snapshot`
// frame, then `entry`/`removed` frames per publication, and a keepalive
// comment every KeepAlive.
//
// A subscriber is this handler goroutine holding a reference to the last
// shared snapshot it delivered. It sleeps on that snapshot's done channel;
// on wake-up it writes the hub's pre-encoded delta when it is exactly one
// publication behind, or its own diff against the latest snapshot when it
// fell further behind (coalescing). Nothing is queued per subscriber: a
// client that cannot take a frame within WriteTimeout is dropped and
// reconnects to a fresh snapshot.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	sh, err := s.hub.sync(ctx)
	if err != nil {
		return err
	}
	peer := httpx.Peer(r)
	sp := shapeOf(r)
	opened := s.Now()
	sse.SetHeaders(w.Header())
	w.Header()["Vary"] = varyCapabilities
	announceCapabilities(w, r)
	w.WriteHeader(http.StatusOK)
	sw := sse.NewHTTPWriter(w, s.WriteTimeout)

	buf := getBuf()
	b := append(*buf, "event: snapshot\ndata: "...)
	b = appendSnapshot(b, sh, s.schedule(), opened.UnixMilli(), true, sp)
	*buf = append(b, "\n\n"...)
	err = sw.WriteFrames(*buf)
	putBuf(buf)
	if err != nil {
		return nil // the client is gone before the first frame
	}
	if s.Metrics != nil {
		s.Metrics.StreamOpened()
		defer s.Metrics.StreamClosed()
	}
	s.log.Info("auth-broker stream opened", peer, "generation", sh.gen)
	defer func() {
		s.log.Info("auth-broker stream closed", peer, "durationMs", s.Now().Sub(opened).Milliseconds())
	}()

	keepalive := time.NewTicker(s.KeepAlive)
	defer keepalive.Stop()
	last := sh
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-keepalive.C:
			if sw.Comment("keepalive") != nil {
				return nil
			}
		case <-last.done:
			latest := s.hub.current()
			frames := framesSince(last, latest, sp)
			last = latest
			if len(frames) > 0 && sw.WriteFrames(frames) != nil {
				return nil
			}
		}
	}
}

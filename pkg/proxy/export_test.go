package proxy

import (
	"log/slog"
	"time"

	"github.com/ompgo/omp/pkg/llm"
)

// SetCatalog replaces the model catalog (tests add an OpenAI Chat
// Completions model, which the bundled catalog does not have).
func SetCatalog(s *Server, c *llm.Catalog) { s.models = &models{catalog: c} }

// SetPingInterval shortens the Anthropic ping interval.
func SetPingInterval(s *Server, d time.Duration) { s.pingInterval = d }

// SetObserve sets Options.Observe.
func SetObserve(s *Server, f func(Observed)) { s.observer = f }

// SetLogger replaces the server's logger.
func SetLogger(s *Server, l *slog.Logger) { s.log = l }

// InFlightBytes is the request body bytes the server's requests hold now.
func InFlightBytes(s *Server) int64 { return s.inflight.bytes() }

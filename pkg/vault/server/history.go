package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/pkg/vault"
)

// History bounds of GET /v1/usage/history.
const (
	// MaxHistoryDays is the largest ?days= the broker accepts; it equals the
	// retention of the usage_history table.
	MaxHistoryDays = 400
	// MaxHistoryEntries caps one answer; the oldest entries are dropped first
	// and "truncated":true is added.
	MaxHistoryEntries = 10_000
)

const dayMs = 86_400_000

// HistorySource reads recorded usage history for GET /v1/usage/history
// (sqlite.Store implements it).
type HistorySource interface {
	// UsageHistory returns the entries recorded at or after sinceMs, for
	// provider ("" = all), ascending by time.
	UsageHistory(ctx context.Context, sinceMs int64, provider string) ([]vault.UsageHistoryEntry, error)
}

// historyBody is the GET /v1/usage/history answer.
type historyBody struct {
	GeneratedAt int64                     `json:"generatedAt"`
	Entries     []vault.UsageHistoryEntry `json:"entries"`
	Truncated   bool                      `json:"truncated,omitempty"`
}

// usageHistory serves GET /v1/usage/history?sinceMs=&provider=&days=:
// sinceMs is read like JavaScript parseInt, days=N (1..400)
// is shorthand for now − N days, sinceMs wins; an empty provider is absent.
func (s *Server) usageHistory(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	now := s.Now().UnixMilli()
	var since int64
	if v, ok := q["days"]; ok {
		d, err := strconv.Atoi(strings.TrimSpace(v[0]))
		if err != nil || d < 1 || d > MaxHistoryDays {
			return vault.Errorf(vault.EINVALID, "days must be an integer from 1 to %d (got %q)", MaxHistoryDays, v[0])
		}
		since = now - int64(d)*dayMs
	}
	if n, ok := parseIntPrefix(q.Get("sinceMs")); ok {
		since = n
	}
	provider := q.Get("provider")
	entries := []vault.UsageHistoryEntry{}
	if s.History != nil {
		got, err := s.History.UsageHistory(r.Context(), since, provider)
		if err != nil {
			return err
		}
		if got != nil {
			entries = got
		}
	}
	body := historyBody{GeneratedAt: now, Entries: entries}
	if len(entries) > MaxHistoryEntries {
		body.Entries, body.Truncated = entries[len(entries)-MaxHistoryEntries:], true
	}
	s.log.Info("auth-broker usage history served", httpx.Peer(r), "entries", len(body.Entries), "sinceMs", since, "provider", provider)
	return httpx.WriteJSON(w, http.StatusOK, body)
}

// parseIntPrefix reads v like JavaScript parseInt(v, 10): optional leading
// whitespace and sign, then the longest run of digits ("123abc" → 123,
// "1.9e12" → 1); no digits → false. Values beyond int64 saturate.
func parseIntPrefix(v string) (int64, bool) {
	v = strings.TrimLeft(v, " \t\n\r\v\f")
	neg := false
	if v != "" && (v[0] == '-' || v[0] == '+') {
		neg = v[0] == '-'
		v = v[1:]
	}
	end := 0
	for end < len(v) && v[end] >= '0' && v[end] <= '9' {
		end++
	}
	if end == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(v[:end], 10, 64)
	if err != nil {
		n = vault.MaxSafeInteger
	}
	if neg {
		n = -n
	}
	return n, true
}

package httpx

import (
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Bounds of the request fields written to logs: a client chooses both, and
// a line must not grow with what it sends.
const (
	MaxLoggedMethod = 16
	MaxLoggedPath   = 128
)

// MethodLabel is the method as a metric label: one of the standard methods
// a service routes, else "OTHER", so the label set stays fixed whatever
// clients send.
func MethodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return method
	}
	return "OTHER"
}

// Clip returns s for a log line: bytes outside printable ASCII become %XX,
// and the result is cut to at most n bytes of s, marked with "…" and the
// original length when cut.
func Clip(s string, n int) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e {
			clean = false
			break
		}
	}
	if clean && len(s) <= n {
		return s
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, min(len(s), n)+24)
	i := 0
	for ; i < len(s) && len(b) < n; i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e {
			b = append(b, '%', hex[c>>4], hex[c&15])
			continue
		}
		b = append(b, c)
	}
	if i < len(s) {
		b = append(b, "…("...)
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, " bytes)"...)
	}
	return string(b)
}

// RequestAttrs are the log fields naming r: its method and escaped path,
// clipped (MaxLoggedMethod, MaxLoggedPath), and Peer.
func RequestAttrs(r *http.Request) []any {
	return []any{
		slog.String("method", Clip(r.Method, MaxLoggedMethod)),
		slog.String("path", Clip(r.URL.EscapedPath(), MaxLoggedPath)),
		Peer(r),
	}
}

// DefaultLogWindow is how often a LogLimiter lets a line through.
const DefaultLogWindow = 10 * time.Second

// LogLimiter lets one log line through per window and counts the ones it
// holds back, so a flood of failing requests costs a bounded amount of log.
// The zero value uses DefaultLogWindow.
type LogLimiter struct {
	Window time.Duration    // default DefaultLogWindow
	Now    func() time.Time // default time.Now

	mu         sync.Mutex
	next       time.Time
	suppressed int64
}

// Allow reports whether a line may be written now and, when it may, how
// many lines were held back since the last one written.
func (l *LogLimiter) Allow() (ok bool, suppressed int64) {
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	window := l.Window
	if window <= 0 {
		window = DefaultLogWindow
	}
	t := now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.Before(l.next) {
		l.suppressed++
		return false, 0
	}
	l.next = t.Add(window)
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

// LogRequest writes msg with RequestAttrs(r) at Info level, at most once
// per window; the line written carries "suppressed", the number of lines
// held back before it.
func (l *LogLimiter) LogRequest(log *slog.Logger, msg string, r *http.Request) {
	ok, n := l.Allow()
	if !ok {
		return
	}
	log.Info(msg, append(RequestAttrs(r), slog.Int64("suppressed", n))...)
}

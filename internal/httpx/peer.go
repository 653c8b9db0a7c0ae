package httpx

import (
	"net/http"
	"strings"
)

// Peer names the client for logs only (never for authorization): the first
// comma-separated entry of X-Forwarded-For (trimmed), else X-Real-IP, else
// "unknown" (broker.md §2.1).
func Peer(r *http.Request) string {
	if xff := r.Header.Get("X-Forwarded-For"); xff != "" {
		first, _, _ := strings.Cut(xff, ",")
		if first = strings.TrimSpace(first); first != "" {
			return first
		}
	}
	if ip := r.Header.Get("X-Real-Ip"); ip != "" {
		return ip
	}
	return "unknown"
}

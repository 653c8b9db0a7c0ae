package httpx

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// EnvTrustedProxies is the environment variable the broker and gateway
// hosts read their trusted proxies from (ParseTrustedProxies syntax).
const EnvTrustedProxies = "OMP_TRUSTED_PROXIES"

// EnvBodyReadTimeout is the environment variable the broker and gateway
// hosts read their body stall timeout from (a Go duration, e.g. "30s").
const EnvBodyReadTimeout = "OMP_HTTP_BODY_READ_TIMEOUT"

// TrustedProxies are the networks whose X-Forwarded-For and X-Real-IP
// headers are believed. A request from any other address has those headers
// ignored: they are whatever the client chose to send.
type TrustedProxies []netip.Prefix

// ParseTrustedProxies parses a list of CIDR prefixes or bare IP addresses
// separated by commas or spaces ("10.0.0.0/8, 192.168.1.7"). An empty list
// trusts no proxy.
func ParseTrustedProxies(s string) (TrustedProxies, error) {
	var out TrustedProxies
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		if strings.Contains(f, "/") {
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q is not a CIDR prefix: %w", f, err)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q is not an IP address or CIDR prefix: %w", f, err)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// Contains reports whether addr is in one of the trusted networks.
func (t TrustedProxies) Contains(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range t {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

type forwardedKey struct{}

// withForwarded returns r carrying the client address its proxy reported,
// when r comes from a trusted proxy that reported one; else r itself.
func (t TrustedProxies) withForwarded(r *http.Request) *http.Request {
	addr, err := netip.ParseAddr(RemoteIP(r))
	if err != nil || !t.Contains(addr) {
		return r
	}
	fwd := forwardedHeader(r)
	if fwd == "" {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), forwardedKey{}, fwd))
}

// forwardedHeader is the first comma-separated entry of X-Forwarded-For
// (trimmed), else X-Real-IP, clipped for logging; "" when neither is set.
func forwardedHeader(r *http.Request) string {
	if xff := r.Header.Get("X-Forwarded-For"); xff != "" {
		first, _, _ := strings.Cut(xff, ",")
		if first = strings.TrimSpace(first); first != "" {
			return Clip(first, maxForwardedLen)
		}
	}
	if ip := strings.TrimSpace(r.Header.Get("X-Real-Ip")); ip != "" {
		return Clip(ip, maxForwardedLen)
	}
	return ""
}

// maxForwardedLen bounds the logged forwarded address (an IPv6 address
// with a zone fits).
const maxForwardedLen = 64

// RemoteIP is the address of the immediate network peer of r, without its
// port: what the connection came from, never a header. "unknown" when the
// server recorded no address.
func RemoteIP(r *http.Request) string {
	if r.RemoteAddr == "" {
		return "unknown"
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return Clip(r.RemoteAddr, maxForwardedLen)
}

// ForwardedFor is the client address a trusted proxy reported for r, or ""
// when r did not come through a trusted proxy (Serve decides, with
// ServeOptions.TrustedProxies).
func ForwardedFor(r *http.Request) string {
	s, _ := r.Context().Value(forwardedKey{}).(string)
	return s
}

// Peer is the log attribute naming who sent r: "peer" is always the
// address of the network peer; "forwarded_for" is added when that peer is
// a trusted proxy and reported the client's address. The attribute is an
// unnamed group, so log handlers inline both fields. For logs only, never
// for authorization.
func Peer(r *http.Request) slog.Attr {
	peer := slog.String("peer", RemoteIP(r))
	if fwd := ForwardedFor(r); fwd != "" {
		return slog.Attr{Value: slog.GroupValue(peer, slog.String("forwarded_for", fwd))}
	}
	return slog.Attr{Value: slog.GroupValue(peer)}
}

package httpx

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
)

// Reason is the short cause of a failed request without a response, for
// messages a person reads: "connection refused", "timeout", "no such host
// <name>", "connection reset", else the innermost error text. It never
// includes the URL (a query may carry a key).
func Reason(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsNotFound {
			return "no such host " + dns.Name
		}
		return "DNS lookup of " + dns.Name + " failed: " + dns.Err
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	for {
		var ue *url.Error
		var oe *net.OpError
		var se *os.SyscallError
		switch {
		case errors.As(err, &ue) && ue.Err != nil:
			err = ue.Err
			continue
		case errors.As(err, &oe) && oe.Err != nil:
			err = oe.Err
			continue
		case errors.As(err, &se) && se.Err != nil:
			err = se.Err
			continue
		}
		return err.Error()
	}
}

// RequestURL is the URL a failed request went to, as scheme://host:port/path:
// the query, fragment and user info are left out (they may carry keys).
// It is "" when err carries no URL.
func RequestURL(err error) string {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return ""
	}
	u, perr := url.Parse(ue.URL)
	if perr != nil {
		return ""
	}
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	host := u.Hostname()
	if port != "" {
		host = net.JoinHostPort(host, port)
	}
	return u.Scheme + "://" + host + strings.TrimSuffix(u.EscapedPath(), "?")
}

// TransportFailure describes a request that got no response, for a
// provider error: message is "request to <url> failed: <reason>" (or
// "request failed: <reason>" without a URL), cause is err without the
// *url.Error wrapper that carries the URL.
func TransportFailure(err error) (message string, cause error) {
	message = "request failed: " + Reason(err)
	if u := RequestURL(err); u != "" {
		message = "request to " + u + " failed: " + Reason(err)
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		err = ue.Err
	}
	return message, err
}

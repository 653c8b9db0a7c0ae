package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// DefaultBrokerBind is the broker's default listen address.
const DefaultBrokerBind = "127.0.0.1:8765"

// DefaultGatewayBind is the gateway's default listen address. Both
// defaults live here, shared by the omp help texts and the servers
// (the broker and gateway packages alias them).
const DefaultGatewayBind = "127.0.0.1:4000"

// AllowNonLoopbackNoAuthFlag is the gateway's opt-in flag that lets
// --no-auth run on a non-loopback bind; without it such a run is refused.
const AllowNonLoopbackNoAuthFlag = "--allow-non-loopback-no-auth"

// BindError is a --bind parse failure; Error is the exact reference text.
type BindError struct{ Message string }

// Error returns the exact reference message.
func (e *BindError) Error() string { return e.Message }

// ParseBind parses --bind: a bare port means 127.0.0.1;
// otherwise the input is split at the last ':' and the host is kept as
// written (IPv6 brackets retained). The input is trimmed, but errors quote
// it untrimmed, exactly as the reference does.
func ParseBind(raw string) (host string, port int, err error) {
	trimmed := strings.TrimSpace(raw)
	if trimmed == "" {
		return "", 0, &BindError{"Invalid bind; expected 'host:port' or 'port'."}
	}
	if isDigits(trimmed) {
		port, err := parsePort(trimmed, raw)
		if err != nil {
			return "", 0, err
		}
		return "127.0.0.1", port, nil
	}
	i := strings.LastIndexByte(trimmed, ':')
	if i < 0 {
		return "", 0, &BindError{fmt.Sprintf("Invalid bind '%s'; expected 'host:port' or 'port'.", raw)}
	}
	if i == 0 {
		return "", 0, &BindError{fmt.Sprintf("Invalid bind '%s'; host must not be empty.", raw)}
	}
	port, err = parsePort(trimmed[i+1:], raw)
	if err != nil {
		return "", 0, err
	}
	return trimmed[:i], port, nil
}

func parsePort(s, raw string) (int, error) {
	if !isDigits(s) {
		return 0, &BindError{fmt.Sprintf("Invalid bind '%s'; port must be an integer.", raw)}
	}
	s = strings.TrimLeft(s, "0")
	if len(s) > 5 {
		return 0, &BindError{fmt.Sprintf("Invalid bind '%s'; port out of range.", raw)}
	}
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	if n > 65535 {
		return 0, &BindError{fmt.Sprintf("Invalid bind '%s'; port out of range.", raw)}
	}
	return n, nil
}

// isDigits reports whether s is non-empty and all ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Listen binds host:port for a server's --bind value. It runs before the
// server creates any file (key, token, vault), so a busy port leaves the
// config dir untouched. The error names the bind value and the bare
// system reason: `listen 127.0.0.1:8765: address already in use`.
func Listen(bind, host string, port int) (net.Listener, error) {
	if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
		host = host[1 : len(host)-1]
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		reason := err
		var se *os.SyscallError
		if errors.As(err, &se) {
			reason = se.Err
		}
		return nil, fmt.Errorf("listen %s: %w", bind, reason)
	}
	return ln, nil
}

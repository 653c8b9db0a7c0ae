package config

import (
	"errors"
	"testing"
)

func TestParseBind(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantHost string
		wantPort int
		wantErr  string
	}{
		{"bare port means loopback", "4000", "127.0.0.1", 4000, ""},
		{"input trimmed", "  4000 \n", "127.0.0.1", 4000, ""},
		{"host and port", "0.0.0.0:4000", "0.0.0.0", 4000, ""},
		{"IPv6 brackets retained", "[::1]:4000", "[::1]", 4000, ""},
		{"split at the last colon", "::1:80", "::1", 80, ""},
		{"leading zeros", "host:0080", "host", 80, ""},
		{"port zero accepted", "h:0", "h", 0, ""},
		{"max port", "65535", "127.0.0.1", 65535, ""},
		{"empty", "   ", "", 0, "Invalid bind; expected 'host:port' or 'port'."},
		{"no colon", "localhost", "", 0, "Invalid bind 'localhost'; expected 'host:port' or 'port'."},
		{"empty host quotes raw untrimmed", " :4000", "", 0, "Invalid bind ' :4000'; host must not be empty."},
		{"non-digit port", "h:80a", "", 0, "Invalid bind 'h:80a'; port must be an integer."},
		{"empty port", "h:", "", 0, "Invalid bind 'h:'; port must be an integer."},
		{"signed port", "h:+80", "", 0, "Invalid bind 'h:+80'; port must be an integer."},
		{"port out of range", "h:65536", "", 0, "Invalid bind 'h:65536'; port out of range."},
		{"bare port out of range", "99999999999999999999", "", 0, "Invalid bind '99999999999999999999'; port out of range."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host, port, err := ParseBind(tt.in)
			if tt.wantErr != "" {
				var be *BindError
				if !errors.As(err, &be) || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || host != tt.wantHost || port != tt.wantPort {
				t.Fatalf("got %q %d %v, want %q %d", host, port, err, tt.wantHost, tt.wantPort)
			}
		})
	}
}

func FuzzParseBind(f *testing.F) {
	for _, s := range []string{"4000", "[::1]:1", ":1", "a:b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		host, port, err := ParseBind(s)
		if err == nil && (host == "" || port < 0 || port > 65535) {
			t.Fatalf("accepted %q as %q:%d", s, host, port)
		}
	})
}

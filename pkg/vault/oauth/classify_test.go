package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"unicode/utf8"

	"golang.org/x/oauth2"
)

func retrieveErr(status int, code string) error {
	return &oauth2.RetrieveError{Response: &http.Response{StatusCode: status, Header: http.Header{}}, ErrorCode: code}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want Class
	}{
		{"nil is transient", nil, Transient},
		{"deadline is transient", fmt.Errorf("x: %w", context.DeadlineExceeded), Transient},
		{"cancel is transient", context.Canceled, Transient},
		{"dial error is transient", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, Transient},
		{"invalid_grant 400 is definitive", retrieveErr(400, "invalid_grant"), Definitive},
		{"invalid_token 401 is definitive", retrieveErr(401, "invalid_token"), Definitive},
		{"unauthorized_client 400 is definitive", retrieveErr(400, "unauthorized_client"), Definitive},
		{"bare 401 is definitive", retrieveErr(401, ""), Definitive},
		{"bare 403 is definitive", retrieveErr(403, ""), Definitive},
		{"bare 400 is definitive", retrieveErr(400, "invalid_request"), Definitive},
		{"invalid_grant with 200 is definitive", retrieveErr(200, "invalid_grant"), Definitive},
		{"wrapped invalid_grant is definitive", fmt.Errorf("ctx: %w", &RefreshError{Err: retrieveErr(400, "invalid_grant")}), Definitive},
		{"500 is transient", retrieveErr(500, ""), Transient},
		{"502 with invalid_grant is transient", retrieveErr(502, "invalid_grant"), Transient},
		{"429 is transient", retrieveErr(429, "invalid_grant"), Transient},
		{"404 is transient", retrieveErr(404, ""), Transient},
		{"retrieve error without response is transient", &oauth2.RetrieveError{}, Transient},
		{"unknown error mentioning invalid_grant is still transient (types, not text)", errors.New("invalid_grant"), Transient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestIsDefinitiveMessage(t *testing.T) {
	tests := []struct {
		msg  string
		want bool
	}{
		{"Error: OpenAI Codex token refresh failed: 400 invalid_grant", true},
		{"invalid_token", true},
		{"Token has been REVOKED", true},
		{"Unauthorized", true},
		{"refresh token expired", true},
		{"expired refresh token", true},
		{"HTTP 401", true},
		{"status 403 forbidden", true},
		{"401 network error", false},
		{"403 fetch failed", false},
		{"Timeout after 401", false},
		{"ECONNREFUSED 403", false},
		{"4010 bytes", false},
		{"OAuth token refresh timed out for provider: anthropic", false},
		{"500 internal error", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := IsDefinitiveMessage(tt.msg); got != tt.want {
			t.Errorf("IsDefinitiveMessage(%q) = %v, want %v", tt.msg, got, tt.want)
		}
	}
}

func TestFormatEndpointError(t *testing.T) {
	tests := []struct {
		status int
		body   string
		want   string
	}{
		{400, ``, "400"},
		{400, `  `, "400"},
		{400, `{"error":"invalid_grant"}`, "400 invalid_grant"},
		{400, `{"error":"invalid_grant","error_description":"gone"}`, "400 invalid_grant: gone"},
		{400, `{"error":"same","error_description":"same"}`, "400 same"},
		{400, `{"error_description":"only desc"}`, "400 only desc"},
		{400, `{"error":{"code":"c","message":"m"}}`, "400 c: m"},
		{400, `{"message":"plain"}`, "400 plain"},
		{400, `{"other":1}`, `400 {"other":1}`},
		{400, `[1,2]`, "400 [1,2]"},
		{400, `{"error":7}`, "400 7"},
		{502, "<p>\n bad\tgateway </p>", "502 <p> bad gateway </p>"},
	}
	for _, tt := range tests {
		if got := FormatEndpointError(tt.status, tt.body); got != tt.want {
			t.Errorf("FormatEndpointError(%d, %q) = %q, want %q", tt.status, tt.body, got, tt.want)
		}
	}
	long := FormatEndpointError(502, string(make([]byte, 0))+repeat("x", 5000))
	if len(long) > maxExcerpt+10 {
		t.Errorf("excerpt not truncated: %d bytes", len(long))
	}
}

func repeat(s string, n int) string {
	b := make([]byte, 0, len(s)*n)
	for range n {
		b = append(b, s...)
	}
	return string(b)
}

func FuzzFormatEndpointError(f *testing.F) {
	for _, s := range []string{``, `{"error":"invalid_grant"}`, `{"error":{"code":1,"message":null}}`, `<html>`, `"str"`, `null`} {
		f.Add(400, s)
	}
	f.Fuzz(func(t *testing.T, status int, body string) {
		out := FormatEndpointError(status, body)
		if n := utf8.RuneCountInString(out); n > maxExcerpt+32 {
			t.Fatalf("summary too long: %d characters", n)
		}
		if !utf8.ValidString(out) {
			t.Fatalf("summary is not valid UTF-8: %q", out)
		}
	})
}

func FuzzFormToJSON(f *testing.F) {
	for _, s := range []string{"grant_type=refresh_token&refresh_token=r&client_id=c", "a=%zz", "", "x=1&x=2&%3C=%3E"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, form string) {
		b, err := formToJSON(form)
		if err != nil {
			return
		}
		var m map[string]string
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("invalid JSON %q: %v", b, err)
		}
	})
}

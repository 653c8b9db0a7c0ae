package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		class      ErrorClass
		status     int
		usageLimit bool
	}{
		{"401 is auth", &UpstreamError{Status: 401}, ClassAuth, 401, false},
		{"403 is auth with status kept", &UpstreamError{Status: 403}, ClassAuth, 403, false},
		{"429 is rate limit", &UpstreamError{Status: 429, Type: "rate_limit_error"}, ClassRateLimit, 429, false},
		{"429 insufficient quota is usage limit", &UpstreamError{Status: 429, Type: "insufficient_quota"}, ClassRateLimit, 429, true},
		{"429 usage text is usage limit", &UpstreamError{Status: 429, Message: "You have hit your ChatGPT usage limit"}, ClassRateLimit, 429, true},
		{"400 is invalid request", &UpstreamError{Status: 400}, ClassInvalidRequest, 400, false},
		{"529 is upstream", &UpstreamError{Status: 529}, ClassUpstream, 529, false},
		{"wrapped typed status wins", fmt.Errorf("call: %w", &UpstreamError{Status: 401, Message: "rate limit"}), ClassAuth, 401, false},
		{"cancelled is aborted", fmt.Errorf("read: %w", context.Canceled), ClassAborted, 499, false},
		{"embedded status bucketed", errors.New("API error (429): slow down"), ClassRateLimit, 429, false},
		{"embedded HTTP status bucketed", errors.New("HTTP 503 from upstream"), ClassUpstream, 503, false},
		{"aborted text", errors.New("request aborted by user"), ClassAborted, 499, false},
		{"unauthorized text", errors.New("Unauthorized"), ClassAuth, 401, false},
		{"quota text is usage limit", errors.New("Quota exceeded for project"), ClassRateLimit, 429, true},
		{"too many requests text", errors.New("too many requests"), ClassRateLimit, 429, false},
		{"malformed text is invalid", errors.New("malformed body"), ClassInvalidRequest, 400, false},
		{"anything else is upstream", errors.New("connection reset"), ClassUpstream, 502, false},
		{"mid-stream error without status uses text", &UpstreamError{Status: 200, Type: "overloaded_error", Message: "Overloaded"}, ClassUpstream, 502, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Classify(tt.err)
			if c.Class != tt.class || c.Status != tt.status || c.UsageLimit != tt.usageLimit {
				t.Fatalf("Classify(%v) = %+v, want class %v status %d usage %v", tt.err, c, tt.class, tt.status, tt.usageLimit)
			}
		})
	}
}

func TestUpstreamErrorMessageCarriesRetryHint(t *testing.T) {
	e := &UpstreamError{Provider: "anthropic", Status: 429, Type: "rate_limit_error", Message: "slow down", RetryAfter: 3 * time.Second}
	if got, want := e.Error(), "anthropic HTTP 429 rate_limit_error: slow down (retry after 3s)"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
}

func TestCredentialNeverPrintsSecret(t *testing.T) {
	c := APIKey("sk-secret-value")
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), c.LogValue().String()} {
		if strings.Contains(s, "sk-secret") {
			t.Fatalf("secret leaked: %s", s)
		}
	}
}

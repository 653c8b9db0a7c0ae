package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestAgentBrokerDefaultModel: in broker mode, without --model, the agent
// takes the default model of the first known provider the broker holds a
// credential for.
func TestAgentBrokerDefaultModel(t *testing.T) {
	var mu sync.Mutex
	var models []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Model string `json:"model"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		models = append(models, body.Model)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"message":"fake upstream: stop here","type":"invalid_request_error"}}`))
	}))
	t.Cleanup(upstream.Close)

	b := startBroker(t, "")
	b.upload(t, apiKeyCred("openai", "sk-openai-only"))
	c := newCLI(t)
	c.useBroker(b)
	c.env["OMP_PROVIDER_OPENAI_BASE_URL"] = upstream.URL + "/v1"

	c.run("", "-p", "--no-session", "hi")
	mu.Lock()
	got := strings.Join(models, ",")
	mu.Unlock()
	if got == "" || strings.Split(got, ",")[0] != "gpt-5.5" {
		t.Errorf("default model sent upstream = %q, want OpenAI's default gpt-5.5", got)
	}

}

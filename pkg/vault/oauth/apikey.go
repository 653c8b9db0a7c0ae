package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// KeyLogin is an API-key login flow (discrepancies.md A13): show where to
// create a key, read the pasted key, check it against the provider's
// authenticated model listing, and store it as an api_key credential with
// replace-all semantics. Facts are the reference catalog's
// (`login "api-key"` rules).
type KeyLogin struct {
	ID, Name     string // login list id and display name (broker.md §1.7)
	AuthURL      string // the provider page where a key is created
	Instructions string
	Prompt       string // prompt text; shown as "<Prompt> (<Placeholder>): "
	Placeholder  string
	StripBearer  bool   // a pasted "Bearer <key>" loses its prefix
	ModelsURL    string // GET with the key as bearer must answer 2xx
}

// keyLogins is the built-in API-key flows, in broker.md §1.7 order. Each
// validates against a models endpoint whose root providers.<id>.baseUrl
// (OMP_PROVIDER_<ID>_BASE_URL) overrides.
var keyLogins = []KeyLogin{
	{ID: "deepseek", Name: "DeepSeek", AuthURL: "https://platform.deepseek.com/api_keys",
		Instructions: "Create or copy your API key from the DeepSeek dashboard",
		Prompt:       "Paste your DeepSeek API key", Placeholder: "sk-...", StripBearer: true,
		ModelsURL: "https://api.deepseek.com/v1/models"},
	{ID: "moonshot", Name: "Moonshot (Kimi API)", AuthURL: "https://platform.moonshot.ai/console/api-keys",
		Instructions: "Copy your API key from the Moonshot dashboard",
		Prompt:       "Paste your Moonshot API key", Placeholder: "sk-...",
		ModelsURL: "https://api.moonshot.ai/v1/models"},
	{ID: "synthetic", Name: "Synthetic", AuthURL: "https://dev.synthetic.new/docs/api/overview",
		Instructions: "Copy your API key from the Synthetic dashboard",
		Prompt:       "Paste your Synthetic API key", Placeholder: "sk-...",
		ModelsURL: "https://api.synthetic.new/openai/v1/models"},
	{ID: "nanogpt", Name: "NanoGPT", AuthURL: "https://nano-gpt.com/api",
		Instructions: "Create or copy your NanoGPT API key",
		Prompt:       "Paste your NanoGPT API key", Placeholder: "sk-...",
		ModelsURL: "https://nano-gpt.com/api/v1/models"},
}

// KeyLogins returns the API-key login flows with their models URL
// overridden where the registry's resolver says so.
func (r *Registry) KeyLogins() []KeyLogin {
	out := make([]KeyLogin, len(keyLogins))
	for i, k := range keyLogins {
		if base := strings.TrimRight(r.urls(k.ID, KindBaseURL), "/"); base != "" {
			k.ModelsURL = base + "/models"
		}
		out[i] = k
	}
	return out
}

// KeyLogin returns the API-key login flow of id.
func (r *Registry) KeyLogin(id string) (KeyLogin, bool) {
	for _, k := range r.KeyLogins() {
		if k.ID == id {
			return k, true
		}
	}
	return KeyLogin{}, false
}

// ErrAPIKeyRequired is returned for an empty paste (the reference's text).
var ErrAPIKeyRequired = errors.New("API key is required")

var bearerPrefix = regexp.MustCompile(`(?i)^bearer\b\s*`)

// Normalize trims the pasted key and strips a "Bearer " prefix where the
// flow says so.
func (k KeyLogin) Normalize(pasted string) (string, error) {
	key := strings.TrimSpace(pasted)
	if k.StripBearer && key != "" {
		if key = bearerPrefix.ReplaceAllString(key, ""); key == "" {
			return "", fmt.Errorf("%s API key is empty after stripping Bearer prefix", k.Name)
		}
	}
	if key == "" {
		return "", ErrAPIKeyRequired
	}
	return key, nil
}

// Validate asks the provider's models endpoint whether key is accepted
// (nil hc → http.DefaultClient). The error names the status, never the key.
func (k KeyLogin) Validate(ctx context.Context, hc *http.Client, key string) error {
	if hc == nil {
		hc = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, followUpTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.ModelsURL, nil)
	if err != nil {
		return fmt.Errorf("%s API key validation: %w", k.Name, err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s API key validation failed: %s", k.Name, redact(err.Error(), key))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s API key validation failed: %s", k.Name, redact(FormatEndpointError(resp.StatusCode, string(body)), key))
	}
	return nil
}

package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
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
	ModelsURL    string // GET with the key as bearer must answer 2xx; "" = no check
}

// keyLogins is the built-in API-key flows, in broker.md §1.7 order (the
// reference's flows that validate with a models listing or not at all;
// flows validated by a chat completion are not built in). A flow with a
// models endpoint validates there; providers.<id>.baseUrl
// (OMP_PROVIDER_<ID>_BASE_URL) moves it to <base>/models.
var keyLogins = []KeyLogin{
	{ID: "deepseek", Name: "DeepSeek", AuthURL: "https://platform.deepseek.com/api_keys",
		Instructions: "Create or copy your API key from the DeepSeek dashboard",
		Prompt:       "Paste your DeepSeek API key", Placeholder: "sk-...", StripBearer: true,
		ModelsURL: "https://api.deepseek.com/v1/models"},
	{ID: "moonshot", Name: "Moonshot (Kimi API)", AuthURL: "https://platform.moonshot.ai/console/api-keys",
		Instructions: "Copy your API key from the Moonshot dashboard",
		Prompt:       "Paste your Moonshot API key", Placeholder: "sk-...",
		ModelsURL: "https://api.moonshot.ai/v1/models"},
	{ID: "fireworks", Name: "Fireworks", AuthURL: "https://app.fireworks.ai/settings/users/api-keys",
		Instructions: "Create or copy your Fireworks API key",
		Prompt:       "Paste your Fireworks API key", Placeholder: "fw_...",
		ModelsURL: "https://api.fireworks.ai/v1/accounts/fireworks/models?filter=supports_serverless%3Dtrue&pageSize=1"},
	{ID: "together", Name: "Together", AuthURL: "https://api.together.xyz/settings/api-keys",
		Instructions: "Copy your API key from the Together dashboard",
		Prompt:       "Paste your Together API key", Placeholder: "sk-...",
		ModelsURL: "https://api.together.xyz/v1/models"},
	{ID: "synthetic", Name: "Synthetic", AuthURL: "https://dev.synthetic.new/docs/api/overview",
		Instructions: "Copy your API key from the Synthetic dashboard",
		Prompt:       "Paste your Synthetic API key", Placeholder: "sk-...",
		ModelsURL: "https://api.synthetic.new/openai/v1/models"},
	{ID: "nanogpt", Name: "NanoGPT", AuthURL: "https://nano-gpt.com/api",
		Instructions: "Create or copy your NanoGPT API key",
		Prompt:       "Paste your NanoGPT API key", Placeholder: "sk-...",
		ModelsURL: "https://nano-gpt.com/api/v1/models"},
	{ID: "wafer-serverless", Name: "Wafer Serverless (pay-as-you-go)", AuthURL: "https://app.wafer.ai/usage",
		Instructions: "Create or copy your Wafer Serverless API key from the Wafer dashboard",
		Prompt:       "Paste your Wafer Serverless API key", Placeholder: "wfr_...",
		ModelsURL: "https://pass.wafer.ai/v1/models"},
	{ID: "vercel-ai-gateway", Name: "Vercel AI Gateway", AuthURL: "https://vercel.com/d?to=%2F%5Bteam%5D%2F%7E%2Fai-gateway%2Fapi-keys&title=AI+Gateway+API+Keys",
		Instructions: "Copy your Vercel AI Gateway API key from the Vercel dashboard",
		Prompt:       "Paste your Vercel AI Gateway API key", Placeholder: "vck_..."},
	{ID: "zenmux", Name: "ZenMux", AuthURL: "https://zenmux.ai/settings/keys",
		Instructions: "Create or copy your ZenMux API key",
		Prompt:       "Paste your ZenMux API key", Placeholder: "sk-...",
		ModelsURL: "https://zenmux.ai/api/v1/models"},
	{ID: "opencode-zen", Name: "OpenCode Zen", AuthURL: "https://opencode.ai/auth",
		Instructions: "Log in to the OpenCode Zen console and copy your OpenCode Zen API key",
		Prompt:       "Paste your OpenCode Zen API key", Placeholder: "sk-..."},
	{ID: "opencode-go", Name: "OpenCode Go", AuthURL: "https://opencode.ai/auth",
		Instructions: "Log in to the OpenCode Zen console and copy your OpenCode Go API key",
		Prompt:       "Paste your OpenCode Go API key", Placeholder: "sk-..."},
	{ID: "tavily", Name: "Tavily", AuthURL: "https://app.tavily.com/home",
		Instructions: "Copy your Tavily API key from the API Keys page.",
		Prompt:       "Paste your Tavily API key", Placeholder: "tvly-..."},
	{ID: "kagi", Name: "Kagi", AuthURL: "https://kagi.com/settings/api",
		Instructions: "Copy your Kagi Search API key from Kagi API settings. Search API access is beta-only; if unavailable, email support@kagi.com.",
		Prompt:       "Paste your Kagi API key", Placeholder: "KG_..."},
	{ID: "ollama-cloud", Name: "Ollama Cloud", AuthURL: "https://ollama.com/settings/keys",
		Instructions: "Create an Ollama Cloud API key, then paste it here.",
		Prompt:       "Paste your Ollama Cloud API key", Placeholder: "ollama-cloud-api-key"},
}

// KeyLogins returns the API-key login flows with their models URL
// overridden where the registry's resolver says so.
func (r *Registry) KeyLogins() []KeyLogin {
	out := make([]KeyLogin, len(keyLogins))
	for i, k := range keyLogins {
		if base := strings.TrimRight(r.urls(k.ID, KindBaseURL), "/"); base != "" && k.ModelsURL != "" {
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

var bearerPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^bearer\b\s*`) })

// Normalize trims the pasted key and strips a "Bearer " prefix where the
// flow says so.
func (k KeyLogin) Normalize(pasted string) (string, error) {
	key := strings.TrimSpace(pasted)
	if k.StripBearer && key != "" {
		if key = bearerPrefix().ReplaceAllString(key, ""); key == "" {
			return "", fmt.Errorf("%s API key is empty after stripping Bearer prefix", k.Name)
		}
	}
	if key == "" {
		return "", ErrAPIKeyRequired
	}
	return key, nil
}

// Validate asks the provider's models endpoint whether key is accepted
// (nil hc → http.DefaultClient); a flow without one accepts any key. The
// error names the status, never the key.
func (k KeyLogin) Validate(ctx context.Context, hc *http.Client, key string) error {
	if k.ModelsURL == "" {
		return nil
	}
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

package oauth

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
)

// KeyLogin is an API-key login flow: show where to
// create a key, read the pasted key, check it against the provider's
// authenticated model listing, and store it as an api_key credential with
// replace-all semantics. Facts are the reference catalog's
// (`login "api-key"` rules).
type KeyLogin struct {
	ID, Name     string // login list id and display name
	AuthURL      string // the provider page where a key is created
	Instructions string
	Prompt       string // prompt text; shown as "<Prompt> (<Placeholder>): "
	Placeholder  string
	StripBearer  bool   // a pasted "Bearer <key>" loses its prefix
	ModelsURL    string // GET with the key as bearer must answer 2xx; "" = no check
	// ChatURL is an OpenAI-compatible chat-completions endpoint: a one-token
	// "ping" to ChatModel with the key as bearer must answer 2xx ("" = no
	// such check). Used when ModelsURL is "".
	ChatURL, ChatModel string
	// Label names the provider in validation errors ("" = Name).
	Label string
	// Optional: only an auth rejection (401/403) fails the login; any other
	// validation failure trusts the key.
	Optional bool
	// TolerateModelDenied accepts a 401 whose error code is invalid_model
	// (the key is good, the probe model is not on the plan).
	TolerateModelDenied bool
	// EmptyFallback, when set, is the key an empty paste stands for; "" means
	// an empty paste stores nothing (ErrNoKeyEntered).
	EmptyFallback *string
}

// fallback returns a pointer to s (KeyLogin.EmptyFallback literals).
func fallback(s string) *string { return &s }

// keyLogins is the built-in API-key flows, in the reference's list order (the
// reference catalog's `login "api-key"` rules). A flow validates with its
// models listing, else with a one-token chat completion, else not at all;
// providers.<id>.baseUrl (OMP_PROVIDER_<ID>_BASE_URL) moves the probe to
// <base>/models or <base>/chat/completions.
var keyLogins = []KeyLogin{
	{ID: "zai", Name: "Z.AI (GLM Coding Plan)", AuthURL: "https://z.ai/manage-apikey/apikey-list",
		Instructions: "Copy your API key from the dashboard",
		Prompt:       "Paste your Z.AI API key", Placeholder: "sk-...",
		ChatURL: "https://api.z.ai/api/coding/paas/v4/chat/completions", ChatModel: "glm-5.2", Label: "Z.AI"},
	{ID: "zhipu-coding-plan", Name: "Zhipu Coding Plan (智谱)", AuthURL: "https://bigmodel.cn/coding-plan/personal/overview",
		Instructions: "Copy your API key from the Coding Plan dashboard",
		Prompt:       "Paste your Zhipu API key", Placeholder: "<id>.<secret>",
		ChatURL: "https://open.bigmodel.cn/api/coding/paas/v4/chat/completions", ChatModel: "glm-5.1", Label: "Zhipu"},
	{ID: "qwen-portal", Name: "Qwen Portal", AuthURL: "https://chat.qwen.ai",
		Instructions: "Copy your Qwen OAuth token or API key",
		Prompt:       "Paste your Qwen OAuth token or API key", Placeholder: "sk-...",
		ChatURL: "https://portal.qwen.ai/v1/chat/completions", ChatModel: "coder-model", Label: "qwen-portal"},
	{ID: "minimax-code", Name: "MiniMax Token Plan (International)", AuthURL: "https://platform.minimax.io/subscribe/token-plan",
		Instructions: "Subscribe to Token Plan and copy your API key",
		Prompt:       "Paste your MiniMax Token Plan API key", Placeholder: "sk-...",
		ChatURL: "https://api.minimax.io/v1/chat/completions", ChatModel: "MiniMax-M3", Label: "MiniMax Token Plan"},
	{ID: "minimax-code-cn", Name: "MiniMax Token Plan (China)", AuthURL: "https://platform.minimaxi.com/subscribe/token-plan",
		Instructions: "Subscribe to Token Plan and copy your API key",
		Prompt:       "Paste your MiniMax Token Plan API key", Placeholder: "sk-...",
		ChatURL: "https://api.minimaxi.com/v1/chat/completions", ChatModel: "MiniMax-M3"},
	{ID: "xiaomi-token-plan-sgp", Name: "Xiaomi Token Plan (Singapore)", AuthURL: "https://platform.xiaomimimo.com/console/plan-manage",
		Instructions: "Copy your token-plan API key for the Singapore region",
		Prompt:       "Paste your Xiaomi Token Plan Singapore API key (tp-...)", Placeholder: "tp-...",
		ChatURL: "https://token-plan-sgp.xiaomimimo.com/v1/chat/completions", ChatModel: "mimo-v2.5", Label: "xiaomi"},
	{ID: "xiaomi-token-plan-ams", Name: "Xiaomi Token Plan (Europe)", AuthURL: "https://platform.xiaomimimo.com/console/plan-manage",
		Instructions: "Copy your token-plan API key for the Europe region",
		Prompt:       "Paste your Xiaomi Token Plan Europe API key (tp-...)", Placeholder: "tp-...",
		ChatURL: "https://token-plan-ams.xiaomimimo.com/v1/chat/completions", ChatModel: "mimo-v2.5", Label: "xiaomi"},
	{ID: "xiaomi-token-plan-cn", Name: "Xiaomi Token Plan (China)", AuthURL: "https://platform.xiaomimimo.com/console/plan-manage",
		Instructions: "Copy your token-plan API key for the China region",
		Prompt:       "Paste your Xiaomi Token Plan China API key (tp-...)", Placeholder: "tp-...",
		ChatURL: "https://token-plan-cn.xiaomimimo.com/v1/chat/completions", ChatModel: "mimo-v2.5", Label: "xiaomi"},
	{ID: "firepass", Name: "Fire Pass (Fireworks Kimi K2.6 Turbo subscription)", AuthURL: "https://app.fireworks.ai/settings/users/api-keys",
		Instructions: "Create a dedicated Fire Pass API key in the Fireworks dashboard",
		Prompt:       "Paste your Fire Pass API key", Placeholder: "fpk_...",
		ChatURL: "https://api.fireworks.ai/inference/v1/chat/completions", ChatModel: "accounts/fireworks/routers/glm-5p2-fast", Label: "Fire Pass"},
	{ID: "deepseek", Name: "DeepSeek", AuthURL: "https://platform.deepseek.com/api_keys",
		Instructions: "Create or copy your API key from the DeepSeek dashboard",
		Prompt:       "Paste your DeepSeek API key", Placeholder: "sk-...", StripBearer: true,
		ModelsURL: "https://api.deepseek.com/v1/models"},
	{ID: "stepfun", Name: "StepFun", AuthURL: "https://platform.stepfun.ai/interface-key",
		Instructions: "Copy your API key from the StepFun Open Platform",
		Prompt:       "Paste your StepFun API key", Placeholder: "...",
		ChatURL: "https://api.stepfun.ai/v1/chat/completions", ChatModel: "step-5-preview", Label: "StepFun", Optional: true},
	{ID: "moonshot", Name: "Moonshot (Kimi API)", AuthURL: "https://platform.moonshot.ai/console/api-keys",
		Instructions: "Copy your API key from the Moonshot dashboard",
		Prompt:       "Paste your Moonshot API key", Placeholder: "sk-...",
		ModelsURL: "https://api.moonshot.ai/v1/models"},
	{ID: "cerebras", Name: "Cerebras", AuthURL: "https://cloud.cerebras.ai/platform/",
		Instructions: "Copy your API key from the Cerebras dashboard",
		Prompt:       "Paste your Cerebras API key", Placeholder: "csk-...",
		ChatURL: "https://api.cerebras.ai/v1/chat/completions", ChatModel: "gpt-oss-120b", Label: "Cerebras"},
	{ID: "fireworks", Name: "Fireworks", AuthURL: "https://app.fireworks.ai/settings/users/api-keys",
		Instructions: "Create or copy your Fireworks API key",
		Prompt:       "Paste your Fireworks API key", Placeholder: "fw_...",
		ModelsURL: "https://api.fireworks.ai/v1/accounts/fireworks/models?filter=supports_serverless%3Dtrue&pageSize=1"},
	{ID: "together", Name: "Together", AuthURL: "https://api.together.xyz/settings/api-keys",
		Instructions: "Copy your API key from the Together dashboard",
		Prompt:       "Paste your Together API key", Placeholder: "sk-...",
		ModelsURL: "https://api.together.xyz/v1/models"},
	{ID: "nvidia", Name: "NVIDIA", AuthURL: "https://org.ngc.nvidia.com/setup/personal-keys",
		Instructions: "Copy your API key from NVIDIA NGC Personal Keys",
		Prompt:       "Paste your NVIDIA API key", Placeholder: "nvapi-...",
		ChatURL: "https://integrate.api.nvidia.com/v1/chat/completions", ChatModel: "nvidia/llama-3.1-nemotron-70b-instruct",
		Label: "nvidia", Optional: true},
	{ID: "huggingface", Name: "Hugging Face Inference", AuthURL: "https://huggingface.co/settings/tokens/new?ownUserPermissions=inference.serverless.write&tokenType=fineGrained",
		Instructions: "Create/copy a token with Make calls to Inference Providers permission (usable as HUGGINGFACE_HUB_TOKEN or HF_TOKEN)",
		Prompt:       "Paste your Hugging Face token (HUGGINGFACE_HUB_TOKEN / HF_TOKEN)", Placeholder: "hf_...",
		ChatURL: "https://router.huggingface.co/v1/chat/completions", ChatModel: "openai/gpt-oss-120b", Label: "Hugging Face"},
	{ID: "qianfan", Name: "Qianfan", AuthURL: "https://console.bce.baidu.com/qianfan/ais/console/apiKey",
		Instructions: "Copy your Qianfan API key from the console",
		Prompt:       "Paste your Qianfan API key", Placeholder: "bce-v3/ALTAK-...",
		ChatURL: "https://qianfan.baidubce.com/v2/chat/completions", ChatModel: "deepseek-v3.2", Label: "qianfan", TolerateModelDenied: true},
	{ID: "venice", Name: "Venice", AuthURL: "https://venice.ai/settings/api",
		Instructions: "Copy your API key from the Venice dashboard",
		Prompt:       "Paste your Venice API key", Placeholder: "vapi_...",
		ChatURL: "https://api.venice.ai/api/v1/chat/completions", ChatModel: "qwen3-4b"},
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
	{ID: "litellm", Name: "LiteLLM", AuthURL: "https://docs.litellm.ai/docs/proxy/deploy",
		Instructions: "Run LiteLLM proxy (default http://localhost:4000/v1; set LITELLM_BASE_URL to customize it), then copy your master key or virtual key",
		Prompt:       "Paste your LiteLLM API key (master key or virtual key)", Placeholder: "sk-..."},
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
	{ID: "parallel", Name: "Parallel", AuthURL: "https://platform.parallel.ai/settings?tab=api-keys",
		Instructions: "Copy your Parallel API key from the Parallel settings page.",
		Prompt:       "Paste your Parallel API key", Placeholder: "sk_..."},
	{ID: "typesafe", Name: "TypeSafe", AuthURL: "https://console.typesafe.ai/",
		Instructions: "Create or copy your API key from the TypeSafe console.",
		Prompt:       "Paste your TypeSafe API key", Placeholder: "API key",
		ModelsURL: "https://api.typesafe.ai/v1/models", Label: "TypeSafe"},
	{ID: "ollama", Name: "Ollama (Local OpenAI-compatible)", AuthURL: "https://github.com/ollama/ollama/blob/main/docs/api.md",
		Instructions: "Optional: paste an Ollama API key/token for authenticated hosts. Leave empty for local no-auth mode.",
		Prompt:       "Paste your Ollama API key/token (optional)", Placeholder: "ollama-local", EmptyFallback: fallback("")},
	{ID: "ollama-cloud", Name: "Ollama Cloud", AuthURL: "https://ollama.com/settings/keys",
		Instructions: "Create an Ollama Cloud API key, then paste it here.",
		Prompt:       "Paste your Ollama Cloud API key", Placeholder: "ollama-cloud-api-key"},
	{ID: "lm-studio", Name: "LM Studio (Local OpenAI-compatible)",
		Prompt:      "Optional: Paste LM Studio API key (to customize endpoint URL, set LM_STUDIO_BASE_URL env var)",
		Placeholder: "lm-studio-local", EmptyFallback: fallback("lm-studio-local")},
	{ID: "vllm", Name: "vLLM (Local OpenAI-compatible)", AuthURL: "https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html",
		Instructions: "Paste your vLLM API key if your server requires auth. Leave empty for local no-auth mode (default base URL: http://127.0.0.1:8000/v1).",
		Prompt:       "Paste your vLLM API key (optional for local no-auth)", Placeholder: "vllm-local", EmptyFallback: fallback("vllm-local")},
	{ID: "singularityapi-dev", Name: "SingularityAPI", AuthURL: "https://app.singularityapi.dev",
		Instructions: "Create an API key from the SingularityAPI dashboard, then paste it here",
		Prompt:       "Paste your SingularityAPI API key", Placeholder: "sk-sapi-...", StripBearer: true,
		ModelsURL: "https://api.singularityapi.dev/v1/models", Label: "SingularityAPI"},
	{ID: "singularityapi-tech", Name: "SingularityAPI Reserved Lanes", AuthURL: "https://app.singularityapi.tech/compute/billing",
		Instructions: "Create a key from the SingularityAPI lanes dashboard, then paste it here",
		Prompt:       "Paste your SingularityAPI lanes key", Placeholder: "sk-...", StripBearer: true,
		ModelsURL: "https://api.singularityapi.tech/v1/models", Label: "SingularityAPI Reserved Lanes"},
}

// KeyLogins returns the API-key login flows with their models URL
// overridden where the registry's resolver says so.
func (r *Registry) KeyLogins() []KeyLogin {
	out := make([]KeyLogin, len(keyLogins))
	for i, k := range keyLogins {
		if base := strings.TrimRight(r.urls(k.ID, KindBaseURL), "/"); base != "" {
			switch {
			case k.ModelsURL != "":
				k.ModelsURL = base + "/models"
			case k.ChatURL != "":
				k.ChatURL = base + "/chat/completions"
			}
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
		if k.EmptyFallback != nil {
			if *k.EmptyFallback == "" {
				return "", ErrNoKeyEntered
			}
			return *k.EmptyFallback, nil
		}
		return "", ErrAPIKeyRequired
	}
	return key, nil
}

// ErrNoKeyEntered is an empty paste in a flow where that means "no key"
// (Ollama's local no-auth mode): nothing is stored.
var ErrNoKeyEntered = errors.New("no API key entered; nothing stored")

// Validates reports whether the flow checks a key with the provider.
func (k KeyLogin) Validates() bool { return k.ModelsURL != "" || k.ChatURL != "" }

// Validate asks the provider's models endpoint whether key is accepted
// (nil hc → http.DefaultClient); a flow without one accepts any key. The
// error names the status, never the key.
func (k KeyLogin) Validate(ctx context.Context, hc *http.Client, key string) error {
	if !k.Validates() {
		return nil
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	label := cmp.Or(k.Label, k.Name)
	ctx, cancel := context.WithTimeout(ctx, followUpTimeout)
	defer cancel()
	var req *http.Request
	var err error
	if k.ModelsURL != "" {
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, k.ModelsURL, nil)
	} else {
		body, _ := json.Marshal(map[string]any{"model": k.ChatModel, "max_tokens": 1, "temperature": 0,
			"messages": []map[string]string{{"role": "user", "content": "ping"}}})
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, k.ChatURL, bytes.NewReader(body))
		if req != nil {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	if err != nil {
		return fmt.Errorf("%s API key validation: %w", label, err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := hc.Do(req)
	if err != nil {
		if k.Optional && ctx.Err() == nil {
			return nil
		}
		return fmt.Errorf("%s API key validation failed: %s", label, Redact(err.Error(), key))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	auth := resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden
	if k.TolerateModelDenied && resp.StatusCode == http.StatusUnauthorized && errorCode(body) == "invalid_model" {
		return nil
	}
	if k.Optional && !auth {
		return nil
	}
	return fmt.Errorf("%s API key validation failed: %s", label, Redact(FormatEndpointError(resp.StatusCode, string(body)), key))
}

// errorCode is the OpenAI-style error code of an error body ({"error":
// {"code"}} or {"code"}), "" when there is none.
func errorCode(body []byte) string {
	var v struct {
		Code  any `json:"code"`
		Error struct {
			Code any `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	for _, c := range []any{v.Error.Code, v.Code} {
		if s, ok := c.(string); ok && s != "" {
			return s
		}
	}
	return ""
}

package cli

import (
	"slices"

	"github.com/ompgo/omp/pkg/vault/oauth"
)

// listOrder is the order of the login provider list: OAuth and API-key
// login flows interleaved as the reference lists them.
var listOrder = []string{"openai-codex", "anthropic", "zai", "kimi-code", "openrouter", "github-copilot", "cursor",
	"google-antigravity", "google-gemini-cli", "openai-codex-device", "xai-oauth", "gitlab-duo", "alibaba-coding-plan",
	"zhipu-coding-plan", "qwen-portal", "minimax-code", "minimax-code-cn", "xiaomi", "xiaomi-token-plan-sgp",
	"xiaomi-token-plan-ams", "xiaomi-token-plan-cn", "firepass", "wafer-pass", "deepseek", "stepfun", "moonshot", "cerebras",
	"fireworks", "together", "nvidia", "huggingface", "perplexity", "qianfan", "venice", "synthetic", "nanogpt",
	"wafer-serverless", "vercel-ai-gateway", "cloudflare-ai-gateway", "litellm", "kilo", "zenmux", "opencode-zen",
	"opencode-go", "tavily", "kagi", "parallel", "typesafe", "ollama", "ollama-cloud", "lm-studio", "vllm", "stencil",
	"singularityapi-dev", "singularityapi-tech"}

// loginProviders lists the providers whose login flows omp-go implements,
// with the reference ids and names, in listOrder (OAuth and API-key flows
// in one list); a provider listOrder does not name comes last.
func loginProviders(reg *oauth.Registry) []providerName {
	var out []providerName
	for _, id := range reg.IDs() {
		p, _ := reg.Get(id)
		out = append(out, providerName{ID: p.ID, Name: p.Name})
	}
	for _, k := range reg.KeyLogins() {
		out = append(out, providerName{ID: k.ID, Name: k.Name})
	}
	pos := func(id string) int {
		if i := slices.Index(listOrder, id); i >= 0 {
			return i
		}
		return len(listOrder)
	}
	slices.SortStableFunc(out, func(a, b providerName) int { return pos(a.ID) - pos(b.ID) })
	return out
}

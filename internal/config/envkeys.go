package config

import (
	"os"
	"path/filepath"
	"strings"
)

// AuthenticatedSentinel is the placeholder API key meaning "credentials
// come from the environment out of band". It is never a
// real key: migrate skips it.
const AuthenticatedSentinel = "<authenticated>"

// Providers whose environment fallback is computed rather than a fixed
// variable list.
const (
	ProviderAnthropic = "anthropic"
	ProviderVertex    = "google-vertex"
	ProviderBedrock   = "amazon-bedrock"
)

// envTable maps each provider id to its variables, in the reference's
// order; the first non-empty variable is the key. anthropic, google-vertex and
// amazon-bedrock have computed resolvers (EnvAPIKey); their entries list
// the variables of the default case.
var envTable = []struct {
	provider string
	vars     []string
}{
	{"anthropic", []string{"ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"}},
	{"openai", []string{"OPENAI_API_KEY"}},
	{"openai-codex", []string{"OPENAI_CODEX_OAUTH_TOKEN"}},
	{"azure-openai-responses", []string{"AZURE_OPENAI_API_KEY"}},
	{"google", []string{"GEMINI_API_KEY"}},
	{"google-vertex", []string{"GOOGLE_CLOUD_API_KEY"}},
	{"amazon-bedrock", nil},
	{"groq", []string{"GROQ_API_KEY"}},
	{"cerebras", []string{"CEREBRAS_API_KEY"}},
	{"fireworks", []string{"FIREWORKS_API_KEY"}},
	{"firepass", []string{"FIREPASS_API_KEY"}},
	{"together", []string{"TOGETHER_API_KEY"}},
	{"aimlapi", []string{"AIMLAPI_API_KEY"}},
	{"huggingface", []string{"HUGGINGFACE_HUB_TOKEN", "HF_TOKEN"}},
	{"synthetic", []string{"SYNTHETIC_API_KEY"}},
	{"nvidia", []string{"NVIDIA_API_KEY"}},
	{"nanogpt", []string{"NANO_GPT_API_KEY"}},
	{"venice", []string{"VENICE_API_KEY"}},
	{"litellm", []string{"LITELLM_API_KEY"}},
	{"lm-studio", []string{"LM_STUDIO_API_KEY"}},
	{"ollama", []string{"OLLAMA_API_KEY"}},
	{"ollama-cloud", []string{"OLLAMA_CLOUD_API_KEY"}},
	{"llama.cpp", []string{"LLAMA_CPP_API_KEY"}},
	{"vllm", []string{"VLLM_API_KEY"}},
	{"xiaomi", []string{"XIAOMI_API_KEY"}},
	{"xiaomi-token-plan-sgp", []string{"XIAOMI_TOKEN_PLAN_SGP_API_KEY"}},
	{"xiaomi-token-plan-ams", []string{"XIAOMI_TOKEN_PLAN_AMS_API_KEY"}},
	{"xiaomi-token-plan-cn", []string{"XIAOMI_TOKEN_PLAN_CN_API_KEY"}},
	{"moonshot", []string{"MOONSHOT_API_KEY"}},
	{"xai", []string{"XAI_API_KEY"}},
	{"xai-oauth", []string{"XAI_OAUTH_TOKEN", "XAI_API_KEY"}},
	{"openrouter", []string{"OPENROUTER_API_KEY"}},
	{"mistral", []string{"MISTRAL_API_KEY"}},
	{"zai", []string{"ZAI_API_KEY"}},
	{"zhipu-coding-plan", []string{"ZHIPU_API_KEY"}},
	{"minimax", []string{"MINIMAX_API_KEY"}},
	{"minimax-code", []string{"MINIMAX_CODE_API_KEY"}},
	{"minimax-code-cn", []string{"MINIMAX_CODE_CN_API_KEY"}},
	{"opencode-go", []string{"OPENCODE_API_KEY"}},
	{"opencode-zen", []string{"OPENCODE_API_KEY"}},
	{"qianfan", []string{"QIANFAN_API_KEY"}},
	{"qwen-portal", []string{"QWEN_OAUTH_TOKEN", "QWEN_PORTAL_API_KEY"}},
	{"zenmux", []string{"ZENMUX_API_KEY"}},
	{"cursor", []string{"CURSOR_ACCESS_TOKEN"}},
	{"vercel-ai-gateway", []string{"AI_GATEWAY_API_KEY"}},
	{"cloudflare-ai-gateway", []string{"CLOUDFLARE_AI_GATEWAY_API_KEY"}},
	{"alibaba-coding-plan", []string{"ALIBABA_CODING_PLAN_API_KEY"}},
	{"deepseek", []string{"DEEPSEEK_API_KEY"}},
	{"kilo", []string{"KILO_API_KEY"}},
	{"wafer-pass", []string{"WAFER_PASS_API_KEY"}},
	{"wafer-serverless", []string{"WAFER_SERVERLESS_API_KEY"}},
	{"gitlab-duo", []string{"GITLAB_TOKEN"}},
	{"github-copilot", []string{"COPILOT_GITHUB_TOKEN"}},
	{"perplexity", []string{"PERPLEXITY_API_KEY"}},
	{"kagi", []string{"KAGI_API_KEY"}},
	{"parallel", []string{"PARALLEL_API_KEY"}},
	{"tavily", []string{"TAVILY_API_KEY"}},
	{"exa", []string{"EXA_API_KEY"}},
	{"jina", []string{"JINA_API_KEY"}},
	{"brave", []string{"BRAVE_API_KEY"}},
}

// foundryVars are anthropic's variables in Foundry mode.
var foundryVars = []string{"ANTHROPIC_FOUNDRY_API_KEY", "ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"}

// EnvProviders lists every provider with an environment API-key mapping,
// in the mapping order `migrate --include-env` walks.
func EnvProviders() []string {
	out := make([]string, len(envTable))
	for i, e := range envTable {
		out[i] = e.provider
	}
	return out
}

// EnvKeys returns the variables that hold provider's API key, first
// non-empty wins; nil for an unmapped provider. For anthropic it is the
// non-Foundry list, for google-vertex the explicit key only, and for
// amazon-bedrock nil: use EnvAPIKey for those.
func EnvKeys(provider string) []string {
	for _, e := range envTable {
		if e.provider == provider {
			return append([]string(nil), e.vars...)
		}
	}
	return nil
}

// FoundryEnabled reports CLAUDE_CODE_USE_FOUNDRY ∈ 1/true/yes/on.
func FoundryEnabled(env *Env) bool {
	switch strings.ToLower(strings.TrimSpace(env.Get("CLAUDE_CODE_USE_FOUNDRY"))) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// EnvAPIKey returns provider's API key from env: the first
// non-empty mapped variable (trimmed), or AuthenticatedSentinel for the
// Vertex ADC and Bedrock resolvers, or "" when none applies. The result is
// a secret.
func EnvAPIKey(env *Env, provider string) string {
	switch provider {
	case ProviderAnthropic:
		if FoundryEnabled(env) {
			return pick(env, foundryVars)
		}
	case ProviderVertex:
		if v := pick(env, EnvKeys(provider)); v != "" {
			return v
		}
		if vertexADC(env) && pick(env, []string{"GOOGLE_CLOUD_PROJECT", "GCP_PROJECT", "GCLOUD_PROJECT"}) != "" &&
			pick(env, []string{"GOOGLE_VERTEX_LOCATION", "GOOGLE_CLOUD_LOCATION", "VERTEX_LOCATION"}) != "" {
			return AuthenticatedSentinel
		}
		return ""
	case ProviderBedrock:
		if bedrockCredentials(env) {
			return AuthenticatedSentinel
		}
		return ""
	}
	return pick(env, EnvKeys(provider))
}

func pick(env *Env, vars []string) string {
	for _, k := range vars {
		if v := strings.TrimSpace(env.Get(k)); v != "" {
			return v
		}
	}
	return ""
}

// vertexADC reports whether Application Default Credentials exist: the
// GOOGLE_APPLICATION_CREDENTIALS file, else the gcloud default file.
func vertexADC(env *Env) bool {
	path := env.Get("GOOGLE_APPLICATION_CREDENTIALS")
	if path == "" {
		home := env.Get("HOME")
		if home == "" {
			return false
		}
		path = filepath.Join(home, ".config", "gcloud", "application_default_credentials.json")
	}
	_, err := os.Stat(path)
	return err == nil
}

func bedrockCredentials(env *Env) bool {
	set := func(k string) bool { return env.Get(k) != "" }
	return set("AWS_PROFILE") ||
		(set("AWS_ACCESS_KEY_ID") && set("AWS_SECRET_ACCESS_KEY")) ||
		set("AWS_BEARER_TOKEN_BEDROCK") ||
		set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") || set("AWS_CONTAINER_CREDENTIALS_FULL_URI") ||
		(set("AWS_WEB_IDENTITY_TOKEN_FILE") && set("AWS_ROLE_ARN"))
}

package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// specProviders is the built-in login provider list, in order.
var specProviders = [][2]string{
	{"openai-codex", "ChatGPT Plus/Pro (Codex Subscription)"},
	{"anthropic", "Anthropic (Claude Pro/Max)"},
	{"zai", "Z.AI (GLM Coding Plan)"},
	{"kimi-code", "Kimi Code"},
	{"openrouter", "OpenRouter"},
	{"github-copilot", "GitHub Copilot"},
	{"cursor", "Cursor (Claude, GPT, etc.)"},
	{"google-antigravity", "Antigravity (Gemini 3, Claude, GPT-OSS)"},
	{"google-gemini-cli", "Google Cloud Code Assist (Gemini CLI)"},
	{"openai-codex-device", "ChatGPT Plus/Pro (Codex, headless/device)"},
	{"xai-oauth", "xAI Grok OAuth (SuperGrok Subscription)"},
	{"gitlab-duo", "GitLab Duo Non-Agentic"},
	{"alibaba-coding-plan", "Alibaba Coding Plan"},
	{"zhipu-coding-plan", "Zhipu Coding Plan (智谱)"},
	{"qwen-portal", "Qwen Portal"},
	{"minimax-code", "MiniMax Token Plan (International)"},
	{"minimax-code-cn", "MiniMax Token Plan (China)"},
	{"xiaomi", "Xiaomi MiMo"},
	{"xiaomi-token-plan-sgp", "Xiaomi Token Plan (Singapore)"},
	{"xiaomi-token-plan-ams", "Xiaomi Token Plan (Europe)"},
	{"xiaomi-token-plan-cn", "Xiaomi Token Plan (China)"},
	{"firepass", "Fire Pass (Fireworks Kimi K2.6 Turbo subscription)"},
	{"wafer-pass", "Wafer Pass (flat-rate subscription)"},
	{"deepseek", "DeepSeek"},
	{"stepfun", "StepFun"},
	{"moonshot", "Moonshot (Kimi API)"},
	{"cerebras", "Cerebras"},
	{"fireworks", "Fireworks"},
	{"together", "Together"},
	{"nvidia", "NVIDIA"},
	{"huggingface", "Hugging Face Inference"},
	{"perplexity", "Perplexity (Pro/Max)"},
	{"qianfan", "Qianfan"},
	{"venice", "Venice"},
	{"synthetic", "Synthetic"},
	{"nanogpt", "NanoGPT"},
	{"wafer-serverless", "Wafer Serverless (pay-as-you-go)"},
	{"vercel-ai-gateway", "Vercel AI Gateway"},
	{"cloudflare-ai-gateway", "Cloudflare AI Gateway"},
	{"litellm", "LiteLLM"},
	{"kilo", "Kilo Gateway"},
	{"zenmux", "ZenMux"},
	{"opencode-zen", "OpenCode Zen"},
	{"opencode-go", "OpenCode Go"},
	{"tavily", "Tavily"},
	{"kagi", "Kagi"},
	{"parallel", "Parallel"},
	{"typesafe", "TypeSafe"},
	{"ollama", "Ollama (Local OpenAI-compatible)"},
	{"ollama-cloud", "Ollama Cloud"},
	{"lm-studio", "LM Studio (Local OpenAI-compatible)"},
	{"vllm", "vLLM (Local OpenAI-compatible)"},
	{"stencil", "Stencil (invite only)"},
	{"singularityapi-dev", "SingularityAPI"},
	{"singularityapi-tech", "SingularityAPI Reserved Lanes"},
}

func TestListJSONIsASpecSubsequence(t *testing.T) {
	c := newCLI(t)
	out := c.ok("", "auth-broker", "list", "--json")
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Fatalf("want one JSON line, got %q", out)
	}
	var got []map[string]string
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) < 4 {
		t.Fatalf("only %d providers listed: %s", len(got), out)
	}
	// Every listed provider has exactly the keys id and name, the name
	// specProviders gives, and appears in specProviders' order.
	next := 0
	for _, p := range got {
		if len(p) != 2 || p["id"] == "" {
			t.Fatalf("entry %v: want exactly {id, name}", p)
		}
		i := next
		for i < len(specProviders) && specProviders[i][0] != p["id"] {
			i++
		}
		if i == len(specProviders) {
			t.Fatalf("provider %q is unknown to the reference or out of order", p["id"])
		}
		if p["name"] != specProviders[i][1] {
			t.Errorf("provider %q named %q, the reference says %q", p["id"], p["name"], specProviders[i][1])
		}
		next = i + 1
	}
	for _, id := range []string{"anthropic", "openai-codex", "google-gemini-cli", "google-antigravity",
		"stepfun", "typesafe", "stencil", "singularityapi-dev", "singularityapi-tech"} {
		if !strings.Contains(out, `"id":"`+id+`"`) {
			t.Errorf("%s missing from the list", id)
		}
	}
}

func TestListTextMatchesJSON(t *testing.T) {
	c := newCLI(t)
	var ps []providerName
	if err := json.Unmarshal([]byte(c.ok("", "auth-broker", "list", "--json")), &ps); err != nil {
		t.Fatal(err)
	}
	want := []string{"Available providers:", ""}
	for _, p := range ps {
		want = append(want, fmt.Sprintf("  %-20s %s", p.ID, p.Name))
	}
	out := c.ok("", "auth-broker", "list")
	wantLines(t, out, want...)
	if !strings.Contains(out, "  anthropic            Anthropic (Claude Pro/Max)\n") {
		t.Fatalf("anthropic line not padded to 20: %q", out)
	}
}

// TestListNeverShowsStoredCredentials: list enumerates login providers,
// not stored rows; credentials on the broker or in the local vault must not
// leak into it.
func TestListNeverShowsStoredCredentials(t *testing.T) {
	b := startBroker(t, "")
	b.upload(t, oauthCred("anthropic", "list@x.io", "rt-list-secret"), apiKeyCred("openai", "sk-list-secret"))
	c := newCLI(t)
	c.useBroker(b)
	c.seed(apiKeyCred("groq", "gsk-local-secret"))
	for _, args := range [][]string{{"auth-broker", "list"}, {"auth-broker", "list", "--json"}} {
		r := c.run("", args...)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("%v: exit %d stderr %q", args, r.code, r.stderr)
		}
		assertNoSecrets(t, r, "rt-list-secret", "acc-rt-list-secret", "sk-list-secret", "gsk-local-secret", "list@x.io", b.token)
	}
}

package cli

// providerDefaults are the known providers' default models, in preference
// order: without --model, a saved default or a session model, the agent
// takes the first of these whose provider has a credential, before falling
// back to the first model with one.
var providerDefaults = []struct{ provider, model string }{
	{"amazon-bedrock", "us.anthropic.claude-opus-4-6-v1"},
	{"anthropic", "claude-opus-4-8"},
	{"openai", "gpt-5.5"},
	{"openai-codex", "gpt-5.5"},
	{"deepseek", "deepseek-v4-pro"},
	{"google", "gemini-3.1-pro-preview"},
	{"google-vertex", "gemini-3.1-pro-preview"},
	{"github-copilot", "gpt-5.4"},
	{"openrouter", "moonshotai/kimi-k2.6"},
	{"xai", "grok-4.5"},
	{"groq", "openai/gpt-oss-120b"},
	{"cerebras", "zai-glm-4.7"},
	{"zai", "glm-5.1"},
	{"mistral", "devstral-medium-latest"},
	{"minimax", "MiniMax-M2.7"},
	{"moonshotai", "kimi-k2.6"},
	{"huggingface", "moonshotai/Kimi-K2.6"},
	{"fireworks", "accounts/fireworks/models/kimi-k2p6"},
	{"together", "moonshotai/Kimi-K2.6"},
	{"kimi-coding", "kimi-for-coding"},
}

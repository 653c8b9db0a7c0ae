// Package provider is the one table of upstream provider identities: API
// base URLs, OAuth client ids, authorize and token URLs, scopes,
// User-Agent strings and anthropic-beta sets. The provider adapters under
// pkg/llm, the OAuth registry (pkg/vault/oauth) and the usage fetchers
// (pkg/vault/usage) read their defaults here, so that one value is changed
// in one place. The Claude Code version (claudecode.go) is the one value
// that can move while the process runs. Every value is the one the reference sends; the
// conformance goldens of pkg/llm and the oauth and usage tests check the
// bytes sent.
//
// An endpoint that needs its own anthropic-beta set has its own named
// constant: the sets differ on purpose.
//
// Public installed-app client ids and secrets are stored base64-encoded,
// as the reference does, so that secret scanners do not flag them; the
// exported variables hold the decoded values.
package provider

import "encoding/base64"

// Anthropic (api.anthropic.com, claude.ai OAuth).
const (
	// AnthropicBaseURL is the Anthropic API origin.
	AnthropicBaseURL = "https://api.anthropic.com"
	// AnthropicAuthorizeURL is the Claude Pro/Max OAuth authorize endpoint.
	AnthropicAuthorizeURL = "https://claude.ai/oauth/authorize"
	// AnthropicTokenURL is the Claude OAuth token endpoint.
	AnthropicTokenURL = "https://api.anthropic.com/v1/oauth/token"
	// AnthropicUsageBaseURL is the base of the Claude usage endpoint;
	// "/usage" is appended.
	AnthropicUsageBaseURL = "https://api.anthropic.com/api/oauth"
	// AnthropicBootstrapPath is the Claude Code bootstrap endpoint (under
	// AnthropicBaseURL) a login asks for the account and organization when
	// the token reply lacks them.
	AnthropicBootstrapPath = "/api/claude_cli/bootstrap"

	// AnthropicRefreshUserAgent is the User-Agent of a Claude OAuth token
	// refresh: the Anthropic TypeScript SDK that Claude Code bundles.
	AnthropicRefreshUserAgent = "anthropic-sdk-typescript/0.112.1 userOAuthProvider"

	// AnthropicBetasMessagesOAuth is the anthropic-beta set of a messages
	// request made with a Claude OAuth token (client betas are merged in).
	AnthropicBetasMessagesOAuth = "claude-code-20250219,oauth-2025-04-20,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14"
	// AnthropicBetasUsage is the anthropic-beta set of the usage request.
	AnthropicBetasUsage = "claude-code-20250219,oauth-2025-04-20,interleaved-thinking-2025-05-14,redact-thinking-2026-02-12,context-management-2025-06-27,prompt-caching-scope-2026-01-05,mid-conversation-system-2026-04-07,advanced-tool-use-2025-11-20,effort-2025-11-24,extended-cache-ttl-2025-04-11"
	// AnthropicBetasRefresh is the anthropic-beta set of a token refresh.
	AnthropicBetasRefresh = "oauth-2025-04-20"
	// AnthropicBetasAntigravityThinking is the anthropic-beta set of an
	// Antigravity request to a Claude reasoning model.
	AnthropicBetasAntigravityThinking = "interleaved-thinking-2025-05-14"
)

// AnthropicClientID is the Claude Code public OAuth client id.
var AnthropicClientID = b64("OWQxYzI1MGEtZTYxYi00NGQ5LTg4ZWQtNTk0NGQxOTYyZjVl")

// AnthropicScopes returns the scopes of a Claude login (a new slice).
func AnthropicScopes() []string {
	return []string{"org:create_api_key", "user:profile", "user:inference", "user:sessions:claude_code",
		"user:mcp_servers", "user:file_upload"}
}

// OpenAI and the ChatGPT Codex backend.
const (
	// OpenAIBaseURL is the OpenAI API base (chat completions, responses).
	OpenAIBaseURL = "https://api.openai.com/v1"
	// CodexBaseURL is the ChatGPT backend base of Codex requests and usage.
	CodexBaseURL = "https://chatgpt.com/backend-api"
	// CodexAuthorizeURL is the ChatGPT OAuth authorize endpoint.
	CodexAuthorizeURL = "https://auth.openai.com/oauth/authorize"
	// CodexTokenURL is the ChatGPT OAuth token endpoint.
	CodexTokenURL = "https://auth.openai.com/oauth/token"
	// CodexClientID is the Codex CLI public OAuth client id.
	CodexClientID = "app_EMoamEEZ73f0CkXaXp7hrann"
	// CodexOriginator is the originator value of Codex logins and requests.
	CodexOriginator = "omp"
	// CodexClientVersion is the Codex client version header value (the
	// backend gates models on it).
	CodexClientVersion = "0.155.1"
	// CodexUsageUserAgent is the User-Agent of the Codex usage request.
	CodexUsageUserAgent = "OpenCode-Status-Plugin/1.0"
	// OpenAIAuthClaim and OpenAIProfileClaim are the ChatGPT id/access
	// token claims holding the account and the profile.
	OpenAIAuthClaim    = "https://api.openai.com/auth"
	OpenAIProfileClaim = "https://api.openai.com/profile"
)

// CodexScopes returns the scopes of a ChatGPT login (a new slice).
func CodexScopes() []string {
	return []string{"openid", "profile", "email", "offline_access", "api.connectors.read", "api.connectors.invoke"}
}

// Google: Gemini API, Cloud Code Assist (Gemini CLI) and Antigravity.
const (
	// GeminiBaseURL is the Gemini API base.
	GeminiBaseURL = "https://generativelanguage.googleapis.com/v1beta"
	// CodeAssistURL is the Cloud Code Assist root of Gemini CLI requests
	// and usage.
	CodeAssistURL = "https://cloudcode-pa.googleapis.com"
	// AntigravityURL is the Antigravity root tried first.
	AntigravityURL = "https://daily-cloudcode-pa.googleapis.com"
	// AntigravitySandboxURL is the Antigravity fallback root.
	AntigravitySandboxURL = "https://daily-cloudcode-pa.sandbox.googleapis.com"
	// GoogleAuthorizeURL is Google's OAuth authorize endpoint.
	GoogleAuthorizeURL = "https://accounts.google.com/o/oauth2/v2/auth"
	// GoogleUserinfoURL is where a Google login reads the account email.
	GoogleUserinfoURL = "https://www.googleapis.com/oauth2/v1/userinfo?alt=json"
	// GoogleTokenURL is Google's OAuth token endpoint.
	GoogleTokenURL = "https://oauth2.googleapis.com/token"

	// GeminiCLIVersion is the Gemini CLI version of the User-Agent.
	GeminiCLIVersion = "0.46.0"
	// GeminiCLIUsageUserAgent is the User-Agent of the Gemini CLI usage
	// request, with a fixed model and platform.
	GeminiCLIUsageUserAgent = "GeminiCLI/" + GeminiCLIVersion + "/gemini-3.1-pro-preview (linux; x64; terminal)"
	// AntigravityVersion is the Antigravity client version of the User-Agent.
	AntigravityVersion = "2.8.0"
	// AntigravityChangelist is the client changelist of the User-Agent.
	AntigravityChangelist = "963137146"
	// AntigravityUserAgent is the Antigravity User-Agent at
	// AntigravityVersion, pinned to the darwin/arm64 client the reference
	// captured.
	AntigravityUserAgent = "antigravity/hub/" + AntigravityVersion + " (aidev_client; os_type=darwin; arch=arm64; cl=" + AntigravityChangelist + ")"
)

// AntigravityUserAgentVersion returns the Antigravity User-Agent for
// another client version.
func AntigravityUserAgentVersion(version string) string {
	return "antigravity/hub/" + version + " (aidev_client; os_type=darwin; arch=arm64; cl=" + AntigravityChangelist + ")"
}

// Google installed-app OAuth clients (public values).
var (
	// GeminiCLIClientID and GeminiCLIClientSecret identify the Gemini CLI.
	GeminiCLIClientID     = b64("NjgxMjU1ODA5Mzk1LW9vOGZ0Mm9wcmRybnA5ZTNhcWY2YXYzaG1kaWIxMzVqLmFwcHMuZ29vZ2xldXNlcmNvbnRlbnQuY29t")
	GeminiCLIClientSecret = b64("R09DU1BYLTR1SGdNUG0tMW83U2stZ2VWNkN1NWNsWEZzeGw=")
	// AntigravityClientID and AntigravityClientSecret identify Antigravity.
	AntigravityClientID     = b64("MTA3MTAwNjA2MDU5MS10bWhzc2luMmgyMWxjcmUyMzV2dG9sb2poNGc0MDNlcC5hcHBzLmdvb2dsZXVzZXJjb250ZW50LmNvbQ==")
	AntigravityClientSecret = b64("R09DU1BYLUs1OEZXUjQ4NkxkTEoxbUxCOHNYQzR6NnFEQWY=")
)

// GoogleScopes returns the scopes of a Gemini CLI login (a new slice).
func GoogleScopes() []string {
	return []string{
		"https://www.googleapis.com/auth/cloud-platform",
		"https://www.googleapis.com/auth/userinfo.email",
		"https://www.googleapis.com/auth/userinfo.profile",
	}
}

// AntigravityScopes returns the scopes of an Antigravity login: the
// Google scopes plus cclog and experimentsandconfigs (a new slice).
func AntigravityScopes() []string {
	return append(GoogleScopes(), "https://www.googleapis.com/auth/cclog",
		"https://www.googleapis.com/auth/experimentsandconfigs")
}

// GitLab Duo.
const (
	// GitLabAuthorizeURL is the GitLab OAuth authorize endpoint.
	GitLabAuthorizeURL = "https://gitlab.com/oauth/authorize"
	// GitLabTokenURL is the GitLab OAuth token endpoint.
	GitLabTokenURL = "https://gitlab.com/oauth/token"
	// GitLabClientID is the GitLab Duo public OAuth client id.
	GitLabClientID = "da4edff2e6ebd2bc3208611e2768bc1c1dd7be791dc5ff26ca34ca9ee44f7d4b"
)

// GitLabScopes returns the scopes of a GitLab Duo login (a new slice).
func GitLabScopes() []string { return []string{"api"} }

// Stencil (stencil.so, invite only).
const (
	// StencilAuthorizeURL is the Stencil OAuth authorize endpoint.
	StencilAuthorizeURL = "https://auth.stencil.so/oauth/authorize"
	// StencilTokenURL is the Stencil OAuth token endpoint.
	StencilTokenURL = "https://auth.stencil.so/oauth/token"
	// StencilUserinfoURL is the OpenID userinfo endpoint a login reads the
	// account email (email) and id (sub) from.
	StencilUserinfoURL = "https://auth.stencil.so/oauth/userinfo"
	// StencilClientID is the public OAuth client id of omp at Stencil.
	StencilClientID = "omp"
)

// StencilScopes returns the scopes of a Stencil login (a new slice).
func StencilScopes() []string { return []string{"openid", "profile", "email", "offline_access"} }

// Usage endpoints of the API-key and Copilot providers.
const (
	// CopilotAPIURL is the GitHub API origin of the Copilot usage request.
	CopilotAPIURL = "https://api.github.com"
	// CopilotUserAgent is the User-Agent of the Copilot usage request.
	CopilotUserAgent = "copilot/1.0.82"
	// ZaiBaseURL is the z.ai API origin.
	ZaiBaseURL = "https://api.z.ai"
	// KimiBaseURL is the Kimi coding API base.
	KimiBaseURL = "https://api.kimi.com/coding/v1"
	// KimiVersion is the Kimi CLI version sent in User-Agent and
	// X-Msh-Version.
	KimiVersion = "15.11.7"
)

// b64 decodes a public client credential stored base64-encoded. The
// inputs are the constants above; TestClientIDs checks the decoded values.
func b64(s string) string {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic("provider: bad base64 constant " + s)
	}
	return string(b)
}

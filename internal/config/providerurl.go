package config

import "strings"

// URL kinds for ProviderURL: the config.yml key names under providers.<id>.
const (
	TokenURL = "tokenUrl"
	UsageURL = "usageUrl"
	BaseURL  = "baseUrl"
)

var urlEnvSuffix = map[string]string{TokenURL: "_TOKEN_URL", UsageURL: "_USAGE_URL", BaseURL: "_BASE_URL"}

// ProviderURLEnv returns the environment variable that overrides kind for
// provider: OMP_PROVIDER_<ID>_TOKEN_URL / _USAGE_URL / _BASE_URL, where <ID>
// is the provider id upper-cased with '-' and '.' replaced by '_'. It
// returns "" for an unknown kind.
func ProviderURLEnv(provider, kind string) string {
	suffix, ok := urlEnvSuffix[kind]
	if !ok {
		return ""
	}
	id := strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(provider))
	return "OMP_PROVIDER_" + id + suffix
}

// ProviderURL returns the configured override of a provider endpoint:
// the environment variable of ProviderURLEnv wins over config.yml
// providers.<id>.tokenUrl|usageUrl|baseUrl; "" when neither is set (the
// caller then uses its built-in default). env and s may be nil.
func ProviderURL(env *Env, s *Settings, provider, kind string) string {
	name := ProviderURLEnv(provider, kind)
	if name == "" {
		return ""
	}
	if v := strings.TrimSpace(env.Get(name)); v != "" {
		return v
	}
	if s == nil {
		return ""
	}
	p := s.Providers[provider]
	switch kind {
	case TokenURL:
		return strings.TrimSpace(p.TokenURL)
	case UsageURL:
		return strings.TrimSpace(p.UsageURL)
	default:
		return strings.TrimSpace(p.BaseURL)
	}
}

// URLs binds ProviderURL to one environment and settings. Its method value
// u.URL is a plain func(provider, kind string) string that provider
// packages take as their endpoint-override hook.
type URLs struct {
	Env      *Env
	Settings *Settings
}

// URL returns ProviderURL(u.Env, u.Settings, provider, kind).
func (u URLs) URL(provider, kind string) string {
	return ProviderURL(u.Env, u.Settings, provider, kind)
}

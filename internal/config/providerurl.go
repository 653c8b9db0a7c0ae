package config

import "strings"

// URL kinds for ProviderURL: the config.yml key names under providers.<id>.
const (
	TokenURL     = "tokenUrl"
	UsageURL     = "usageUrl"
	BaseURL      = "baseUrl"
	AuthorizeURL = "authorizeUrl" // OAuth login: the authorization endpoint
	UserinfoURL  = "userinfoUrl"  // Google login: where the account email is read
	// RedirectURI is the OAuth login's redirect URI (a self-registered OAuth
	// application; a loopback URI with port 0 listens on a free port).
	RedirectURI = "redirectUri"
	// ClientID is the OAuth client id (a self-registered application); for
	// gitlab-duo the reference's GITLAB_CLIENT_ID is honoured too. Login and
	// the broker's refresher read it, so both use the same client.
	ClientID = "clientId"
)

// referenceEnv are the reference's own override variables, read after ours.
var referenceEnv = map[[2]string]string{
	{"gitlab-duo", ClientID}:    "GITLAB_CLIENT_ID",
	{"gitlab-duo", RedirectURI}: "GITLAB_REDIRECT_URI",
}

var urlEnvSuffix = map[string]string{TokenURL: "_TOKEN_URL", UsageURL: "_USAGE_URL", BaseURL: "_BASE_URL",
	AuthorizeURL: "_AUTHORIZE_URL", UserinfoURL: "_USERINFO_URL", RedirectURI: "_REDIRECT_URI", ClientID: "_CLIENT_ID"}

// ProviderURLEnv returns the environment variable that overrides kind for
// provider: OMP_PROVIDER_<ID>_TOKEN_URL / _USAGE_URL / _BASE_URL, where <ID>
// is the provider id upper-cased with '-' and '.' replaced by '_'. It
// returns "" for an unknown kind.
func ProviderURLEnv(provider, kind string) string {
	suffix, ok := urlEnvSuffix[kind]
	if !ok {
		return ""
	}
	return "OMP_PROVIDER_" + envID(provider) + suffix
}

// envID is provider upper-cased with '-' and '.' replaced by '_' (the
// gateway asks for a base URL per request: no replacer per call).
func envID(provider string) string {
	for i := range len(provider) {
		if provider[i] >= 0x80 { // not a catalog id: upper-case it as Unicode
			return strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(provider))
		}
	}
	b := make([]byte, len(provider))
	for i := range len(provider) {
		switch c := provider[i]; {
		case c == '-' || c == '.':
			b[i] = '_'
		case 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		default:
			b[i] = c
		}
	}
	return string(b)
}

// ProviderURL returns the configured override of a provider endpoint:
// the environment variable of ProviderURLEnv wins over config.yml
// providers.<id>.tokenUrl|usageUrl|baseUrl|authorizeUrl|userinfoUrl|redirectUri|clientId (and, for gitlab-duo, the
// reference's GITLAB_CLIENT_ID / GITLAB_REDIRECT_URI after those); "" when neither is set (the
// caller then uses its built-in default). env and s may be nil.
func ProviderURL(env *Env, s *Settings, provider, kind string) string {
	name := ProviderURLEnv(provider, kind)
	if name == "" {
		return ""
	}
	if v := strings.TrimSpace(env.Get(name)); v != "" {
		return v
	}
	if v := configured(s, provider, kind); v != "" {
		return v
	}
	if ref := referenceEnv[[2]string{provider, kind}]; ref != "" {
		return strings.TrimSpace(env.Get(ref))
	}
	return ""
}

// configured is the config.yml value of providers.<provider>.<kind>.
func configured(s *Settings, provider, kind string) string {
	if s == nil {
		return ""
	}
	p := s.Providers[provider]
	switch kind {
	case TokenURL:
		return strings.TrimSpace(p.TokenURL)
	case UsageURL:
		return strings.TrimSpace(p.UsageURL)
	case AuthorizeURL:
		return strings.TrimSpace(p.AuthorizeURL)
	case UserinfoURL:
		return strings.TrimSpace(p.UserinfoURL)
	case RedirectURI:
		return strings.TrimSpace(p.RedirectURI)
	case ClientID:
		return strings.TrimSpace(p.ClientID)
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

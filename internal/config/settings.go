package config

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxSettingsFile bounds how much of config.yml is read.
const maxSettingsFile = 4 << 20

// Settings holds the config.yml keys this module reads.
// The zero value is "no config file".
type Settings struct {
	// Path is the file that was read, "" when none was.
	Path string

	// BrokerURL and BrokerToken are auth.broker.url and auth.broker.token,
	// unresolved (see Resolver). "" when absent or not a string.
	BrokerURL   string
	BrokerToken string

	// CodexResets is the codexResets.* group.
	CodexResets CodexResets

	// SecretsEnabled is secrets.enabled (default false): the
	// agent obfuscates secrets in every model request.
	SecretsEnabled bool

	// root is the whole document, for the typed getters (agentsettings.go).
	root map[string]any

	// Providers holds providers.<id>.{tokenUrl,usageUrl,baseUrl,authorizeUrl,userinfoUrl,redirectUri,clientId},
	// by provider id.
	Providers map[string]ProviderURLs
}

// CodexResets is the codexResets.* settings group.
type CodexResets struct {
	AutoRedeem        bool    // default false; true for `true` or "yes"
	MinBlockedMinutes float64 // default 60
	KeepCredits       float64 // default 0
}

// ProviderURLs are the per-provider endpoint overrides of config.yml.
type ProviderURLs struct {
	TokenURL string `yaml:"tokenUrl"`
	UsageURL string `yaml:"usageUrl"`
	BaseURL  string `yaml:"baseUrl"`
	// AuthorizeURL, UserinfoURL and RedirectURI are read by `omp auth-broker
	// login`; ClientID by login and the refresher.
	AuthorizeURL string `yaml:"authorizeUrl"`
	UserinfoURL  string `yaml:"userinfoUrl"`
	RedirectURI  string `yaml:"redirectUri"`
	ClientID     string `yaml:"clientId"`
}

// DefaultCodexResets returns the documented defaults.
func DefaultCodexResets() CodexResets { return CodexResets{MinBlockedMinutes: 60} }

// LoadSettings reads <agentDir>/config.yml, falling back to config.yaml when
// config.yml does not exist. A missing file or an empty document yields
// empty settings. A file that cannot be read, is not YAML ("<path> contains
// invalid YAML: …") or is not a mapping ("<path> must contain a YAML
// object") is an error naming the file: a command must not run on settings
// it silently dropped. Untrusted command values are warned about on log,
// which may be nil (slog.Default()).
func LoadSettings(agentDir string, log *slog.Logger) (*Settings, error) {
	if log == nil {
		log = slog.Default()
	}
	for _, name := range []string{"config.yml", "config.yaml"} {
		path := filepath.Join(agentDir, name)
		data, info, err := readLimitedInfo(path, maxSettingsFile)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("unable to read %s: %w", path, err)
		}
		s, err := ParseSettings(data)
		if errors.Is(err, errNotObject) {
			return nil, fmt.Errorf("%s must contain a YAML object", path)
		}
		if err != nil {
			return nil, fmt.Errorf("%s contains invalid YAML: %w", path, err)
		}
		s.Path = path
		s.refuseUntrustedCommands(info, log)
		return s, nil
	}
	return emptySettings(), nil
}

// errNotObject is ParseSettings' error for a document that is not a
// mapping (an empty document is an empty mapping).
var errNotObject = errors.New("not a YAML object")

// refuseUntrustedCommands clears the "!command" values of a config file
// that CheckCommandFile does not trust, with a warning naming the file and
// key: a command runs only from a file the user owns and others cannot
// write.
func (s *Settings) refuseUntrustedCommands(info fs.FileInfo, log *slog.Logger) {
	fields := []struct {
		key   string
		value *string
	}{{"auth.broker.url", &s.BrokerURL}, {"auth.broker.token", &s.BrokerToken}}
	var trust error
	checked := false
	for _, f := range fields {
		if !strings.HasPrefix(*f.value, "!") {
			continue
		}
		if !checked {
			trust, checked = CheckCommandFile(s.Path, info), true
		}
		if trust != nil {
			log.Warn((&CommandRefusedError{Path: s.Path, Key: f.key, Reason: trust}).Error())
			*f.value = ""
		}
	}
}

func emptySettings() *Settings { return &Settings{CodexResets: DefaultCodexResets()} }

// ParseSettings decodes a config.yml document. Dotted keys are read in the
// nested form (auth: {broker: {url}}) and the flat form ("auth.broker.url"),
// nested winning; only values of the expected type count. An empty document
// is empty settings; a document that is not a mapping is errNotObject. A
// YAML syntax error never contains file content beyond the YAML library's
// position information.
func ParseSettings(data []byte) (s *Settings, err error) {
	var doc any
	defer func() {
		// yaml.v3 has panicked on hostile input in the past; treat it as invalid.
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("invalid YAML: %v", r)
		}
	}()
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	s = emptySettings()
	if doc == nil {
		return s, nil
	}
	root, ok := asMap(doc)
	if !ok {
		return nil, errNotObject
	}
	s.root = root
	s.BrokerURL, _ = lookup(root, "auth.broker.url", isString).(string)
	s.BrokerToken, _ = lookup(root, "auth.broker.token", isString).(string)
	switch v := lookup(root, "codexResets.autoRedeem", isBoolOrString).(type) {
	case bool:
		s.CodexResets.AutoRedeem = v
	case string:
		s.CodexResets.AutoRedeem = strings.EqualFold(v, "yes") || strings.EqualFold(v, "true")
	}
	switch v := lookup(root, "secrets.enabled", isBoolOrString).(type) {
	case bool:
		s.SecretsEnabled = v
	case string:
		s.SecretsEnabled = strings.EqualFold(v, "true")
	}
	if f, ok := number(lookup(root, "codexResets.minBlockedMinutes", isNumber)); ok {
		s.CodexResets.MinBlockedMinutes = f
	}
	if f, ok := number(lookup(root, "codexResets.keepCredits", isNumber)); ok {
		s.CodexResets.KeepCredits = f
	}
	if provs, ok := asMap(root["providers"]); ok {
		for id, raw := range provs {
			m, ok := asMap(raw)
			if !ok {
				continue
			}
			var p ProviderURLs
			p.TokenURL, _ = m["tokenUrl"].(string)
			p.UsageURL, _ = m["usageUrl"].(string)
			p.BaseURL, _ = m["baseUrl"].(string)
			p.AuthorizeURL, _ = m["authorizeUrl"].(string)
			p.UserinfoURL, _ = m["userinfoUrl"].(string)
			p.RedirectURI, _ = m["redirectUri"].(string)
			p.ClientID, _ = m["clientId"].(string)
			if p != (ProviderURLs{}) {
				if s.Providers == nil {
					s.Providers = map[string]ProviderURLs{}
				}
				s.Providers[id] = p
			}
		}
	}
	return s, nil
}

// lookup resolves a dotted key: the nested path first, then the flat key;
// a value counts only when want accepts it.
func lookup(root map[string]any, dotted string, want func(any) bool) any {
	var cur any = root
	for _, seg := range strings.Split(dotted, ".") {
		m, ok := asMap(cur)
		if !ok {
			cur = nil
			break
		}
		cur = m[seg]
	}
	if cur != nil && want(cur) {
		return cur
	}
	if flat := root[dotted]; flat != nil && want(flat) {
		return flat
	}
	return nil
}

func isString(v any) bool { _, ok := v.(string); return ok }

func isBoolOrString(v any) bool {
	switch v.(type) {
	case bool, string:
		return true
	}
	return false
}

func isNumber(v any) bool { _, ok := number(v); return ok }

// asMap normalises the two mapping shapes yaml.v3 produces.
func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, v := range m {
			if ks, ok := k.(string); ok {
				out[ks] = v
			}
		}
		return out, true
	}
	return nil, false
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
		return f, err == nil
	}
	return 0, false
}

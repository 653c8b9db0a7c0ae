package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/agent"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/catalog"
	"github.com/ompgo/omp/pkg/llm/upstream"
	vaultpick "github.com/ompgo/omp/pkg/vault/pick"
)

// keyLadder resolves a provider's credential, first found wins: --api-key, the
// models.yml apiKey, the broker's credentials (broker mode; without a broker
// the local vault's), then the provider's environment variables.
type keyLadder struct {
	flag     string
	models   *catalog.File
	env      *config.Env
	resolver *config.Resolver
	broker   *agentBroker // nil outside broker mode
	session  string       // the session id, for sticky broker credentials
	// fromBroker: the latest credential came from the broker's picker.
	fromBroker bool
}

// usageLimit reports the usage limit of a turn's broker credential to the
// picker, naming it by its bearer (which blocks it and posts the block to
// the broker), and whether another account is free; false outside broker
// mode or for a credential that did not come from the broker.
func (k *keyLadder) usageLimit(ctx context.Context, ul agent.UsageLimit) bool {
	if k.broker == nil || !k.fromBroker {
		return false
	}
	sw, err := k.broker.picker.MarkUsageLimitReached(ctx, ul.Model.Provider, k.session,
		vaultpick.LimitOptions{RetryAfter: ul.RetryAfter, ModelID: ul.Model.ID, Key: ul.Credential.Secret})
	return err == nil && sw.Switched
}

// policyDenied reports an account-policy denial of a turn's broker
// credential to the picker — which blocks the account 60 s, for the model
// only when the denial names it, and posts the block to the broker
// — and returns the credential the picker chooses next when
// a sibling is free; false outside broker mode or for a credential that
// did not come from the broker.
func (k *keyLadder) policyDenied(ctx context.Context, d agent.PolicyDenied) (llm.Credential, bool) {
	if k.broker == nil || !k.fromBroker {
		return llm.Credential{}, false
	}
	sw, err := k.broker.picker.MarkPolicyDenied(ctx, d.Model.Provider, k.session,
		vaultpick.PolicyOptions{ModelID: d.Model.ID, Key: d.Credential.Secret, ModelOnly: d.ModelOnly})
	if err != nil || !sw.Switched {
		return llm.Credential{}, false
	}
	c, err := k.credential(ctx, d.Model)
	return c, err == nil && k.fromBroker && c.Secret != d.Credential.Secret
}

func (k *keyLadder) key(ctx context.Context, provider string) (string, bool) {
	if p, ok := k.models.Providers[provider]; ok {
		if p.Auth == "none" {
			return "", true
		}
		if p.APIKey != "" {
			if v, ok := k.resolver.Resolve(ctx, p.APIKey); ok {
				return v, true
			}
		}
	}
	if v := config.EnvAPIKey(k.env, provider); v != "" {
		return v, true
	}
	return "", false
}

// refuseUntrustedKeyCommands clears the "!command" apiKey values of the
// models file in agentDir (models.yml, else models.json) when
// config.CheckCommandFile does not trust that file, with a warning on warn
// naming the file and key: a command runs only from a file the user owns
// and others cannot write.
func refuseUntrustedKeyCommands(models *catalog.File, agentDir string, warn io.Writer) {
	var ids []string
	for id, p := range models.Providers {
		if strings.HasPrefix(p.APIKey, "!") {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return
	}
	slices.Sort(ids)
	path := filepath.Join(agentDir, "models.yml")
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		path = filepath.Join(agentDir, "models.json")
		info, err = os.Stat(path)
	}
	if err == nil {
		err = config.CheckCommandFile(path, info)
	}
	if err == nil {
		return
	}
	for _, id := range ids {
		p := models.Providers[id]
		p.APIKey = ""
		models.Providers[id] = p
		fmt.Fprintf(warn, "Warning: %v\n", &config.CommandRefusedError{Path: path, Key: "providers." + id + ".apiKey", Reason: err})
	}
}

// available reports whether provider has a credential on the ladder.
func (k *keyLadder) available(ctx context.Context, provider string) bool {
	if _, ok := k.key(ctx, provider); ok {
		return true
	}
	return k.broker != nil && k.broker.has(ctx, provider)
}

func (k *keyLadder) credential(ctx context.Context, m llm.Model) (llm.Credential, error) {
	if k.flag != "" {
		return llm.APIKey(k.flag), nil
	}
	if p, ok := k.models.Providers[m.Provider]; (!ok || p.APIKey == "" && p.Auth != "none") && k.broker != nil {
		c, found, err := k.broker.credential(ctx, m.Provider, k.session, m.ID)
		if err != nil {
			return llm.Credential{}, fmt.Errorf("auth broker: %w", err)
		}
		if k.fromBroker = found; found {
			return c, nil
		}
	}
	k.fromBroker = false
	v, ok := k.key(ctx, m.Provider)
	if !ok {
		return llm.Credential{}, k.missing(m)
	}
	if m.Provider == "anthropic" && strings.HasPrefix(v, "sk-ant-oat") {
		return llm.OAuthToken(v), nil
	}
	return llm.APIKey(v), nil
}

// missing is the error for a model whose provider has no credential on the
// ladder: it names the model, the provider and the ways to add one (the
// broker login in broker mode, else omp login and the environment
// variable).
func (k *keyLadder) missing(m llm.Model) error {
	envVar := "the provider's environment variable"
	if names := config.EnvKeys(m.Provider); len(names) > 0 {
		envVar = strings.Join(names, " or ")
	}
	article := "a "
	if strings.ContainsRune("aeiou", rune(m.Provider[0])) {
		article = "an "
	}
	needs := fmt.Sprintf("No API key for provider %q: model %s needs %s%s credential", m.Provider, m.Key(), article, m.Provider)
	if k.broker != nil && k.broker.vault != "" {
		return fmt.Errorf("%s and the local vault holds none; run omp login %s, or set %s", needs, m.Provider, envVar)
	}
	if k.broker != nil {
		return fmt.Errorf("%s and the auth broker holds none; run omp auth-broker login %s, or set %s", needs, m.Provider, envVar)
	}
	return fmt.Errorf("%s; run omp login %s, set %s, pass --api-key, or set apiKey in models.yml", needs, m.Provider, envVar)
}

// refresh force-refreshes the session's broker credential for m's
// provider (after an upstream 401/403); outside broker mode there is
// nothing to refresh.
func (k *keyLadder) refresh(ctx context.Context, m llm.Model) (llm.Credential, error) {
	if k.broker == nil {
		return llm.Credential{}, errors.New("no refreshable credential")
	}
	c, found, err := k.broker.refresh(ctx, m.Provider, k.session, m.ID)
	if err == nil && !found {
		err = fmt.Errorf("auth broker: no credential for provider %q", m.Provider)
	}
	return c, err
}

// pickModel resolves the selector, else the session's model, else the
// default model of the first known provider with a credential, else the
// first model with a credential (models.yml providers first).
func pickModel(ctx context.Context, cat *llm.Catalog, sel, sessionModel string, keys *keyLadder) (llm.Model, error) {
	if sel != "" {
		if p, id, ok := strings.Cut(sel, "/"); ok {
			if m, found := cat.Lookup(p, id); found {
				return m, nil
			}
		} else if ms := cat.ByID(sel); len(ms) > 0 {
			return ms[0], nil
		}
		return llm.Model{}, fmt.Errorf("Model %q not found", sel)
	}
	if sessionModel != "" {
		p, id := session.SplitModelKey(sessionModel)
		if m, ok := cat.Lookup(p, id); ok {
			return m, nil
		}
	}
	for _, d := range providerDefaults {
		if m, ok := cat.Lookup(d.provider, d.model); ok && (keys.flag != "" || keys.available(ctx, d.provider)) {
			return m, nil
		}
	}
	custom := make([]string, 0, len(keys.models.Providers))
	for id := range keys.models.Providers {
		custom = append(custom, id)
	}
	slices.Sort(custom)
	for _, p := range append(custom, cat.Providers()...) {
		if keys.flag == "" && !keys.available(ctx, p) {
			continue
		}
		for _, m := range cat.Models() {
			if m.Provider == p && m.ModelKind() == llm.KindChat {
				return m, nil
			}
		}
	}
	return llm.Model{}, errors.New("No models available: run omp login, configure the auth broker (OMP_AUTH_BROKER_URL) or set provider API keys")
}

// newProvider returns the upstream provider of a model's wire API; base
// (the OMP_PROVIDER_<ID>_BASE_URL / config override, may be "") beats the
// model's baseUrl.
func newProvider(m llm.Model, base string) (llm.Provider, error) {
	p, err := upstream.New(m, upstream.Options{BaseURL: base, Client: &http.Client{}})
	if err != nil {
		return nil, fmt.Errorf("model %s uses api %q, which this build does not support", m.Key(), m.API)
	}
	return p, nil
}

package config

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/singleflight"
)

// Environment variables that select and authenticate the broker.
const (
	EnvBrokerURL   = "OMP_AUTH_BROKER_URL"
	EnvBrokerToken = "OMP_AUTH_BROKER_TOKEN"
)

// Token sources reported in Broker.TokenSource.
const (
	TokenFromEnv    = "env"
	TokenFromConfig = "config"
	TokenFromFile   = "file"
)

// Broker is a resolved broker connection.
type Broker struct {
	// URL is the broker base URL exactly as resolved (trailing slash kept:
	// the snapshot cache binds it verbatim).
	URL string
	// Token is the bearer token. Secret: never log it.
	Token string
	// TokenSource says where Token came from: TokenFromEnv, TokenFromConfig or TokenFromFile.
	TokenSource string
}

// String never prints the token.
func (b Broker) String() string { return "broker " + b.URL + " (token from " + b.TokenSource + ")" }

// GoString never prints the token either.
func (b Broker) GoString() string { return b.String() }

// MissingTokenError is returned when a broker URL is configured but no
// bearer token is available. Error is the exact reference text.
type MissingTokenError struct {
	URL       string // the resolved broker URL
	TokenPath string // <config-dir>/auth-broker.token
}

// Error returns the exact reference message.
func (e *MissingTokenError) Error() string {
	return fmt.Sprintf("OMP_AUTH_BROKER_URL is set (%s) but no bearer token is available. "+
		"Set OMP_AUTH_BROKER_TOKEN, the `auth.broker.token` config entry, or place one at %s.", e.URL, e.TokenPath)
}

// ResolveBroker resolves the broker connection:
//
//  1. URL: OMP_AUTH_BROKER_URL from env, else auth.broker.url resolved
//     through resolver (an unresolved !command leaves the broker off);
//  2. token: OMP_AUTH_BROKER_TOKEN, else auth.broker.token resolved through
//     resolver (resolved even when the URL came from env), else the token
//     file <config-dir>/auth-broker.token (missing or blank → absent,
//     unreadable → warning `auth-broker token file unreadable` and absent).
//
// It returns nil, nil when no URL is configured and *MissingTokenError when
// a URL is set but no token is available. settings is consulted only when
// the URL or token env var is unset; nil settings are loaded from
// dirs.AgentDir on demand. Warnings go to resolver.Logger.
func ResolveBroker(ctx context.Context, env *Env, dirs Dirs, settings *Settings, resolver *Resolver) (*Broker, error) {
	if resolver == nil {
		resolver = NewResolver(env)
	}
	log := resolver.logger()
	url := env.Get(EnvBrokerURL)
	envToken := env.Get(EnvBrokerToken)
	var configToken string
	if url == "" || envToken == "" {
		if settings == nil {
			var err error
			if settings, err = LoadSettings(dirs.AgentDir, log); err != nil {
				return nil, err
			}
		}
		if url == "" && settings.BrokerURL != "" {
			url, _ = resolver.Resolve(ctx, settings.BrokerURL)
		}
		if settings.BrokerToken != "" {
			configToken, _ = resolver.Resolve(ctx, settings.BrokerToken)
		}
	}
	if url == "" {
		return nil, nil
	}
	b := &Broker{URL: url}
	switch {
	case envToken != "":
		b.Token, b.TokenSource = envToken, TokenFromEnv
	case configToken != "":
		b.Token, b.TokenSource = configToken, TokenFromConfig
	default:
		tok, err := ReadToken(dirs.BrokerTokenPath())
		if err != nil {
			log.Warn("auth-broker token file unreadable", "path", dirs.BrokerTokenPath(), "error", err.Error())
		}
		if tok == "" {
			return nil, &MissingTokenError{URL: url, TokenPath: dirs.BrokerTokenPath()}
		}
		b.Token, b.TokenSource = tok, TokenFromFile
	}
	return b, nil
}

// BrokerCache memoises ResolveBroker for a process, keyed on the URL and
// token env values and the agent dir. Failures are not
// memoised; concurrent callers share one resolution. The zero value is
// ready to use.
type BrokerCache struct {
	group singleflight.Group
	mu    sync.Mutex
	key   string  // guarded by mu
	val   *Broker // guarded by mu; nil with ok=true means "no broker"
	ok    bool    // guarded by mu
}

// Resolve returns the memoised result for the current key, resolving it
// with ResolveBroker on a miss.
func (c *BrokerCache) Resolve(ctx context.Context, env *Env, dirs Dirs, settings *Settings, resolver *Resolver) (*Broker, error) {
	key := env.Get(EnvBrokerURL) + "\x00" + env.Get(EnvBrokerToken) + "\x00" + dirs.AgentDir
	c.mu.Lock()
	if c.ok && c.key == key {
		v := c.val
		c.mu.Unlock()
		return v, nil
	}
	c.mu.Unlock()
	v, err, _ := c.group.Do(key, func() (any, error) {
		b, err := ResolveBroker(ctx, env, dirs, settings, resolver)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.key, c.val, c.ok = key, b, true
		c.mu.Unlock()
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Broker), nil
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"syscall"

	"github.com/ompgo/omp/internal/clitext"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/internal/httpx"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
)

// brokerStartHint is the fix for a broker that cannot be reached.
const brokerStartHint = "start it (omp auth-broker serve) or check OMP_AUTH_BROKER_URL"

// tokenSource names where the broker token came from, as a person looks
// for it: the environment variable, the config.yml entry or the token file.
func tokenSource(b *config.Broker, dirs config.Dirs) string {
	switch b.TokenSource {
	case config.TokenFromEnv:
		return "env " + config.EnvBrokerToken
	case config.TokenFromConfig:
		return "config.yml auth.broker.token (" + dirs.ConfigYML() + ")"
	}
	return dirs.BrokerTokenPath()
}

// tokenFix says where to correct a token the broker rejected.
func tokenFix(b *config.Broker, dirs config.Dirs) string {
	switch b.TokenSource {
	case config.TokenFromEnv:
		return "check " + config.EnvBrokerToken + ", or unset it to use the token in " + dirs.BrokerTokenPath()
	case config.TokenFromConfig:
		return "check auth.broker.token in " + dirs.ConfigYML() + " or " + config.EnvBrokerToken
	}
	return "check the token in " + dirs.BrokerTokenPath() + " or " + config.EnvBrokerToken
}

// brokerAuthFailed reports whether err is the broker refusing the client's
// own token (401 or 403): never transient, so never retried.
func brokerAuthFailed(err error) (status int, ok bool) {
	var be *brokerclient.Error
	if errors.As(err, &be) && (be.Status == http.StatusUnauthorized || be.Status == http.StatusForbidden) {
		return be.Status, true
	}
	return 0, false
}

// unreachableError is the error of a broker that refused every connection.
func unreachableError(b *config.Broker, err error) error {
	return fmt.Errorf("auth broker %s is unreachable: %s; %s", b.URL, httpx.Reason(err), brokerStartHint)
}

// brokerUnreachable reports whether err is a request that reached no
// broker: every attempt had its connection refused.
func brokerUnreachable(err error) bool {
	var be *brokerclient.Error
	return errors.As(err, &be) && be.Status == 0 && errors.Is(err, syscall.ECONNREFUSED)
}

// brokerFailure is brokerError, except that a broker refusing every
// connection is named as unreachable, with its URL and how to start it.
func brokerFailure(b *config.Broker, dirs config.Dirs, err error) error {
	if brokerUnreachable(err) {
		return unreachableError(b, err)
	}
	return brokerError(b, dirs, err)
}

// brokerError rewrites a broker client error for a person: a rejected
// token names its source and where to fix it; other errors keep the
// client's message with the reason and URL of a network failure, or the
// broker's own message, added.
func brokerError(b *config.Broker, dirs config.Dirs, err error) error {
	if status, ok := brokerAuthFailed(err); ok {
		why := strconv.Itoa(status)
		var be *brokerclient.Error
		if errors.As(err, &be) && status == http.StatusForbidden && be.BrokerMessage() != "" {
			why += ": " + be.BrokerMessage() // which right a 403 lacks
		}
		return fmt.Errorf("auth-broker at %s rejected the token from %s (%s): %s", b.URL, tokenSource(b, dirs), why, tokenFix(b, dirs))
	}
	var be *brokerclient.Error
	if !errors.As(err, &be) {
		return err
	}
	switch {
	case be.Status == 0 && be.Err != nil && !errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %s (%s); %s", be.Message, httpx.Reason(be.Err), b.URL, brokerStartHint)
	case be.BrokerMessage() != "" && be.Status != http.StatusForbidden: // a 403's message is in be.Message already
		return fmt.Errorf("%s: %s", be.Message, be.BrokerMessage())
	}
	return err
}

// brokerReason is a broker request's failure in a few words: the network
// reason when no answer came, the status and the broker's own message when
// it answered with one, else the client's message.
func brokerReason(err error) string {
	var be *brokerclient.Error
	switch {
	case errors.As(err, &be) && be.Status == 0 && be.Err != nil:
		return httpx.Reason(be.Err)
	case be != nil && be.BrokerMessage() != "":
		return strconv.Itoa(be.Status) + " " + clitext.SafeLine(be.BrokerMessage())
	}
	return err.Error()
}

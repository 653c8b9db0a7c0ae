package proxy

import (
	"net/http"
	"strings"

	"github.com/ompgo/omp/pkg/llm"
)

// Observed is the token burn of one settled upstream request, attributed
// to the caller by the x-omp-* headers: InstallID and Hostname are the
// caller's when it sent an install id, else "" (the gateway fills in its
// own); App is x-omp-app, else "gateway". CredentialID names the credential
// that served the request.
type Observed struct {
	InstallID, Hostname, App string
	Provider, Model          string
	CredentialID             int64
	Usage                    llm.Usage
}

// maxAttribution caps each x-omp-* value.
const maxAttribution = 256

// attribution reads the x-omp-* headers: trimmed, empty = absent, cut to
// 256 bytes. They are never forwarded upstream (not in the passthrough
// allow-list).
func attribution(h http.Header) (installID, hostname, app string) {
	get := func(k string) string {
		v := strings.TrimSpace(h.Get(k))
		if len(v) > maxAttribution {
			v = strings.ToValidUTF8(v[:maxAttribution], "")
		}
		return v
	}
	installID, app = get("x-omp-install-id"), get("x-omp-app")
	if installID != "" {
		hostname = get("x-omp-hostname")
	}
	if app == "" {
		app = "gateway"
	}
	return installID, hostname, app
}

// observe hands a settled request's usage to Options.Observe; requests
// with neither tokens nor cost (a finished video job has only a cost), and
// a nil final message, are skipped.
func (s *Server) observe(r *http.Request, model *llm.Model, credID int64, final *llm.Message) {
	if s.observer == nil || final == nil {
		return
	}
	u := final.Usage
	if u.Input+u.Output+u.CacheRead+u.CacheWrite == 0 && u.Cost.Total == 0 {
		return
	}
	inst, host, app := attribution(r.Header)
	s.observer(Observed{InstallID: inst, Hostname: host, App: app, Provider: model.Provider, Model: model.ID, CredentialID: credID, Usage: u})
}

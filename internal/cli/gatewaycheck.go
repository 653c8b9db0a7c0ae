package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/ompgo/omp/internal/clitext"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/internal/gateway"
	"github.com/ompgo/omp/pkg/proxy"
)

// checkGateway runs `auth-gateway check`: it probes the broker's
// credentials through the gateway's own core (gateway.Check) and prints
// the report on out. exit is the process exit code the report asks for: 1
// when a credential failed (text only: the JSON path always exits 0), or
// with err when no broker is configured (err's text is the whole message).
func checkGateway(ctx context.Context, env *config.Env, dirs config.Dirs, log, warn *slog.Logger, out io.Writer, strict, asJSON bool) (exit int, err error) {
	cfg, err := gateway.FromEnv(ctx, env, dirs, log, warn)
	if err != nil {
		return 0, err
	}
	rows, err := gateway.Check(ctx, cfg, strict)
	if errors.Is(err, gateway.ErrCheckNoBroker) {
		return 1, err
	}
	if err != nil {
		return 0, err
	}
	if asJSON {
		return 0, writeCheckJSON(out, cfg.BrokerURL, strict, rows)
	}
	text, failed := checkText(cfg.BrokerURL, strict, rows)
	fmt.Fprint(out, text)
	if failed {
		return 1, nil
	}
	return 0, nil
}

// writeCheckJSON prints the `check --json` document, indented by two
// spaces, without HTML escaping.
func writeCheckJSON(w io.Writer, broker string, strict bool, rows []proxy.CredentialHealth) error {
	if rows == nil {
		rows = []proxy.CredentialHealth{}
	}
	return writeJSONDoc(w, struct {
		Broker      string                   `json:"broker"`
		Strict      bool                     `json:"strict"`
		Credentials []proxy.CredentialHealth `json:"credentials"`
	}{broker, strict, rows})
}

// checkText renders the `check` report and reports
// whether it fails: a credential rejected, or a chat probe failed.
func checkText(broker string, strict bool, rows []proxy.CredentialHealth) (string, bool) {
	var b strings.Builder
	b.WriteString("broker: " + clitext.SafeLine(broker))
	if strict {
		b.WriteString(" [strict]")
	}
	b.WriteString("\n")
	byProvider := map[string][]proxy.CredentialHealth{}
	var providers []string
	for _, r := range rows {
		if _, ok := byProvider[r.Provider]; !ok {
			providers = append(providers, r.Provider)
		}
		byProvider[r.Provider] = append(byProvider[r.Provider], r)
	}
	slices.Sort(providers)
	var ok, failed, unknown, chatFailed int
	for _, p := range providers {
		fmt.Fprintf(&b, "\n%s (%d)\n", clitext.SafeLine(p), len(byProvider[p]))
		for _, r := range byProvider[p] {
			status := "unknown "
			switch {
			case r.OK == nil:
				unknown++
			case *r.OK:
				status = "ok      "
				ok++
			default:
				status = "FAIL    "
				failed++
			}
			chat := ""
			if c := r.Completion; c != nil {
				switch {
				case c.OK == nil:
					chat = " [chat: skip]"
				case *c.OK:
					chat = " [chat: ok]"
				default:
					chat = " [chat: FAIL]"
					chatFailed++
				}
			}
			// Provider, type, identity and reasons come from the broker and
			// the upstreams: each is printed as one terminal-safe line.
			fmt.Fprintf(&b, "  %s%s id=%3d %-7s %s", status, chat, r.ID, clitext.SafeLine(r.Type), clitext.SafeLine(checkIdentity(r)))
			if r.RemoteRefresh {
				b.WriteString(" [remote-refresh]")
			}
			var reasons []string
			if r.Reason != "" {
				reasons = append(reasons, r.Reason)
			}
			if r.Completion != nil && r.Completion.Reason != "" {
				reasons = append(reasons, "chat: "+r.Completion.Reason)
			}
			if len(reasons) > 0 {
				b.WriteString(" — " + clitext.SafeLine(strings.Join(reasons, "; ")))
			}
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "\n%d ok, %d failed, %d unverifiable", ok, failed, unknown)
	if strict {
		fmt.Fprintf(&b, ", %d chat-failed", chatFailed)
	}
	fmt.Fprintf(&b, ", %d total\n", len(rows))
	return b.String(), failed > 0 || chatFailed > 0
}

// checkIdentity is email ?? accountId ?? a placeholder by type, then
// " (<orgName ?? orgId>)" when that differs.
func checkIdentity(r proxy.CredentialHealth) string {
	id := "(no identity on credential)"
	switch {
	case r.Email != "":
		id = r.Email
	case r.AccountID != "":
		id = r.AccountID
	case r.Type == "api_key":
		id = "(api key)"
	}
	org := r.OrgName
	if org == "" {
		org = r.OrgID
	}
	if org != "" && org != id {
		id += " (" + org + ")"
	}
	return id
}

// writeJSONDoc writes v as an indented JSON document without HTML
// escaping, terminal controls in its strings escaped (clitext.SafeJSON).
func writeJSONDoc(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(clitext.SafeJSON(buf.Bytes()))
	return err
}

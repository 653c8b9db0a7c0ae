package cli

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ompgo/omp/internal/cli/usageview"
	"github.com/ompgo/omp/internal/clitext"
	"github.com/ompgo/omp/pkg/vault"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
)

// msgNoClients is `omp usage clients`' stderr text, word for word, when
// nothing is recorded.
const msgNoClients = "No per-client usage recorded yet. Broker-connected clients and the auth-gateway report token burn automatically; set OMP_AUTH_BROKER_URL (or run this on the broker host)."

// runUsageInvalidate implements `omp usage invalidate [--provider p]`:
// it expires the local usage cache, then in broker mode sends
// POST /v1/usage/stale with the provider (a reference broker ignores the
// body and expires all). Exit 0 even when the broker call fails.
func (a *app) runUsageInvalidate(ctx context.Context, f usageFlags) error {
	provider := strings.ToLower(f.provider)
	bc, err := a.brokerConfig(ctx)
	if err != nil {
		return err
	}
	if bc != nil {
		if err := brokerclient.New(bc.URL, bc.Token, nil).MarkUsageStale(ctx, provider); err != nil {
			a.warnLogger().Warn("auth-broker notification of stale usage failed", "error", err.Error())
		}
	} else {
		l, err := a.localUsage(ctx)
		if err != nil {
			return err
		}
		defer l.close()
		if l.store != nil {
			if err := l.svc.InvalidateUsage(ctx, provider); err != nil {
				return err
			}
		}
	}
	if provider != "" {
		fmt.Fprintf(a.stdout, "Invalidated cached usage reports for provider %q.\n", provider)
	} else {
		fmt.Fprintln(a.stdout, "Invalidated cached usage reports for all providers.")
	}
	return nil
}

// runUsageClients implements `omp usage clients [--days n] [--json]`:
// the broker's GET /v1/usage/clients when one is
// configured, else the local vault (meaningful on the broker host).
func (a *app) runUsageClients(ctx context.Context, f usageFlags) error {
	days := f.days
	if days <= 0 {
		days = 7
	}
	now := a.now().UnixMilli()
	since := now - int64(days)*dayMs
	var clients []vault.ClientSummary
	bc, err := a.brokerConfig(ctx)
	if err != nil {
		return err
	}
	if bc != nil {
		u, err := brokerclient.New(bc.URL, bc.Token, nil).UsageClients(ctx, since)
		if err != nil {
			// The per-client record lives only in the broker.
			_, dirs, _ := a.setup()
			return brokerFailure(bc, dirs, err)
		}
		clients = u.Clients
	} else {
		l, err := a.localUsage(ctx)
		if err != nil {
			return err
		}
		defer l.close()
		if l.store != nil {
			if clients, err = l.store.ClientUsage(ctx, since, true); err != nil {
				return err
			}
		}
	}
	if clients == nil {
		clients = []vault.ClientSummary{}
	}
	if f.json {
		return writeJSONDoc(a.stdout, struct {
			GeneratedAt int64                 `json:"generatedAt"`
			SinceMs     int64                 `json:"sinceMs"`
			Clients     []vault.ClientSummary `json:"clients"`
		}{now, since, clients})
	}
	if len(clients) == 0 {
		return &exitError{code: 1, msg: msgNoClients}
	}
	fmt.Fprintln(a.stdout, formatClientUsage(clients, since, now))
	return nil
}

// formatTokenCount is the burn tables' compact count: 1234 → "1.2k",
// 4_500_000_000 → "4.50B".
func formatTokenCount(v int64) string {
	f := float64(v)
	switch {
	case f >= 1e9:
		return strconv.FormatFloat(f/1e9, 'f', 2, 64) + "B"
	case f >= 1e6:
		return strconv.FormatFloat(f/1e6, 'f', 1, 64) + "M"
	case f >= 1e3:
		return strconv.FormatFloat(f/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatInt(v, 10)
}

// formatClientUsage renders the per-client burn: one section
// per install, one row per (app, provider) and a total row; with an
// "account" column (label, never a token) when the broker attributed usage
// to credentials (a row without one shows —).
func formatClientUsage(clients []vault.ClientSummary, since, now int64) string {
	var b strings.Builder
	b.WriteString("Per-client token burn since " + time.UnixMilli(since).UTC().Format("2006-01-02"))
	headers := []string{"app", "provider", "requests", "input", "output", "cache r", "cache w", "total", "est cost"}
	cost := func(c float64) string { return "$" + strconv.FormatFloat(c, 'f', 2, 64) }
	for _, c := range clients {
		label, idNote := c.InstallID, ""
		if c.Hostname != "" {
			label = c.Hostname
			idNote = " · " + truncRunes(c.InstallID, 8)
		}
		fmt.Fprintf(&b, "\n\n%s%s · last seen %s ago", clitext.SafeLine(label), clitext.SafeLine(idNote), usageview.FormatDuration(max(0, now-c.LastSeen)))
		if len(c.Providers) == 0 {
			b.WriteString("\n  no usage in this window")
			continue
		}
		accounts := slices.ContainsFunc(c.Providers, func(u vault.ClientProviderUsage) bool { return u.Account != "" })
		cols := headers
		if accounts {
			cols = slices.Insert(slices.Clone(headers), 2, "account")
		}
		var rows [][]string
		var reqs, tokens int64
		var total float64
		for _, u := range c.Providers {
			app := u.App
			if app == "" {
				app = "—"
			}
			row := []string{app, u.Provider, usageview.FormatNumber(float64(u.Requests)),
				formatTokenCount(u.InputTokens), formatTokenCount(u.OutputTokens),
				formatTokenCount(u.CacheReadTokens), formatTokenCount(u.CacheWriteTokens),
				formatTokenCount(u.TotalTokens()), cost(u.CostUsd)}
			if accounts {
				row = slices.Insert(row, 2, cmp.Or(u.Account, "—"))
			}
			rows = append(rows, row)
			reqs += u.Requests
			tokens += u.TotalTokens()
			total += u.CostUsd
		}
		totalRow := []string{"", "total", usageview.FormatNumber(float64(reqs)), "", "", "", "", formatTokenCount(tokens), cost(total)}
		if accounts {
			totalRow = slices.Insert(totalRow, 2, "")
		}
		rows = append(rows, totalRow)
		// Every cell is shown as one line with no terminal controls: app,
		// provider and account are whatever the client reported.
		for _, r := range rows {
			for i := range r {
				r[i] = clitext.SafeLine(r[i])
			}
		}
		widths := make([]int, len(cols))
		for i, h := range cols {
			widths[i] = runeLen(h)
			for _, r := range rows {
				widths[i] = max(widths[i], runeLen(r[i]))
			}
		}
		render := func(cells []string) string {
			out := make([]string, len(cells))
			for i, c := range cells {
				pad := strings.Repeat(" ", widths[i]-runeLen(c))
				if i < 2 || (accounts && i == 2) {
					out[i] = c + pad
				} else {
					out[i] = pad + c
				}
			}
			return "  " + strings.Join(out, "  ")
		}
		b.WriteString("\n" + render(cols))
		for _, r := range rows {
			b.WriteString("\n" + render(r))
		}
	}
	return b.String()
}

func runeLen(s string) int { return len([]rune(s)) }

func truncRunes(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n])
	}
	return s
}

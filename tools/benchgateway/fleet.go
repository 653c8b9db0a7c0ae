package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
)

// fleetChecks runs the fleet behaviour checks of -scale on the running
// gateways and prints one line each: a credential change reaching every
// gateway, session stickiness across gateways, and (with namespaces) one
// gateway cut off from the broker serving from its snapshot and resyncing
// when the link returns. A failed check is an error.
func fleetChecks(w io.Writer, eps []*endpoint, b *runningBroker, f *fake, links []netLink) error {
	ctx := context.Background()
	bc := brokerclient.New(b.url, b.token, nil)
	upload := func(key string) error {
		_, err := bc.Upload(ctx, "anthropic", vault.Credential{Type: vault.TypeAPIKey, Key: key})
		return err
	}

	// 1. A credential change reaches every gateway (the broker holds one
	// key to start with).
	var worst time.Duration
	for n := 2; n <= 3; n++ {
		t0 := time.Now()
		if err := upload(fmt.Sprintf("sk-ant-api03-fleet-%d", n)); err != nil {
			return err
		}
		for _, e := range eps {
			if err := waitCredentials(e, n, 10*time.Second); err != nil {
				return err
			}
		}
		worst = max(worst, time.Since(t0))
	}
	fmt.Fprintf(w, "fleet: a credential added at the broker was usable on all three gateways within %v (target ≤ 1 s)\n", worst.Round(time.Millisecond))
	if worst > time.Second {
		return fmt.Errorf("a credential change took %v to reach every gateway", worst)
	}

	// 2. A session keeps its account on every gateway.
	accounts := map[string]bool{}
	for s := range 8 {
		var got []string
		for _, e := range eps {
			if err := chatWithSession(e, fmt.Sprintf("fleet-session-%d", s)); err != nil {
				return err
			}
			k, _ := f.lastKey.Load().(string)
			got = append(got, k)
		}
		if got[0] != got[1] || got[1] != got[2] {
			return fmt.Errorf("session %d was served with %v: not the same account on every gateway", s, got)
		}
		accounts[got[0]] = true
	}
	fmt.Fprintf(w, "fleet: 8 sessions, each on the same account through all three gateways (%d accounts used)\n", len(accounts))

	if links == nil {
		fmt.Fprintln(w, "fleet: cut-off check skipped (needs network namespaces)")
		return nil
	}
	// 3. Gateway 0 loses its route to the broker: it keeps serving, the
	// others see a new credential, and gateway 0 catches up once the
	// route is back.
	if err := links[0].cut(false); err != nil {
		return err
	}
	restored := false
	defer func() {
		if !restored {
			_ = links[0].cut(true) // the host rule outlives the namespaces
		}
	}()
	cutAt := time.Now()
	if err := upload("sk-ant-api03-fleet-4"); err != nil {
		return err
	}
	for _, e := range eps[1:] {
		if err := waitCredentials(e, 4, 10*time.Second); err != nil {
			return err
		}
	}
	for i := range 20 {
		if err := chatWithSession(eps[0], fmt.Sprintf("cut-%d", i)); err != nil {
			return fmt.Errorf("gateway 0 cut off from the broker: %w", err)
		}
	}
	if n, _ := credentials(eps[0]); n != 3 {
		return fmt.Errorf("gateway 0 holds %d credentials while cut off, want its last snapshot's 3", n)
	}
	time.Sleep(2*time.Second - time.Since(cutAt)) // cut off for at least 2 s
	if err := links[0].cut(true); err != nil {
		return err
	}
	restored = true
	back := time.Now()
	if err := waitCredentials(eps[0], 4, 60*time.Second); err != nil {
		return err
	}
	fmt.Fprintf(w, "fleet: gateway 0 cut off from the broker served 20 of 20 requests from its last snapshot; after the route came back it resynced in %v\n",
		time.Since(back).Round(time.Millisecond))
	return nil
}

// chatWithSession sends one small chat completion with a session id.
func chatWithSession(e *endpoint, sid string) error {
	req, err := http.NewRequest(http.MethodPost, e.url+chatSmall.path, bytes.NewReader(chatSmall.body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.token)
	req.Header.Set("session_id", sid)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", e.name, resp.StatusCode)
	}
	return nil
}

// credentials is how many credentials the gateway's store holds
// (/healthz broker detail).
func credentials(e *endpoint) (int, error) {
	resp, err := client.Get(e.url + "/healthz")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var h struct {
		Broker struct {
			Credentials int `json:"credentials"`
		} `json:"broker"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return 0, err
	}
	return h.Broker.Credentials, nil
}

func waitCredentials(e *endpoint, n int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		got, err := credentials(e)
		if err == nil && got == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s holds %d credentials after %v, want %d (%v)", e.name, got, limit, n, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

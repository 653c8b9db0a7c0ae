package interopdiff

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestNormaliseRenumbersIDsAndHidesClocks(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	n := &normaliser{ids: newIDMap(), now: now, tokenURL: "http://127.0.0.1:5555"}
	in := decode(t, `{"generation":1765,"generatedAt":1,"serverNowMs":2,
		"refresher":{"enabled":true,"intervalMs":60000,"nextSweepInMs":41234},
		"credentials":[
		  {"id":17,"provider":"x","rotatesInMs":5,"credential":{"expires":1800003300000,"tokenUrl":"http://127.0.0.1:5555/t"}},
		  {"id":9,"provider":"y","rotatesInMs":null,"credential":{"expires":4102444800000}}],
		"error":"No credential with id=9; Credential 17 is not OAuth; id=4"}`)
	got := compact(n.value("", in))
	want := `{"credentials":[{"credential":{"expires":"now+55m","tokenUrl":"{tokenUrl}/t"},"id":"#1","provider":"x","rotatesInMs":"<ms>"},` +
		`{"credential":{"expires":4102444800000},"id":"#2","provider":"y","rotatesInMs":null}],` +
		`"error":"No credential with id=#2; Credential #1 is not OAuth; id=#3","generatedAt":"<now>","generation":"<generation>",` +
		`"refresher":{"enabled":true,"intervalMs":60000,"nextSweepInMs":"<ms>"},"serverNowMs":"<now>"}`
	if got != want {
		t.Errorf("normalised\n got %s\nwant %s", got, want)
	}
	if id := n.ids.id(2); id != 9 {
		t.Errorf("ordinal 2 = id %d, want 9", id)
	}
	if id := n.ids.id(7); id == 9 || id == 17 || id == 4 {
		t.Errorf("an unseen ordinal maps to a real id %d", id)
	}
}

func TestCompareListsEveryDifference(t *testing.T) {
	ref := decode(t, `{"a":1,"b":[1,2],"c":{"x":"y"},"same":true}`)
	ours := decode(t, `{"a":2,"b":[1],"d":null,"same":true}`)
	var got []string
	for _, d := range Compare("body", ref, ours) {
		got = append(got, d.String())
	}
	want := []string{
		"body.a: ref 1, ours 2",
		"body.b[1]: ref 2, ours <absent>",
		`body.c: ref {"x":"y"}, ours <absent>`,
		"body.d: ref <absent>, ours null",
	}
	if !slices.Equal(got, want) {
		t.Errorf("differences\n got %q\nwant %q", got, want)
	}
	if d := Compare("body", decode(t, `{"k":[1,{"z":1}]}`), decode(t, `{"k":[1,{"z":1}]}`)); len(d) != 0 {
		t.Errorf("equal values differ: %v", d)
	}
}

func TestCompareSequenceAcceptsOnlyNamedDecisions(t *testing.T) {
	refBody := decode(t, `{"credentials":[{"id":"#1","credential":{"type":"oauth","orgId":"o"}}]}`)
	oursBody := decode(t, `{"credentials":[{"id":"#1","credential":{"type":"oauth"}}]}`)
	res := func(b any) []Result { return []Result{{Status: 200, Type: "application/json", Body: b}} }

	gated := Sequence{Name: "gated", Steps: []Step{snap(false, "E1")}}
	if rep := CompareSequence(gated, res(refBody), res(oursBody)); rep.Failed() || rep.Same() {
		t.Errorf("E1 gate on a step that names it: failed=%v same=%v (%s)", rep.Failed(), rep.Same(), rep.Line())
	} else if !strings.HasPrefix(rep.Line(), "accepted gated (E1)") {
		t.Errorf("line %q", rep.Line())
	}
	unnamed := Sequence{Name: "unnamed", Steps: []Step{snap(true)}}
	if rep := CompareSequence(unnamed, res(refBody), res(oursBody)); !rep.Failed() {
		t.Error("a difference on a step that names no decision was accepted")
	} else if !strings.Contains(rep.Line(), "credentials[0].credential.orgId: ref \"o\", ours <absent>") {
		t.Errorf("line %q", rep.Line())
	}
	// E1 explains only what ours leaves out, never something ours adds.
	if rep := CompareSequence(gated, res(oursBody), res(refBody)); !rep.Failed() {
		t.Error("E1 accepted an extra field on our side")
	}
	// A status difference is never a field of the gate.
	bad := []Result{{Status: 400, Type: "application/json", Body: refBody}}
	if rep := CompareSequence(gated, res(refBody), bad); !rep.Failed() {
		t.Error("E1 accepted a status difference")
	}
	// Any value of the header counts as capable: no 15.x check then.
	anyValue := Sequence{Name: "any", Steps: []Step{{Path: "/v1/snapshot?wait=0", Header: map[string]string{CapabilitiesHeader: "x"}}}}
	extraOK := decode(t, `{"credentials":[{"id":"#1","provider":"p","identityKey":null,"rotatesInMs":null,"credential":{"type":"api_key","key":"k","source":"login"}}]}`)
	if rep := CompareSequence(anyValue, res(extraOK), res(extraOK)); !rep.Same() {
		t.Errorf("a capable long-poll was held to the 15.x schema: %s", rep.Line())
	}
	// Our 15.x view must stay strict even when the reference agrees.
	extra := decode(t, `{"credentials":[{"id":"#1","provider":"p","identityKey":null,"rotatesInMs":null,"credential":{"type":"api_key","key":"k","source":"login"}}]}`)
	if rep := CompareSequence(gated, res(extra), res(extra)); !rep.Failed() || !strings.Contains(rep.Line(), "ours 15.x schema: credentials[0].credential.source") {
		t.Errorf("15.x schema check: %s", rep.Line())
	}
}

func TestSequenceTable(t *testing.T) {
	if len(Sequences) < 40 {
		t.Errorf("%d sequences, the issue asks for at least 40", len(Sequences))
	}
	seen := map[string]bool{}
	for _, s := range Sequences {
		if seen[s.Name] {
			t.Errorf("duplicate sequence name %q", s.Name)
		}
		seen[s.Name] = true
		if len(s.Steps) == 0 {
			t.Errorf("%s: no steps", s.Name)
		}
		for i, st := range s.Steps {
			for _, a := range st.Accept {
				if _, ok := Decisions[a]; !ok {
					t.Errorf("%s step %d: unknown decision %q", s.Name, i+1, a)
				}
			}
			if st.Upstream && i == 0 {
				t.Errorf("%s: an upstream step needs a step before it", s.Name)
			}
		}
	}
	for id, d := range Decisions {
		if d.ID != id || d.Title == "" || d.Path == nil {
			t.Errorf("decision %q is incomplete", id)
		}
	}
}

func TestFirstFrame(t *testing.T) {
	ev, data, err := firstFrame(strings.NewReader(": keepalive\n\nevent: snapshot\ndata: {\"kind\":\"snapshot\"}\n\nevent: entry\n"))
	if err != nil || ev != "snapshot" || data != `{"kind":"snapshot"}` {
		t.Errorf("firstFrame = %q, %q, %v", ev, data, err)
	}
	if _, _, err := firstFrame(strings.NewReader("event: snapshot\n")); err == nil {
		t.Error("a stream that ends before a frame is complete gave no error")
	}
}

func postForm(t *testing.T, c *http.Client, u string, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := c.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

func TestTokenServerModesDirectAndThroughProxy(t *testing.T) {
	ts, err := StartTokenServer()
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	proxy, _ := url.Parse(ts.ProxyURL())
	viaProxy := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy: http.ProxyURL(proxy), TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	direct := &http.Client{Timeout: 10 * time.Second}

	code, body := postForm(t, direct, ts.URL+"/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"ok-1"}, "client_id": {"c"}})
	if code != 200 || body["access_token"] != "at.ok-1" || body["refresh_token"] != "ok-1.r" {
		t.Errorf("success: %d %v", code, body)
	}
	code, body = postForm(t, viaProxy, "https://auth.openai.com/oauth/token", url.Values{"refresh_token": {RefreshInvalid + "x"}, "client_secret": {"s"}})
	if code != 400 || body["error"] != "invalid_grant" {
		t.Errorf("invalid_grant through the proxy: %d %v", code, body)
	}
	resp, err := viaProxy.Post("https://api.anthropic.com/v1/oauth/token", "application/json", strings.NewReader(`{"grant_type":"refresh_token","refresh_token":"ok-2"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := ts.Take()
	want := []TokenRequest{
		{Path: "/oauth/token", Grant: "refresh_token", ClientID: "c", Refresh: "ok-1"},
		{Path: "/oauth/token", HasSecret: true, Refresh: RefreshInvalid + "x"},
		{Path: "/v1/oauth/token", Grant: "refresh_token", Refresh: "ok-2", JSONBody: true},
	}
	if !slices.Equal(got, want) {
		t.Errorf("log\n got %+v\nwant %+v", got, want)
	}
	if again := ts.Take(); len(again) != 0 {
		t.Errorf("Take did not forget: %+v", again)
	}

	// A held (slow) request is released by Close, not after SlowFor.
	done := make(chan error, 1)
	go func() {
		resp, err := direct.PostForm(ts.URL+"/t", url.Values{"refresh_token": {RefreshSlow + "1"}})
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	ts.Close()
	select {
	case <-done:
		if time.Since(start) > 5*time.Second {
			t.Error("Close took too long to release a slow request")
		}
	case <-time.After(SlowFor):
		t.Error("a slow request was not released by Close")
	}
}

func TestTargetRunExpandsIDsAndPlaceholders(t *testing.T) {
	ts, err := StartTokenServer()
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	var paths, bodies, auths []string
	broker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		paths = append(paths, r.URL.Path)
		bodies = append(bodies, string(b))
		auths = append(auths, r.Header.Get("Authorization")+"|"+r.Header.Get(CapabilitiesHeader))
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = io.WriteString(w, `{"entries":[{"id":41,"provider":"p","credential":{"tokenUrl":"`+ts.URL+`/x"}}]}`)
	}))
	defer broker.Close()
	tg := &Target{Name: "t", URL: broker.URL, Token: "tok", Fake: ts, Client: broker.Client()}
	seq := Sequence{Name: "s", Steps: []Step{
		up("p", oauth("a", "r", `,"tokenUrl":"{tokenUrl}/x"`)), refresh("1"), {Path: "/v1/snapshot", Caps: true, NoAuth: true}, upstream}}
	res := tg.Run(context.Background(), seq)
	if len(res) != 4 {
		t.Fatalf("%d results", len(res))
	}
	if want := []string{"/v1/credential", "/v1/credential/41/refresh", "/v1/snapshot"}; !slices.Equal(paths, want) {
		t.Errorf("paths %q, want %q", paths, want)
	}
	if !strings.Contains(bodies[0], `"tokenUrl":"`+ts.URL+`/x"`) || !strings.Contains(bodies[0], `"expires":`+FarExpiry) {
		t.Errorf("upload body not expanded: %s", bodies[0])
	}
	if want := []string{"Bearer tok|", "Bearer tok|", "|" + capabilitiesValue}; !slices.Equal(auths, want) {
		t.Errorf("headers %q, want %q", auths, want)
	}
	got := compact(res[0])
	if want := `{"status":200,"type":"application/json","body":{"entries":[{"credential":{"tokenUrl":"{tokenUrl}/x"},"id":"#1","provider":"p"}]}}`; got != want {
		t.Errorf("result\n got %s\nwant %s", got, want)
	}
}

package proxy_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/ompgo/omp/pkg/proxy"
	"github.com/ompgo/omp/pkg/vault"
)

// The routes of rerank, video and judge models, against fakes of their
// wires.

func TestRerankToOpenRouter(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		if r.URL.Path != "/api/v1/rerank" {
			t.Errorf("upstream path %q", r.URL.Path)
		}
		writeJSON(w, 200, nil, `{"model":"cohere/rerank-v3.5","results":[{"index":1,"relevance_score":0.9},{"index":0,"relevance_score":0.1}],"usage":{"total_tokens":12,"cost":0.002}}`)
	})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "openrouter", "sk-or")}}
	gw := gateway(t, src, map[string]string{"openrouter": up.srv.URL + "/api/v1"}, nil)
	resp := post(t, gw.URL+"/v1/rerank", gatewayToken, `{"model":"openrouter/cohere/rerank-v3.5","query":"fruit","documents":["car",{"text":"apple"}],"top_n":2,"return_documents":true}`)
	body := readAll(t, resp)
	want := `{"model":"openrouter/cohere/rerank-v3.5","results":[{"index":1,"relevance_score":0.9,"document":{"text":"apple"}},{"index":0,"relevance_score":0.1,"document":{"text":"car"}}],"usage":{"total_tokens":12,"cost":0.002}}`
	if resp.StatusCode != 200 || body != want {
		t.Errorf("%d %s\nwant %s", resp.StatusCode, body, want)
	}
	if sent := up.bodies[0]; sent != `{"model":"cohere/rerank-v3.5","query":"fruit","documents":["car","apple"],"top_n":2,"return_documents":true}` {
		t.Errorf("upstream body %s", sent)
	}
	if got := up.seen(); len(got) != 1 || got[0] != "sk-or" {
		t.Errorf("upstream credentials %q", got)
	}
}

func TestVideoJobStateless(t *testing.T) {
	video := bytes.Repeat([]byte("mp4!"), 50000)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		switch r.Method + " " + r.URL.Path {
		case "POST /api/v1/videos":
			writeJSON(w, 202, nil, `{"id":"job-42","status":"queued","polling_url":"https://openrouter.example/api/v1/videos/job-42"}`)
		case "GET /api/v1/videos/job-42":
			writeJSON(w, 200, nil, `{"id":"job-42","status":"completed","generation_id":"gen-1","unsigned_urls":["https://cdn.example/x.mp4"],"usage":{"cost":0.5}}`)
		case "GET /api/v1/videos/job-42/content":
			w.Header().Set("Content-Type", "video/mp4")
			_, _ = w.Write(video)
		default:
			t.Errorf("upstream %s %s", r.Method, r.URL.Path)
			http.NotFound(w, r)
		}
	})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "openrouter", "sk-or")}}
	var mu sync.Mutex
	var seen []proxy.Observed
	gw := gateway(t, src, map[string]string{"openrouter": up.srv.URL + "/api/v1"}, nil, func(s *proxy.Server) {
		proxy.SetObserve(s, func(o proxy.Observed) { mu.Lock(); seen = append(seen, o); mu.Unlock() })
	})
	resp := post(t, gw.URL+"/v1/videos", gatewayToken, `{"model":"openrouter/google/veo-3.1","prompt":"waves","resolution":"720p","unknown":1}`)
	var job map[string]any
	if err := json.Unmarshal([]byte(readAll(t, resp)), &job); err != nil || resp.StatusCode != 202 {
		t.Fatalf("%d %v %v", resp.StatusCode, job, err)
	}
	id, _ := job["id"].(string)
	if job["status"] != "queued" || job["polling_url"] != gw.URL+"/v1/videos/"+id {
		t.Errorf("submit answer %v", job)
	}
	if sent := up.bodies[0]; sent != `{"model":"google/veo-3.1","prompt":"waves","resolution":"720p"}` {
		t.Errorf("upstream body %s", sent)
	}
	get := func(path string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodGet, gw.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+gatewayToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp, readAll(t, resp)
	}
	resp, body := get("/v1/videos/" + id)
	want := `{"id":"` + id + `","status":"completed","polling_url":"` + gw.URL + `/v1/videos/` + id + `","generation_id":"gen-1","unsigned_urls":["` + gw.URL + `/v1/videos/` + id + `/content"],"usage":{"cost":0.5}}`
	if resp.StatusCode != 200 || body != want {
		t.Errorf("poll %d %s\nwant %s", resp.StatusCode, body, want)
	}
	resp, body = get("/v1/videos/" + id + "/content")
	if resp.StatusCode != 200 || body != string(video) || resp.Header.Get("Content-Type") != "video/mp4" {
		t.Errorf("content %d, %d bytes, %q", resp.StatusCode, len(body), resp.Header.Get("Content-Type"))
	}
	resp, body = get("/v1/videos/not-an-id")
	if want := `{"error":{"code":400,"type":"invalid_request_error","message":"videos: invalid video job id"}}`; resp.StatusCode != 400 || body != want {
		t.Errorf("bad id %d %s", resp.StatusCode, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0].Usage.Cost.Total != 0.5 {
		t.Errorf("observed %+v", seen)
	}
}

func TestSystemOneJudgments(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, _ string) {
		if r.URL.Path != "/v1/systemone" {
			t.Errorf("upstream path %q", r.URL.Path)
		}
		writeJSON(w, 200, nil, `{"model":"jev-1.13","answers":{"done":{"type":"noul","noul":1}},"usage":{"input_tokens":30,"output_tokens":2,"cost":0.001}}`)
	})
	src := &memSource{entries: []vault.Entry{apiKeyEntry(1, "typesafe", "ts-key")}}
	gw := gateway(t, src, map[string]string{"typesafe": up.srv.URL}, nil)
	for _, path := range []string{"/v1/systemone", "/alpha/decisions"} {
		resp := post(t, gw.URL+path, gatewayToken, `{"model":"typesafe/jev-latest","state":"the tests pass","questions":{"done":{"type":"noul","instructions":"Is the task done?"}}}`)
		want := `{"model":"jev-1.13","answers":{"done":{"type":"noul","noul":1}},"usage":{"input_tokens":30,"output_tokens":2,"cost":0.001}}`
		if body := readAll(t, resp); resp.StatusCode != 200 || body != want {
			t.Errorf("%s: %d %s\nwant %s", path, resp.StatusCode, body, want)
		}
	}
	if sent := up.bodies[0]; sent != `{"state":"the tests pass","model":"jev-latest","questions":{"done":{"type":"noul","instructions":"Is the task done?"}}}` {
		t.Errorf("upstream body %s", sent)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"model":"typesafe/jev-latest","state":1,"questions":{}}`, `{"error":{"type":"invalid_request_error","message":"systemone: state must be a string or an object"}}`},
		{`{"model":"typesafe/jev-latest","state":"s","questions":{"q":{"type":"maybe","instructions":"?"}}}`, `{"error":{"type":"invalid_request_error","message":"systemone: questions.q.type must be \"noul\", \"choice\" or \"score\""}}`},
	} {
		resp := post(t, gw.URL+"/v1/systemone", gatewayToken, tc.body)
		if body := readAll(t, resp); resp.StatusCode != 422 || body != tc.want {
			t.Errorf("%d %s\nwant 422 %s", resp.StatusCode, body, tc.want)
		}
	}
}

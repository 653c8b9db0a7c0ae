// Command benchgateway measures what the gateway costs over a bare reverse
// proxy, in one run (`make bench-gateway`).
//
// Everything talks plain HTTP on loopback. This process runs a fake
// Anthropic Messages API (a JSON reply for a non-streaming request, an SSE
// stream with one flush per event otherwise: 2 deltas for the small reply,
// 50 for the streamed one), and the real broker wiring (internal/broker,
// in process, temp dir) holding one anthropic API-key credential. Every
// round starts two fresh processes:
//
//   - ours: the real bin/gateway, following the broker over its HTTP API,
//     with OMP_PROVIDER_ANTHROPIC_BASE_URL pointed at the fake, translating
//     Chat Completions requests to Anthropic Messages (it always streams
//     upstream, so its small non-streaming request is answered by a 2-delta
//     stream where the others get the JSON body);
//   - bare: this program re-executed as an httputil.ReverseProxy in front
//     of the fake (FlushInterval -1, full duplex enabled per request through
//     http.ResponseController), passing Anthropic requests through;
//
// and "direct" is the client talking to the fake itself. Within a round the
// three are measured in turns of 20 requests each (after one unmeasured
// request that wakes each side up), in an order that rotates each turn, so
// machine-load drift hits all alike; each figure is the median over rounds.
// -compare adds a second gateway binary to the turns (an A/B of two builds
// in one run). -inbound gemini sends the gateway the same requests in the
// Gemini API (generateContent, streamGenerateContent?alt=sse) instead of
// Chat Completions.
//
// Targets, as ratios to the bare proxy in the same run: the gateway's
// process CPU per request at concurrency 16 is at most 1.5× the proxy's,
// its memory per held stream at most 1.5× the proxy's, its throughput at
// concurrency 16 at least 0.7× the proxy's, and a 300 KB translated
// request adds at most 2 ms. The other rows (small added latency, first
// token, idle RSS, start → first completion) are information, with no
// target. -strict exits 1 when a target is missed.
//
// Rows: "added" figures are p50(through a proxy) − p50(direct) of the same
// round; throughput is completions per second with 16 concurrent clients
// for -duration; CPU per request is the process's utime+stime from
// /proc/<pid>/stat, read before and after that throughput run, divided by
// the completions in it; memory per held stream is the growth of the
// process's VmRSS with -streams streams open at once (each has delivered
// its first token and is held open by the fake), divided by -streams; idle
// RSS is VmRSS 500 ms after the process answered its first completion;
// start → first completion is from exec to the first 200 (the broker is
// up).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ompgo/omp/tools/benchproc"
)

type options struct {
	gateway  string
	rounds   int
	n        int
	nStream  int
	nBig     int
	duration time.Duration
	streams  int
	jsonOut  bool
	strict   bool
	scale    bool
	netns    bool
	compare  string
	inbound  string
}

func main() {
	if len(os.Args) > 2 && os.Args[1] == "-serve-bare" {
		if err := serveBare(os.Args[2], os.Args[3:]); err != nil {
			fmt.Fprintln(os.Stderr, "bare proxy:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.StringVar(&o.gateway, "gateway", "bin/gateway", "the gateway binary (make build)")
	flag.IntVar(&o.rounds, "rounds", 3, "interleaved rounds")
	flag.IntVar(&o.n, "n", 2000, "small non-streaming requests per target per round (concurrency 1)")
	flag.IntVar(&o.nStream, "n-stream", 500, "streamed requests per target per round (time to first token)")
	flag.IntVar(&o.nBig, "n-big", 200, "300 KB requests per target per round")
	flag.DurationVar(&o.duration, "duration", time.Second, "throughput run per target per round")
	flag.IntVar(&o.streams, "streams", 1000, "concurrent open streams for the memory figure")
	flag.StringVar(&o.compare, "compare", "", "a second gateway binary measured alongside (its added latencies are reported per round): an A/B of two builds in one run")
	flag.StringVar(&o.inbound, "inbound", "chat", "the wire the gateway's client speaks: chat (Chat Completions) or gemini (the Gemini API); the bare proxy always passes Anthropic Messages through")
	flag.BoolVar(&o.jsonOut, "json", false, "print the report as JSON")
	flag.BoolVar(&o.strict, "strict", false, "exit 1 when a target is missed")
	flag.BoolVar(&o.scale, "scale", false, "measure one gateway against three on one broker instead (throughput and gateway CPU per request)")
	flag.BoolVar(&o.netns, "netns", true, "with -scale: each gateway in its own network namespace when root and the ip tool allow (else loopback ports)")
	flag.Parse()
	if o.inbound != "chat" && o.inbound != "gemini" {
		fmt.Fprintln(os.Stderr, "benchgateway: -inbound is chat or gemini")
		os.Exit(2)
	}
	if o.rounds < 1 || o.n < 1 || o.nStream < 1 || o.nBig < 1 || o.streams < 1 {
		fmt.Fprintln(os.Stderr, "benchgateway: -rounds, -n, -n-stream, -n-big and -streams must be at least 1")
		os.Exit(2)
	}
	if o.scale {
		if err := runScale(o, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "benchgateway -scale:", err)
			os.Exit(1)
		}
		return
	}
	rep, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchgateway:", err)
		os.Exit(1)
	}
	if o.jsonOut {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		rep.print(os.Stdout)
	}
	if o.strict && !rep.allMet() {
		os.Exit(1)
	}
}

func run(o options) (*report, error) {
	gw, err := absGateway(o.gateway)
	if err != nil {
		return nil, err
	}
	if o.compare != "" {
		if o.compare, err = absGateway(o.compare); err != nil {
			return nil, err
		}
	}
	f, err := startFake()
	if err != nil {
		return nil, err
	}
	defer f.srv.Close()
	b, err := startBroker()
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	defer b.stop()
	raiseFDLimit()

	rep := &report{Config: map[string]any{"rounds": o.rounds, "n": o.n, "nStream": o.nStream, "nBig": o.nBig,
		"duration": o.duration.String(), "streams": o.streams, "bigBytes": len(chatBig.body), "deltas": deltas, "inbound": o.inbound},
		LoadBefore: benchproc.LoadAvg()}
	var r rounds
	t0 := time.Now()
	for i := range o.rounds {
		if err := oneRound(o, f, b, gw, i, &r); err != nil {
			return nil, fmt.Errorf("round %d: %w", i+1, err)
		}
		fmt.Fprintf(os.Stderr, "benchgateway: round %d/%d done (%.1fs)\n", i+1, o.rounds, time.Since(t0).Seconds())
	}
	rep.LoadAfter = benchproc.LoadAvg()
	rep.fill(&r)
	return rep, nil
}

// absGateway is the gateway binary's absolute path, checked to exist.
func absGateway(path string) (string, error) {
	gw, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(gw); err != nil {
		return "", fmt.Errorf("gateway binary: %w (run make build)", err)
	}
	return gw, nil
}

// rounds collects one value per round per figure.
type rounds struct {
	direct, directStream, directBig []float64    // µs p50
	addSmall, addTTFT, addBig       [4][]float64 // by endpoint index (direct unused)
	rps, cpu, perStr                [2][]float64 // cpu: µs of process CPU per completion at c=16
	embedRPS, embedCPU              [2][]float64 // the same for embeddings
	idleRSS, start                  [2][]float64
}

// Endpoint indices: the gateway, the bare proxy, the fake itself, and the
// -compare gateway.
const ours, bare, direct, compared = 0, 1, 2, 3

func oneRound(o options, f *fake, b *runningBroker, gwBin string, i int, r *rounds) (err error) {
	procs := make([]*proc, 2, 3)
	defer func() {
		for _, p := range procs {
			if p != nil {
				p.stop()
			}
		}
	}()
	// Start order alternates too.
	starts := []func() (*proc, error){
		func() (*proc, error) { return startGateway(gwBin, b, f.url) },
		func() (*proc, error) { return startBare(f.url) },
	}
	for k := range 2 {
		j := (k + i) % 2
		if procs[j], err = starts[j](); err != nil {
			return err
		}
	}
	if o.compare != "" {
		p, err := startGateway(o.compare, b, f.url)
		if err != nil {
			return fmt.Errorf("-compare gateway: %w", err)
		}
		procs = append(procs, p)
	}
	time.Sleep(500 * time.Millisecond)
	for j, p := range procs[:2] {
		rss, err := rssKiB(p.pid)
		if err != nil {
			return err
		}
		r.idleRSS[j] = append(r.idleRSS[j], float64(rss)/1024)
		r.start[j] = append(r.start[j], float64(p.startToFirst.Microseconds())/1000)
	}
	gwEP := &endpoint{name: "gateway", url: procs[ours].url, token: procs[ours].token, small: chatSmall, stream: chatStream, big: chatBig, hold: chatHold, embed: embedOurs, pid: procs[ours].pid}
	if o.inbound == "gemini" {
		gwEP.small, gwEP.stream, gwEP.big, gwEP.hold = geminiSmall, geminiStream, geminiBig, geminiHold
	}
	eps := []*endpoint{
		gwEP,
		{name: "bare", url: procs[bare].url, small: anthropicSmall, stream: anthropicStream, big: anthropicBig, hold: anthropicHold, embed: embedBare, pid: procs[bare].pid},
		{name: "direct", url: f.url, small: anthropicSmall, stream: anthropicStream, big: anthropicBig},
	}
	if o.compare != "" {
		c, p := *eps[ours], procs[2] // started after ours and bare
		c.name, c.url, c.token, c.pid = "compare", p.url, p.token, p.pid
		eps = append(eps, &c)
	}
	// Warm-up: connections, code paths.
	for _, e := range eps {
		if _, err := latency(e, e.small, 50); err != nil {
			return err
		}
		for range 20 {
			if _, err := firstTokenOnce(e, e.stream); err != nil {
				return err
			}
		}
	}
	small, err := interleaved(eps, func(e *endpoint) request { return e.small }, complete, o.n)
	if err != nil {
		return err
	}
	stream, err := interleaved(eps, func(e *endpoint) request { return e.stream }, firstTokenOnce, o.nStream)
	if err != nil {
		return err
	}
	big, err := interleaved(eps, func(e *endpoint) request { return e.big }, complete, o.nBig)
	if err != nil {
		return err
	}
	order := []int{(0 + i) % 2, (1 + i) % 2}
	for _, k := range order {
		before, err := cpuTime(eps[k : k+1])
		if err != nil {
			return err
		}
		rps, n, err := throughput(eps[k:k+1], eps[k].small, 16, o.duration)
		if err != nil {
			return err
		}
		after, err := cpuTime(eps[k : k+1])
		if err != nil {
			return err
		}
		r.rps[k] = append(r.rps[k], rps)
		r.cpu[k] = append(r.cpu[k], float64((after-before).Microseconds())/float64(n))
	}
	for _, k := range order {
		if _, err := latency(eps[k], eps[k].embed, 20); err != nil {
			return err
		}
		before, err := cpuTime(eps[k : k+1])
		if err != nil {
			return err
		}
		rps, n, err := throughput(eps[k:k+1], eps[k].embed, 16, o.duration)
		if err != nil {
			return err
		}
		after, err := cpuTime(eps[k : k+1])
		if err != nil {
			return err
		}
		r.embedRPS[k] = append(r.embedRPS[k], rps)
		r.embedCPU[k] = append(r.embedCPU[k], float64((after-before).Microseconds())/float64(n))
	}
	for _, k := range order {
		per, err := openStreams(eps[k], f, o.streams)
		if err != nil {
			return err
		}
		r.perStr[k] = append(r.perStr[k], per)
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	r.direct = append(r.direct, us(small[direct]))
	r.directStream = append(r.directStream, us(stream[direct]))
	r.directBig = append(r.directBig, us(big[direct]))
	ks := []int{ours, bare}
	if o.compare != "" {
		ks = append(ks, compared)
	}
	for _, k := range ks {
		r.addSmall[k] = append(r.addSmall[k], us(small[k]-small[direct]))
		r.addTTFT[k] = append(r.addTTFT[k], us(stream[k]-stream[direct]))
		r.addBig[k] = append(r.addBig[k], us(big[k]-big[direct]))
	}
	return nil
}

var errNoFD = errors.New("could not raise the open-file limit")

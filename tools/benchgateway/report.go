package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/ompgo/omp/tools/benchproc"
)

// row is one line of the table: ours, bare, their ratio, the target and
// whether ours meets it. A row without a target (Target "—") is
// information and always counts as met.
type row struct {
	Name   string   `json:"name"`
	Unit   string   `json:"unit"`
	Ours   float64  `json:"ours"`
	Bare   float64  `json:"bare"`
	Ratio  *float64 `json:"ratio"` // ours ÷ bare; nil when bare is ≤ 0
	Target string   `json:"target"`
	Met    bool     `json:"met"`
	Info   bool     `json:"info,omitempty"`
}

// noTarget marks an information row.
const noTarget = "—"

type report struct {
	Config map[string]any     `json:"config"`
	Rows   []row              `json:"rows"`
	Direct map[string]float64 `json:"directP50us"` // the fake reached directly, µs
	// Compare is the -compare gateway's added latencies (medians, µs).
	Compare    map[string]float64   `json:"compareAddedUs,omitempty"`
	Rounds     map[string][]float64 `json:"perRound"`
	LoadBefore float64              `json:"loadBefore"`
	LoadAfter  float64              `json:"loadAfter"`
	Notes      []string             `json:"notes"`
}

func (rep *report) add(name, unit string, ours, bare float64, target string, met bool) {
	r := row{Name: name, Unit: unit, Ours: ours, Bare: bare, Target: target, Met: met}
	if bare > 0 {
		v := ours / bare
		r.Ratio = &v
	}
	rep.Rows = append(rep.Rows, r)
}

// info adds a row without a target.
func (rep *report) info(name, unit string, ours, bare float64) {
	rep.add(name, unit, ours, bare, noTarget, true)
	rep.Rows[len(rep.Rows)-1].Info = true
}

func (rep *report) fill(r *rounds) {
	m := func(k int, v [][]float64) float64 { return benchproc.Median(v[k]) }
	// The targets are ratios to the bare proxy in the same run, except the
	// 300 KB request's added latency, which is a fixed budget.
	s, b := m(ours, r.cpu[:]), m(bare, r.cpu[:])
	rep.add("process CPU per request, small non-streaming, c=16", "µs", s, b, "≤ 1.5×bare", s <= 1.5*b)
	s, b = m(ours, r.perStr[:]), m(bare, r.perStr[:])
	rep.add(fmt.Sprintf("memory per held stream (%v open)", rep.Config["streams"]), "KiB", s, b, "≤ 1.5×bare", s <= 1.5*b)
	s, b = m(ours, r.rps[:]), m(bare, r.rps[:])
	rep.add("throughput, small non-streaming, c=16", "req/s", s, b, "≥ 0.7×bare", s >= 0.7*b)
	s, b = m(ours, r.addBig[:]), m(bare, r.addBig[:])
	rep.add("added latency p50, 300 KB / 300 messages", "µs", s, b, "≤ 2 000 µs", s <= 2000)
	rep.info("added latency p50, small non-streaming, c=1", "µs", m(ours, r.addSmall[:]), m(bare, r.addSmall[:]))
	rep.info(fmt.Sprintf("added time to first token p50, %d-delta stream", deltas), "µs", m(ours, r.addTTFT[:]), m(bare, r.addTTFT[:]))
	s, b = m(ours, r.embedCPU[:]), m(bare, r.embedCPU[:])
	rep.add("process CPU per request, embeddings (1536 floats), c=16", "µs", s, b, "≤ 1.5×bare", s <= 1.5*b)
	rep.info("throughput, embeddings, c=16", "req/s", m(ours, r.embedRPS[:]), m(bare, r.embedRPS[:]))
	rep.info("idle RSS of the process", "MiB", m(ours, r.idleRSS[:]), m(bare, r.idleRSS[:]))
	rep.info("start → first completion (broker up)", "ms", m(ours, r.start[:]), m(bare, r.start[:]))
	rep.Direct = map[string]float64{"small": benchproc.Median(r.direct), "ttft": benchproc.Median(r.directStream), "big": benchproc.Median(r.directBig)}
	rep.Rounds = map[string][]float64{
		"addSmallOurs": r.addSmall[ours], "addSmallBare": r.addSmall[bare],
		"addTTFTOurs": r.addTTFT[ours], "addTTFTBare": r.addTTFT[bare],
		"rpsOurs": r.rps[ours], "rpsBare": r.rps[bare],
		"embedRPSOurs": r.embedRPS[ours], "embedRPSBare": r.embedRPS[bare],
		"embedCPUUsPerRequestOurs": r.embedCPU[ours], "embedCPUUsPerRequestBare": r.embedCPU[bare],
		"cpuUsPerRequestOurs": r.cpu[ours], "cpuUsPerRequestBare": r.cpu[bare],
		"addBigOurs": r.addBig[ours], "addBigBare": r.addBig[bare],
		"perStreamKiBOurs": r.perStr[ours], "perStreamKiBBare": r.perStr[bare],
		"idleRSSMiBOurs": r.idleRSS[ours], "idleRSSMiBBare": r.idleRSS[bare],
		"startMsOurs": r.start[ours], "startMsBare": r.start[bare],
	}
	if len(r.addSmall[compared]) > 0 {
		rep.Rounds["addSmallCompare"], rep.Rounds["addTTFTCompare"], rep.Rounds["addBigCompare"] =
			r.addSmall[compared], r.addTTFT[compared], r.addBig[compared]
		rep.Compare = map[string]float64{"small": m(compared, r.addSmall[:]), "ttft": m(compared, r.addTTFT[:]), "big": m(compared, r.addBig[:])}
	}
	rep.Notes = append(rep.Notes,
		"ours = a real bin/gateway process following a real broker (in the bench process) with one anthropic API-key credential; it translates chat completions → Anthropic Messages",
		"bare = this program re-executed as an httputil.ReverseProxy process (its binary links the broker, so its idle RSS is not a minimal proxy's) (FlushInterval -1, EnableFullDuplex), Anthropic requests passed through",
		"the gateway always streams upstream: its small non-streaming request is answered by a 2-delta SSE stream, the others by the JSON body",
		"added = p50 through the proxy − p50 direct to the fake, same round, the endpoints taken in turns of 20 requests; figures are medians over rounds",
		"embeddings: ours validates an OpenAI embeddings request and its 1536-float answer (credential from the broker's openai API key), rewrites the model id in both and decodes only the answer's usage; bare passes both through",
		"CPU per request = the process's utime+stime (/proc/<pid>/stat, 10 ms ticks) over the c=16 throughput run, divided by its completions",
		"rows with target — are information")
}

func (rep *report) allMet() bool {
	for _, r := range rep.Rows {
		if !r.Met {
			return false
		}
	}
	return true
}

func (rep *report) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "figure\tunit\tours\tbare\tratio\ttarget\tmet\t")
	for _, r := range rep.Rows {
		ratio := "n/a"
		if r.Ratio != nil {
			ratio = fmt.Sprintf("%.2f", *r.Ratio)
		}
		met := "no"
		switch {
		case r.Info:
			met = noTarget
		case r.Met:
			met = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Name, r.Unit, num(r.Ours), num(r.Bare), ratio, r.Target, met)
	}
	tw.Flush()
	fmt.Fprintf(w, "\ndirect to the fake (p50): small %s µs, first token %s µs, 300 KB %s µs\n",
		num(rep.Direct["small"]), num(rep.Direct["ttft"]), num(rep.Direct["big"]))
	if rep.Compare != nil {
		fmt.Fprintf(w, "-compare gateway, added (p50): small %s µs, first token %s µs, 300 KB %s µs\n",
			num(rep.Compare["small"]), num(rep.Compare["ttft"]), num(rep.Compare["big"]))
	}
	fmt.Fprintf(w, "load average: %.2f before, %.2f after; config %v\n", rep.LoadBefore, rep.LoadAfter, rep.Config)
	for _, n := range rep.Notes {
		fmt.Fprintln(w, "- "+n)
	}
}

func num(v float64) string {
	switch {
	case v >= 100 || v <= -100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10 || v <= -10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

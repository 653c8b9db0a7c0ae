package main

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/ompgo/omp/tools/benchproc"
)

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

type config struct {
	Rounds     int `json:"rounds"`
	Sequential int `json:"sequential"`
	Probe      int `json:"probe"`
	Writers    int `json:"writers"`
	PerWriter  int `json:"perWriter"`
}

// row is one line of the table; nil figures are "not measured".
type row struct {
	Scenario  string   `json:"scenario"`
	Unit      string   `json:"unit"`
	Ours      *float64 `json:"ours"`
	Reference *float64 `json:"reference"`
	Ratio     *float64 `json:"ratio"` // ours ÷ reference
	Target    string   `json:"target"`
	Met       *bool    `json:"met"` // nil: no target or not decidable
}

type report struct {
	Config    config        `json:"config"`
	Reference string        `json:"referenceVersion,omitempty"`
	Fresh     bool          `json:"freshVaults"`
	Notes     []string      `json:"notes,omitempty"`
	Runs      []roundResult `json:"rounds"`
	Rows      []row         `json:"summary"`
	AllMet    bool          `json:"allTargetsMet"`
	TotalS    float64       `json:"totalS"`
	// 1-minute load averages (Linux /proc/loadavg; 0 elsewhere).
	LoadBefore float64 `json:"loadAvgBefore"`
	LoadAfter  float64 `json:"loadAvgAfter"`
}

func (r *report) summarise(targets []*target) {
	med := func(name string, f func(roundResult) float64) *float64 {
		var xs []float64
		for _, x := range r.Runs {
			if x.Target == name {
				xs = append(xs, f(x))
			}
		}
		if len(xs) == 0 {
			return nil
		}
		m := benchproc.Median(xs)
		return &m
	}
	sum := func(name string, f func(roundResult) int) *float64 {
		var s float64
		found := false
		for _, x := range r.Runs {
			if x.Target == name {
				s += float64(f(x))
				found = true
			}
		}
		if !found {
			return nil
		}
		return &s
	}
	div := func(a, b *float64) *float64 {
		if a == nil || b == nil || *b == 0 {
			return nil
		}
		q := *a / *b
		return &q
	}
	le := func(x *float64, limit float64) *bool {
		if x == nil {
			return nil
		}
		ok := *x <= limit
		return &ok
	}
	refName := ""
	if len(targets) > 1 {
		refName = targets[1].Name
	}
	seqO, seqR := med("ours", func(x roundResult) float64 { return x.SeqWallS }), med(refName, func(x roundResult) float64 { return x.SeqWallS })
	p0O, p0R := med("ours", func(x roundResult) float64 { return x.P50EmptyMs }), med(refName, func(x roundResult) float64 { return x.P50EmptyMs })
	pnO, pnR := med("ours", func(x roundResult) float64 { return x.P50FullMs }), med(refName, func(x roundResult) float64 { return x.P50FullMs })
	grO := med("ours", func(x roundResult) float64 { return x.P50FullMs / x.P50EmptyMs })
	grR := med(refName, func(x roundResult) float64 { return x.P50FullMs / x.P50EmptyMs })
	cO, cR := med("ours", func(x roundResult) float64 { return x.ConcWallS }), med(refName, func(x roundResult) float64 { return x.ConcWallS })
	lost := func(x roundResult) int { return x.Non200 + x.Missing }
	lO, lR := sum("ours", lost), sum(refName, lost)

	c := r.Config
	seqRatio, concRatio := div(seqO, seqR), div(cO, cR)
	zero := func(x *float64) *bool {
		if x == nil {
			return nil
		}
		ok := *x == 0
		return &ok
	}
	r.Rows = []row{
		{Scenario: fmt.Sprintf("%d sequential uploads, empty vault (wall)", c.Sequential), Unit: "s", Ours: seqO, Reference: seqR, Ratio: seqRatio, Target: "ours ≤ 1 × ref", Met: le(seqRatio, 1)},
		{Scenario: fmt.Sprintf("upload p50, vault empty (first %d)", c.Probe), Unit: "ms", Ours: p0O, Reference: p0R, Ratio: div(p0O, p0R)},
		{Scenario: fmt.Sprintf("upload p50, %d stored (next %d)", c.Sequential, c.Probe), Unit: "ms", Ours: pnO, Reference: pnR, Ratio: div(pnO, pnR)},
		{Scenario: fmt.Sprintf("p50 growth (%d stored ÷ empty)", c.Sequential), Unit: "×", Ours: grO, Reference: grR, Ratio: div(grO, grR), Target: "ours ≤ 2 × ours empty", Met: le(grO, 2)},
		{Scenario: fmt.Sprintf("%d writers × %d uploads (wall)", c.Writers, c.PerWriter), Unit: "s", Ours: cO, Reference: cR, Ratio: concRatio, Target: "ours ≤ 0.5 × ref", Met: le(concRatio, 0.5)},
		{Scenario: "acknowledged uploads lost (non-200 + missing)", Unit: "", Ours: lO, Reference: lR, Target: "0", Met: zero(lO)},
	}
	r.AllMet = true
	for _, x := range r.Rows {
		if x.Target != "" && (x.Met == nil || !*x.Met) {
			r.AllMet = false
		}
	}
}

func (r *report) print(w io.Writer) {
	c := r.Config
	ref := "reference"
	if r.Reference != "" {
		ref += " " + r.Reference
	}
	if len(r.Rows) > 0 && r.Rows[0].Reference == nil {
		ref = "no reference: ours only"
	} else {
		ref = "ours vs " + ref
	}
	vaults := "fresh vault per scenario"
	if !r.Fresh {
		vaults = "running brokers"
	}
	fmt.Fprintf(w, "\nbench-vault: %d interleaved rounds, %s, medians over rounds (%s)\n", c.Rounds, vaults, ref)
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tours\treference\tratio\ttarget\tmet")
	for _, x := range r.Rows {
		met := "–"
		if x.Target != "" {
			met = "n/a"
			if x.Met != nil {
				met = map[bool]string{true: "yes", false: "NO"}[*x.Met]
			}
		}
		target := x.Target
		if target == "" {
			target = "–"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", x.Scenario, fmtVal(x.Ours, x.Unit), fmtVal(x.Reference, x.Unit), fmtVal(x.Ratio, "×"), target, met)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nall targets met: %v   (total %.0fs; -json for per-round figures)\n", r.AllMet, r.TotalS)
}

func fmtVal(v *float64, unit string) string {
	if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
		return "n/a"
	}
	switch unit {
	case "":
		if *v == math.Trunc(*v) && math.Abs(*v) < 1e15 {
			return fmt.Sprintf("%.0f", *v)
		}
		return fmt.Sprintf("%.2f", *v)
	case "×":
		return fmt.Sprintf("%.2f×", *v)
	default:
		return fmt.Sprintf("%.2f %s", *v, unit)
	}
}

package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/ompgo/omp/tools/benchproc"
)

type roundResult struct {
	Round      int      `json:"round"`
	Target     string   `json:"target"`
	SeqWallS   float64  `json:"sequentialWallS"`
	P50EmptyMs float64  `json:"p50EmptyMs"`
	P50FullMs  float64  `json:"p50FullMs"`
	ConcWallS  float64  `json:"concurrentWallS"`
	Uploads    int      `json:"uploads"`
	Non200     int      `json:"non200"`
	Missing    int      `json:"missingFromSnapshot"`
	Errors     []string `json:"errors,omitempty"`
}

func runRound(o options, t *target, round int) (roundResult, error) {
	res := roundResult{Round: round, Target: t.Name}
	get := func() (*instance, error) {
		if t.external != nil {
			return t.external, nil
		}
		return t.start()
	}
	runID := fmt.Sprintf("%x-r%d", time.Now().UnixNano()&0xffffffffff, round)

	// Sequential, then the probe at N stored.
	inst, err := get()
	if err != nil {
		return res, err
	}
	c := newClient(inst, 1, o.timeout)
	c.warmUp()
	var lat []time.Duration
	var emails []string
	begin := time.Now()
	for i := range o.seq {
		email := fmt.Sprintf("seq-%s-%d@bench.example", runID, i)
		d, err := c.upload(email, fmt.Sprintf("acct-seq-%s-%d", runID, i))
		res.note(err)
		emails = append(emails, email)
		if i < o.probe {
			lat = append(lat, d)
		}
	}
	res.SeqWallS = time.Since(begin).Seconds()
	res.P50EmptyMs = ms(benchproc.Median(lat))
	lat = lat[:0]
	for i := range o.probe {
		email := fmt.Sprintf("probe-%s-%d@bench.example", runID, i)
		d, err := c.upload(email, fmt.Sprintf("acct-probe-%s-%d", runID, i))
		res.note(err)
		emails = append(emails, email)
		lat = append(lat, d)
	}
	res.P50FullMs = ms(benchproc.Median(lat))
	res.Missing += c.missing(emails)
	inst.stop()

	// Concurrent, on a fresh vault.
	if inst, err = get(); err != nil {
		return res, err
	}
	c = newClient(inst, o.writers, o.timeout)
	c.warmUp()
	emails = emails[:0]
	var mu sync.Mutex
	var wg sync.WaitGroup
	release := make(chan struct{})
	for w := range o.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
			for i := range o.perWriter {
				email := fmt.Sprintf("conc-%s-%d-%d@bench.example", runID, w, i)
				_, err := c.upload(email, fmt.Sprintf("acct-conc-%s-%d-%d", runID, w, i))
				mu.Lock()
				res.note(err)
				emails = append(emails, email)
				mu.Unlock()
			}
		}()
	}
	begin = time.Now()
	close(release)
	wg.Wait()
	res.ConcWallS = time.Since(begin).Seconds()
	res.Missing += c.missing(emails)
	inst.stop()
	return res, nil
}

// note counts one upload; err non-nil means it was not answered 200.
func (r *roundResult) note(err error) {
	r.Uploads++
	if err != nil {
		r.Non200++
		if len(r.Errors) < 5 {
			r.Errors = append(r.Errors, err.Error())
		}
	}
}

package cli

import (
	"time"

	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/agent"
	"github.com/ompgo/omp/pkg/agent/compaction"
)

// compactionSettings reads the compaction.* and branchSummary.* keys of
// config.yml over the built-in defaults. compaction.methodOrder (18.1.21)
// wins over compaction.strategy: an empty list is "off", any other list
// "context-full".
func compactionSettings(s *config.Settings) compaction.Settings {
	c := compaction.Defaults()
	if v, ok := s.Bool("compaction.enabled"); ok {
		c.Enabled = v
	}
	if v, ok := s.String("compaction.strategy"); ok {
		c.Strategy = v
	}
	if n, ok := s.List("compaction.methodOrder"); ok {
		c.Strategy = "context-full"
		if n == 0 {
			c.Strategy = "off"
		}
	}
	if v, ok := s.Number("compaction.reserveTokens"); ok && v > 0 {
		c.ReserveTokens = int(v)
	}
	if v, ok := s.Number("compaction.keepRecentTokens"); ok && v > 0 {
		c.KeepRecentTokens = int(v)
	}
	if v, ok := s.Bool("compaction.autoContinue"); ok {
		c.AutoContinue = v
	}
	if v, ok := s.Number("compaction.thresholdPercent"); ok {
		c.ThresholdPercent = v
	}
	if v, ok := s.Number("compaction.thresholdTokens"); ok {
		c.ThresholdTokens = int(v)
	}
	if v, ok := s.Bool("branchSummary.enabled"); ok {
		c.BranchSummaryEnabled = v
	}
	if v, ok := s.Number("branchSummary.reserveTokens"); ok && v > 0 {
		c.BranchReserveTokens = int(v)
	}
	return c
}

// retrySettings is the auto-retry policy: agent.DefaultRetry with the
// retry.enabled, retry.maxRetries, retry.baseDelayMs and retry.maxDelayMs
// settings of config.yml applied.
func retrySettings(s *config.Settings) agent.Retry {
	r := agent.DefaultRetry()
	if v, ok := s.Bool("retry.enabled"); ok {
		r.Enabled = v
	}
	if v, ok := s.Number("retry.maxRetries"); ok && v >= 0 {
		r.MaxRetries = int(v)
	}
	if v, ok := s.Number("retry.baseDelayMs"); ok && v > 0 {
		r.BaseDelay = time.Duration(v) * time.Millisecond
	}
	if v, ok := s.Number("retry.maxDelayMs"); ok && v > 0 {
		r.MaxDelay = time.Duration(v) * time.Millisecond
	}
	return r
}

package omphost

import (
	"context"

	"github.com/ompgo/omp/pkg/agent/interactive"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/agent/tui"
)

// RunInteractive is tui.Run: the interactive mode runs in omp-host, so the
// client omp links none of the terminal UI's packages (bubbletea and its
// parsers, lipgloss, the clipboard look-up, the width tables).
func (Host) RunInteractive(ctx context.Context, opt interactive.Options) (*session.File, error) {
	return tui.Run(ctx, opt)
}

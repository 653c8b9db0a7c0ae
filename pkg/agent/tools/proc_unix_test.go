//go:build unix

package tools

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// processGone reports whether pid has exited: no such process, or a
// zombie no one has reaped yet (an orphan re-parented to a PID 1 that
// does not reap, as in some containers).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

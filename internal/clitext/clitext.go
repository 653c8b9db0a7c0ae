// Package clitext holds the small output helpers of the omp commands
// (internal/cli).
package clitext

import (
	"encoding/json"
	"fmt"
	"io"
)

// JSONLine writes v as one compact JSON line.
func JSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// Plural returns "s" for n != 1.
func Plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

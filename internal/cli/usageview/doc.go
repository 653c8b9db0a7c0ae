// Package usageview renders `omp usage` as text: the per-account quota
// breakdown and the history sparklines, fitted to 80 columns on styled
// segments that get colour only when asked for, plus the --redact masks
// and the capacity sums the JSON output shares.
package usageview

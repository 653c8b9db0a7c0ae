// Command omp is the oh-my-pi CLI (internal/ompcli): the coding agent in
// every mode, the auth broker and the auth gateway (`omp auth-broker …`,
// `omp auth-gateway …`), and `omp usage`.
package main

import "github.com/ompgo/omp/internal/ompcli"

func main() { ompcli.Main() }

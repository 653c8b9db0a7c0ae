// Command omp is the oh-my-pi CLI (internal/cli): the coding agent in
// every mode, the auth broker and the auth gateway (`omp auth-broker …`,
// `omp auth-gateway …`), and `omp usage`.
package main

import "github.com/ompgo/omp/internal/cli"

func main() { cli.Main() }

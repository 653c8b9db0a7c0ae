// Command omp is the oh-my-pi CLI (internal/ompcli) as a client: the
// coding agent, `auth-broker status`, `usage` through a broker,
// `auth-gateway status|token`… It links neither SQLite nor Prometheus (a
// test in internal/deptest keeps it so); for the commands that serve or
// open the local vault it execs omp-host with the same command line.
package main

import "github.com/ompgo/omp/internal/ompcli"

func main() { ompcli.Main(nil) }

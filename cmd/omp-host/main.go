// Command omp-host is the whole oh-my-pi CLI (internal/ompcli with the
// SQLite vault and the servers of internal/omphost): what the client omp
// execs for `auth-broker serve|login|logout|import|migrate|rekey|backup|
// restore|token create|list|revoke`, `auth-gateway serve|check` and local
// `usage`. Run directly, it behaves exactly as omp.
package main

import (
	"github.com/ompgo/omp/internal/ompcli"
	"github.com/ompgo/omp/internal/omphost"
)

func main() { ompcli.Main(omphost.Host{}) }

// Command gateway is the standalone auth gateway daemon. The gateway itself
// (internal/gatewayd, pkg/proxy) is not built yet: this binary only reports
// that, so `make build` produces every binary the layout names.
package main

import (
	"fmt"
	"os"

	"github.com/ompgo/omp/internal/buildinfo"
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "--version" || os.Args[1] == "version") {
		fmt.Println(buildinfo.String())
		return
	}
	fmt.Fprintln(os.Stderr, "gateway: not implemented yet in omp-go; run the broker with `omp auth-broker serve`")
	os.Exit(2)
}

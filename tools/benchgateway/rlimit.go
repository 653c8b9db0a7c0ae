package main

import (
	"fmt"
	"os"
	"syscall"
)

// raiseFDLimit lifts the soft open-file limit to the hard one: 1 000 open
// streams hold 2 000 sockets in this process (client and fake sides).
func raiseFDLimit() {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			fmt.Fprintln(os.Stderr, "benchgateway:", errNoFD, err)
		}
	}
}

package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// netLink is one gateway's network namespace: a veth pair whose host end
// holds hostIP (the fake upstream) and brokerIP (the broker, on its own
// address so that this gateway alone can be cut off from it) and whose
// namespace end holds nsIP (the gateway).
type netLink struct {
	ns, hostIf             string
	hostIP, brokerIP, nsIP string
}

// netnsAvailable reports whether this process can create network
// namespaces (root and the ip tool).
func netnsAvailable() bool {
	if os.Geteuid() != 0 {
		return false
	}
	_, err := exec.LookPath("ip")
	return err == nil
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// setupNetns creates n namespaces with a veth pair each (10.231.<i>.0/24);
// cleanup deletes them (and with them the pairs).
func setupNetns(n int) (links []netLink, cleanup func(), err error) {
	tag := os.Getpid() % 10000
	cleanup = func() {
		for _, l := range links {
			_ = ip("netns", "del", l.ns)
		}
	}
	for i := range n {
		l := netLink{
			ns:     fmt.Sprintf("ompgw%d-%d", tag, i),
			hostIf: fmt.Sprintf("og%dh%d", i, tag),
			hostIP: fmt.Sprintf("10.231.%d.1", i), brokerIP: fmt.Sprintf("10.231.%d.3", i), nsIP: fmt.Sprintf("10.231.%d.2", i),
		}
		peer := fmt.Sprintf("og%dn%d", i, tag)
		steps := [][]string{
			{"netns", "add", l.ns},
			{"link", "add", l.hostIf, "type", "veth", "peer", "name", peer},
			{"link", "set", peer, "netns", l.ns},
			{"addr", "add", l.hostIP + "/24", "dev", l.hostIf},
			{"addr", "add", l.brokerIP + "/24", "dev", l.hostIf},
			{"link", "set", l.hostIf, "up"},
			{"-n", l.ns, "addr", "add", l.nsIP + "/24", "dev", peer},
			{"-n", l.ns, "link", "set", peer, "up"},
			{"-n", l.ns, "link", "set", "lo", "up"},
		}
		links = append(links, l)
		for _, s := range steps {
			if err := ip(s...); err != nil {
				cleanup()
				return nil, nil, err
			}
		}
	}
	return links, cleanup, nil
}

// cut blackholes (or, with restore, un-blackholes) the path between the
// broker's address and l's gateway, both ways: a route inside the
// namespace (gateway → broker) and a policy rule on the host (broker →
// gateway). The gateway loses the broker and nothing else.
func (l netLink) cut(restore bool) error {
	verb := "add"
	if restore {
		verb = "del"
	}
	if err := ip("-n", l.ns, "route", verb, "blackhole", l.brokerIP+"/32"); err != nil {
		return err
	}
	return ip("rule", verb, "from", l.brokerIP, "to", l.nsIP, "blackhole")
}

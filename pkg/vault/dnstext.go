package vault

import (
	"errors"
	"net"
	"strings"
)

// PublicErrorText is err's text without the address of the DNS server of
// any failed lookup in it ("lookup auth.example on 10.0.0.2:53: no such
// host" reads "lookup auth.example: no such host"): the broker's network
// layout is not the client's business, and the host and reason are what an
// operator acts on.
func PublicErrorText(err error) string {
	if err == nil {
		return ""
	}
	text := err.Error()
	var de *net.DNSError
	if errors.As(err, &de) && de.Server != "" {
		text = strings.ReplaceAll(text, " on "+de.Server+": ", ": ")
	}
	return text
}

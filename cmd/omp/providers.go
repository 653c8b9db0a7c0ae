package main

import "github.com/ompgo/omp/pkg/vault/oauth"

// loginProviders lists the providers whose login flows omp-go implements,
// with the reference ids and names (broker.md §1.7): the OAuth flows, then
// the API-key flows (discrepancies.md A12).
func loginProviders(reg *oauth.Registry) []providerName {
	var out []providerName
	for _, id := range reg.IDs() {
		p, _ := reg.Get(id)
		out = append(out, providerName{ID: p.ID, Name: p.Name})
	}
	for _, k := range reg.KeyLogins() {
		out = append(out, providerName{ID: k.ID, Name: k.Name})
	}
	return out
}

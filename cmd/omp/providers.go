package main

import "github.com/ompgo/omp/pkg/vault/oauth"

// loginProviders lists the providers whose login flows omp-go implements,
// with the reference ids and names (broker.md §1.7).
func loginProviders() []providerName {
	reg := oauth.NewRegistry(nil)
	var out []providerName
	for _, id := range reg.IDs() {
		p, _ := reg.Get(id)
		out = append(out, providerName{ID: p.ID, Name: p.Name})
	}
	return out
}

package remote

import (
	"context"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// blockPostTimeout bounds one fire-and-forget block post.
const blockPostTimeout = 10 * time.Second

// PublishBlock shares a block the picker set: it merges the
// block into the held entry (max, so selection here sees it at once and a
// snapshot without it cannot lift it early), drops the usage cache, and
// posts {"providerKey","blockScope","blockedUntilMs"} to the broker in the
// background. A failed post is logged (`auth-broker credential block
// propagation failed`) and not retried: the local block still holds, and
// the next post of the same account carries the merged deadline.
func (s *Store) PublishBlock(e vault.Entry, providerKey, scope string, untilMs int64) {
	b := vault.CredentialBlock{ProviderKey: providerKey, Scope: scope, UntilMs: untilMs}
	s.mu.Lock()
	if held, ok := s.entries[e.ID]; ok {
		held.Blocks = mergeBlock(held.Blocks, b)
		s.entries[e.ID] = held
	}
	s.usage = nil
	s.mu.Unlock()
	s.posts.Add(1)
	go func() {
		defer s.posts.Done()
		ctx, cancel := context.WithTimeout(context.Background(), blockPostTimeout)
		defer cancel()
		if err := s.opts.Client.PostBlock(ctx, e.ID, b); err != nil {
			s.log.Warn("auth-broker credential block propagation failed", "id", e.ID, "providerKey", providerKey,
				"blockScope", scope, "error", err.Error())
		}
	}()
}

// mergeBlock returns bs with b merged in: the block of the same provider
// key and scope keeps the later deadline; bs is not modified.
func mergeBlock(bs []vault.CredentialBlock, b vault.CredentialBlock) []vault.CredentialBlock {
	out := make([]vault.CredentialBlock, 0, len(bs)+1)
	found := false
	for _, x := range bs {
		if x.ProviderKey == b.ProviderKey && x.Scope == b.Scope {
			x.UntilMs = max(x.UntilMs, b.UntilMs)
			found = true
		}
		out = append(out, x)
	}
	if !found {
		out = append(out, b)
	}
	return out
}

// WaitPosts waits for the block posts in flight (tests, shutdown).
func (s *Store) WaitPosts() { s.posts.Wait() }

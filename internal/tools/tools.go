//go:build tools

// Package tools pins the project's chosen dependencies so go.mod and go.sum
// stay complete while packages that use them are being written. It is never
// built (build tag "tools").
package tools

import (
	_ "github.com/anthropics/anthropic-sdk-go"
	_ "github.com/go-chi/chi/v5"
	_ "github.com/go-chi/chi/v5/middleware"
	_ "github.com/openai/openai-go/v3"
	_ "github.com/openai/openai-go/v3/packages/ssestream"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/collectors"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/prometheus/client_golang/prometheus/testutil"
	_ "github.com/r3labs/sse/v2"
	_ "github.com/spf13/cobra"
	_ "golang.org/x/crypto/chacha20poly1305"
	_ "golang.org/x/crypto/hkdf"
	_ "golang.org/x/oauth2"
	_ "golang.org/x/oauth2/google"
	_ "golang.org/x/sync/errgroup"
	_ "golang.org/x/sync/singleflight"
	_ "gopkg.in/yaml.v3"
	_ "modernc.org/sqlite"
)

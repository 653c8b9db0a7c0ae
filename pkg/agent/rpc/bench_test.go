package rpc

import (
	"bufio"
	"context"
	"io"
	"testing"

	"github.com/ompgo/omp/pkg/agent"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/tools/benchcpu"
)

// BenchmarkRPCGetState is one get_state round trip through the RPC mode's
// reader, handler and writer over pipes; the target is ≤ 1 ms.
func BenchmarkRPCGetState(b *testing.B) {
	sf, err := session.Create("", b.TempDir(), session.Options{})
	if err != nil {
		b.Fatal(err)
	}
	m := llm.Model{ID: "fake-model", Provider: "fake", API: llm.APIAnthropic, ContextWindow: 200000, MaxTokens: 8192}
	ag := &agent.Agent{Session: sf, Model: m, ThinkingLevel: "off"}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := testHost(ag, m)
	h.Stdin, h.Stdout, h.AgentDir = inR, outW, b.TempDir()
	done := make(chan error, 1)
	go func() { done <- Serve(context.Background(), h); outW.Close() }()
	r := bufio.NewReader(outR)
	for range 2 { // ready, available_commands_update
		if _, err := r.ReadBytes('\n'); err != nil {
			b.Fatal(err)
		}
	}
	cmd := []byte(`{"id":"1","type":"get_state"}` + "\n")
	stop := benchcpu.Start(b)
	for b.Loop() {
		if _, err := inW.Write(cmd); err != nil {
			b.Fatal(err)
		}
		if _, err := r.ReadBytes('\n'); err != nil {
			b.Fatal(err)
		}
	}
	stop()
	inW.Close()
	go io.Copy(io.Discard, r)
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

package cli

import (
	"bufio"
	"context"
	"io"
	"testing"

	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/agent"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/catalog"
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
	rt := &agentRuntime{ag: ag, cat: llm.Builtin().With(m), keys: &keyLadder{models: &catalog.File{}},
		dirs: config.Dirs{AgentDir: b.TempDir()}}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	a := &app{stdin: inR, stdout: outW, stderr: io.Discard}
	done := make(chan error, 1)
	go func() { done <- a.runRPC(context.Background(), rt); outW.Close() }()
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

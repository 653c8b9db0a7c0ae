package llm

// The demo provider is an offline model for trying the broker, the gateway
// and the agent without an account. It is in the bundled catalogue, but
// like every model it is only routable when the vault holds a credential of
// its provider, and only `omp auth-broker serve --demo` stores one.
const (
	// APIDemo is the wire API of the demo provider: answered in process,
	// never over the network (pkg/llm/demo).
	APIDemo = "demo"
	// ProviderDemo is the demo provider's id.
	ProviderDemo = "demo"
	// DemoModelID is the id of the demo model.
	DemoModelID = "demo-echo"
	// DemoKey is the API key of the demo credential. It is not a secret:
	// it marks the credential as the demo's.
	DemoKey = "demo"
)

// DemoModel returns the demo model: free, text only.
func DemoModel() Model {
	return Model{
		ID:            DemoModelID,
		Name:          "Demo echo (offline demo, not a real model)",
		Provider:      ProviderDemo,
		API:           APIDemo,
		Input:         []Modality{ModalityText},
		ContextWindow: 32768,
		MaxTokens:     4096,
	}
}

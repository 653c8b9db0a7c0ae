package vault

// CredentialBlock is one shared block of a credential as the broker
// publishes it on snapshot entries (fleet.md §2): the credential is not to
// be chosen for ProviderKey ("<provider>:<type>") in Scope ("" = every
// request; else a scope such as Codex "chat"/"spark"/"shared",
// "counter:<key>", "tier:<t>", "model-policy:<model>") until UntilMs.
type CredentialBlock struct {
	ProviderKey string
	Scope       string
	UntilMs     int64 // epoch ms
	UpdatedAtMs int64 // epoch ms of the row's last write; 0 = not sent
}

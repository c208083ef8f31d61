package protocol

// threadSourceKinds are the ThreadSourceKind values in schema order (the order serde lists them in).
var threadSourceKinds = []string{
	string(ThreadSourceKindCli), string(ThreadSourceKindVscode), string(ThreadSourceKindExec),
	string(ThreadSourceKindAppServer), string(ThreadSourceKindSubAgent), string(ThreadSourceKindSubAgentReview),
	string(ThreadSourceKindSubAgentCompact), string(ThreadSourceKindSubAgentThreadSpawn),
	string(ThreadSourceKindSubAgentOther), string(ThreadSourceKindUnknown),
}

// Validate refuses a value outside the enum with serde's "unknown variant" wording, as the reference
// refuses a `sourceKinds` entry such as "custom".
func (k ThreadSourceKind) Validate() error {
	for _, v := range threadSourceKinds {
		if string(k) == v {
			return nil
		}
	}
	return unknownVariant(string(k), threadSourceKinds...)
}

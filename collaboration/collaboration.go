// Package collaboration holds the built-in collaboration modes (presets a client offers for a turn:
// planning first, or the default behaviour) as collaborationMode/list reports them.
package collaboration

// Mode is one preset: its display name, its kind, and the model and reasoning effort it pins ("" = the
// thread's own).
type Mode struct {
	Name            string
	Kind            string
	Model           string
	ReasoningEffort string
}

// Builtin returns the presets in the order the reference lists them.
func Builtin() []Mode {
	return []Mode{
		{Name: "Plan", Kind: "plan", ReasoningEffort: "medium"},
		{Name: "Default", Kind: "default"},
	}
}

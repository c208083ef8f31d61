package model

import (
	"slices"
	"strings"
	"sync"
)

// DefaultContextWindow is the modelContextWindow reported for models without known metadata
// (the reference reported 258400, i.e. 95 % of a 272 000-token window).
const DefaultContextWindow int64 = 258_400

// DefaultModel is the catalogue's default model id.
const DefaultModel = "gpt-6.1-sol"

// ReasoningEffortOption is one selectable reasoning effort of a model (schema ReasoningEffortOption).
type ReasoningEffortOption struct {
	ReasoningEffort string `json:"reasoningEffort"`
	Description     string `json:"description"`
}

// ServiceTier is a speed tier a model offers (schema ModelServiceTier).
type ServiceTier struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// UpgradeInfo points at a model's successor (schema ModelUpgradeInfo).
type UpgradeInfo struct {
	Model             string  `json:"model"`
	UpgradeCopy       *string `json:"upgradeCopy"`
	ModelLink         *string `json:"modelLink"`
	MigrationMarkdown *string `json:"migrationMarkdown"`
	RetirementAt      *int64  `json:"retirementAt"`
}

// AvailabilityNux is a one-line promotion shown for a model (schema ModelAvailabilityNux).
type AvailabilityNux struct {
	Message string `json:"message"`
}

// CatalogModel is one entry of the bundled catalogue, with the JSON field names of the schema's
// Model definition (model/list); ContextWindow is for thread/tokenUsage's modelContextWindow.
type CatalogModel struct {
	ID                        string                  `json:"id"`
	Model                     string                  `json:"model"`
	Upgrade                   *string                 `json:"upgrade"`
	UpgradeInfo               *UpgradeInfo            `json:"upgradeInfo"`
	AvailabilityNux           *AvailabilityNux        `json:"availabilityNux"`
	DisplayName               string                  `json:"displayName"`
	Description               string                  `json:"description"`
	ModelSpecialty            *string                 `json:"modelSpecialty"`
	Hidden                    bool                    `json:"hidden"`
	SupportedReasoningEfforts []ReasoningEffortOption `json:"supportedReasoningEfforts"`
	DefaultReasoningEffort    string                  `json:"defaultReasoningEffort"`
	InputModalities           []string                `json:"inputModalities"`
	SupportsPersonality       bool                    `json:"supportsPersonality"`
	MultiAgentVersion         *string                 `json:"multiAgentVersion"`
	AdditionalSpeedTiers      []string                `json:"additionalSpeedTiers"`
	ServiceTiers              []ServiceTier           `json:"serviceTiers"`
	DefaultServiceTier        *string                 `json:"defaultServiceTier"`
	AvailableAccessPrograms   *struct {
		Cyber []string `json:"cyber"`
	} `json:"availableAccessPrograms"`
	IsDefault     bool  `json:"isDefault"`
	ContextWindow int64 `json:"-"`
	// Verbosity is the text.verbosity sent to the model by default ("" = none).
	Verbosity string `json:"-"`
	// ReasoningContext is the reasoning.context sent by default ("" = none).
	ReasoningContext string `json:"-"`
	// CodeMode is the reference's `tool_mode = "code_mode_only"` (every entry but gpt-5.5): its tools are
	// reached through a JavaScript `exec` tool, and the provider's hosted web_search is not offered.
	CodeMode bool `json:"-"`
	// ResponsesLite is the reference's use_responses_lite (the code-mode entries): input images go to the
	// model without a `detail`.
	ResponsesLite bool `json:"-"`
	// ImageDetailOriginal is the reference's supports_image_detail_original (every entry): input images are
	// recorded with detail "original", whatever the client asked.
	ImageDetailOriginal bool `json:"-"`
}

func strp(s string) *string { return &s }

func efforts(levels ...string) []ReasoningEffortOption {
	text := map[string]string{
		"low":    "Quick answers with light reasoning",
		"medium": "A balance of speed and depth for most tasks",
		"high":   "Deeper reasoning for harder problems",
		"xhigh":  "Very deep reasoning for difficult problems",
		"max":    "The deepest reasoning, for the toughest problems",
		"ultra":  "Deepest reasoning, delegating sub-tasks automatically",
	}
	out := make([]ReasoningEffortOption, len(levels))
	for i, l := range levels {
		out[i] = ReasoningEffortOption{ReasoningEffort: l, Description: text[l]}
	}
	return out
}

var (
	effortsUltra = []string{"low", "medium", "high", "xhigh", "max", "ultra"}
	effortsMax   = []string{"low", "medium", "high", "xhigh", "max"}
	effortsX     = []string{"low", "medium", "high", "xhigh"}
)

func tier(desc string) []ServiceTier {
	return []ServiceTier{{ID: "priority", Name: "Fast", Description: desc}}
}

func upgradeTo(m string) (*string, *UpgradeInfo) {
	return strp(m), &UpgradeInfo{Model: m}
}

// Catalog returns the bundled model catalogue in display order (9 visible, 3 hidden entries);
// exactly one entry, DefaultModel, has IsDefault. Each call returns a fresh copy.
func Catalog() []CatalogModel {
	mk := func(id, display, desc, defEffort string, levels []string, multi string) CatalogModel {
		m := CatalogModel{
			ID: id, Model: id, DisplayName: display, Description: desc,
			SupportedReasoningEfforts: efforts(levels...), DefaultReasoningEffort: defEffort,
			InputModalities: []string{"text", "image"}, AdditionalSpeedTiers: []string{"fast"},
			ServiceTiers: tier("1.5x speed, increased usage"), ContextWindow: DefaultContextWindow,
			Verbosity: "low", ImageDetailOriginal: true,
		}
		if multi != "" {
			m.MultiAgentVersion = strp(multi)
			m.ReasoningContext = "all_turns"
			m.CodeMode = true
			m.ResponsesLite = true
		}
		return m
	}
	sol61 := mk("gpt-6.1-sol", "GPT-6.1-Sol", "Newest all-round model for coding and daily tasks.", "low", effortsUltra, "v2")
	sol61.IsDefault = true
	sol61.AvailabilityNux = &AvailabilityNux{Message: "GPT-6.1 Sol is available: strong results on complex work at a lower cost."}
	sol61.ServiceTiers = tier("2x speed, increased usage")

	astra := mk("gpt-6-astra", "GPT-6-Astra", "Most capable model for the hardest, highest-stakes work.", "low", effortsUltra, "v2")
	astra.ServiceTiers = tier("2x speed, increased usage")

	sol6 := mk("gpt-6-sol", "GPT-6-Sol", "The previous all-round model.", "medium", effortsUltra, "v2")
	sol6.ServiceTiers, sol6.DefaultServiceTier = tier("1.5x speed"), strp("priority")

	luna6 := mk("gpt-6-luna", "GPT-6-Luna", "Quick, low-cost model for simpler tasks.", "medium", effortsMax, "v2")
	luna6.ServiceTiers, luna6.DefaultServiceTier = tier("1.5x speed"), strp("priority")

	sol56 := mk("gpt-5.6-sol", "GPT-5.6-Sol", "Earlier-generation all-round model.", "low", effortsUltra, "v2")
	sol56.Upgrade, sol56.UpgradeInfo = upgradeTo("gpt-6-sol")

	terra61 := mk("gpt-6.1-terra", "GPT-6.1 Terra", "GPT-6.1 Terra model tuned for Codex.", "low", effortsUltra, "v2")
	terra61.ServiceTiers = tier("1.5x speed")

	terra56 := mk("gpt-5.6-terra", "GPT-5.6-Terra", "Earlier-generation balanced model for routine work.", "medium", effortsUltra, "v2")
	terra56.Upgrade, terra56.UpgradeInfo = upgradeTo("gpt-6-sol")

	luna56 := mk("gpt-5.6-luna", "GPT-5.6-Luna", "Earlier-generation quick, efficient model.", "medium", effortsMax, "v1")
	luna56.Upgrade, luna56.UpgradeInfo = upgradeTo("gpt-6-luna")

	blue := mk("gpt-daybreak-blue-latest", "Daybreak Blue", "Frontier agentic coding model for defensive security work.", "low", effortsUltra, "v2")
	blue.Hidden, blue.ModelSpecialty, blue.AdditionalSpeedTiers, blue.ServiceTiers = true, strp("cyber"), []string{}, []ServiceTier{}

	red := mk("gpt-daybreak-red-latest", "Daybreak Red", "Security-research variant of the frontier coding model, for authorized offensive testing.", "medium", effortsUltra, "v2")
	red.Hidden, red.ModelSpecialty, red.AdditionalSpeedTiers, red.ServiceTiers = true, strp("cyber"), []string{}, []ServiceTier{}

	g55 := mk("gpt-5.5", "GPT-5.5", "Legacy coding model.", "medium", effortsX, "")
	g55.Upgrade, g55.UpgradeInfo = upgradeTo("gpt-6-sol")

	review := mk("codex-auto-review", "Codex Auto Review", "Model that reviews approval requests automatically.", "medium", effortsMax, "v1")
	review.Hidden = true

	return []CatalogModel{sol61, astra, sol6, luna6, sol56, terra61, terra56, luna56, blue, red, g55, review}
}

// catalog is the catalogue lookups read (built once, never handed out: LookupModel returns copies).
var catalog = sync.OnceValue(Catalog)

// find returns the shared entry with this id (or model slug), nil when there is none.
func find(id string) *CatalogModel {
	c := catalog()
	for i := range c {
		if c[i].ID == id || c[i].Model == id {
			return &c[i]
		}
	}
	return nil
}

// LookupModel returns the catalogue entry with this id (or model slug); the entry is the caller's own.
func LookupModel(id string) (CatalogModel, bool) {
	m := find(id)
	if m == nil {
		return CatalogModel{}, false
	}
	return m.clone(), true
}

// clone copies m with its slices and pointed-to values, so a caller's changes stay its own.
func (m *CatalogModel) clone() CatalogModel {
	c := *m
	c.Upgrade, c.ModelSpecialty, c.MultiAgentVersion, c.DefaultServiceTier =
		clonePtr(m.Upgrade), clonePtr(m.ModelSpecialty), clonePtr(m.MultiAgentVersion), clonePtr(m.DefaultServiceTier)
	if m.UpgradeInfo != nil {
		u := *m.UpgradeInfo
		u.UpgradeCopy, u.ModelLink, u.MigrationMarkdown, u.RetirementAt =
			clonePtr(u.UpgradeCopy), clonePtr(u.ModelLink), clonePtr(u.MigrationMarkdown), clonePtr(u.RetirementAt)
		c.UpgradeInfo = &u
	}
	c.AvailabilityNux = clonePtr(m.AvailabilityNux)
	c.SupportedReasoningEfforts = slices.Clone(m.SupportedReasoningEfforts)
	c.InputModalities = slices.Clone(m.InputModalities)
	c.AdditionalSpeedTiers = slices.Clone(m.AdditionalSpeedTiers)
	c.ServiceTiers = slices.Clone(m.ServiceTiers)
	if m.AvailableAccessPrograms != nil {
		a := *m.AvailableAccessPrograms
		a.Cyber = slices.Clone(a.Cyber)
		c.AvailableAccessPrograms = &a
	}
	return c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// ContextWindow returns the effective context window for model id (DefaultContextWindow when
// the model is unknown).
func ContextWindow(id string) int64 {
	if m := find(id); m != nil && m.ContextWindow > 0 {
		return m.ContextWindow
	}
	return DefaultContextWindow
}

// ServiceTierAdvertised reports whether requests for model id may carry service tier tier, as the reference
// decides: "flex" is accepted for every model, any other tier only when the catalogue lists it for the model.
func ServiceTierAdvertised(id, tier string) bool {
	if tier == "flex" {
		return true
	}
	m := find(id)
	if m == nil {
		return false
	}
	for _, t := range m.ServiceTiers {
		if t.ID == tier {
			return true
		}
	}
	return false
}

// ModeInstructions reports whether the catalogue gives this model instructions for the Default collaboration
// mode (the gpt-6.x models): the reference tells them the mode in every initial context.
func ModeInstructions(id string) bool {
	m := find(id)
	return m != nil && strings.HasPrefix(m.Model, "gpt-6")
}

// AsyncTools reports whether the reference's code mode gives this model its gpt-6.x tools:
// request_user_input_async and the `clock` namespace (sleep, curr_time).
func AsyncTools(id string) bool {
	m := find(id)
	return m != nil && m.CodeMode && strings.HasPrefix(m.Model, "gpt-6")
}

// MultiAgentV2 reports whether a thread started on this model uses the reference's multi-agent version v2 (its
// initial context then tells the model its agent role and delegation mode).
func MultiAgentV2(id string) bool {
	m := find(id)
	return m != nil && m.MultiAgentVersion != nil && *m.MultiAgentVersion == "v2"
}

// HasMultiAgentVersion reports whether the catalogue gives this model a multi-agent version (v1 or v2): a
// thread started on such a model tells a later switch to another catalogue model in a message that names it,
// as the reference does.
func HasMultiAgentVersion(id string) bool {
	m := find(id)
	return m != nil && m.MultiAgentVersion != nil
}

// SearchTool reports whether the model finds deferred tools through tool_search (the reference's
// supports_search_tool: true for every catalogue entry, false for a model outside the catalogue).
func SearchTool(id string) bool { return find(id) != nil }

// UnknownModelWarning is the reference's warning for a turn on a model without catalogue metadata.
func UnknownModelWarning(id string) string {
	return "Model metadata for `" + id + "` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."
}

package model_test

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"appserver/model"
)

func TestProviderDefaults(t *testing.T) {
	var p model.Provider
	require.Equal(t, 4, p.EffectiveRequestMaxRetries())
	require.Equal(t, 5, p.EffectiveStreamMaxRetries())
	require.Equal(t, 300*time.Second, p.EffectiveStreamIdleTimeout())
	p = model.Provider{RequestMaxRetries: i64(1000), StreamMaxRetries: i64(-3), StreamIdleTimeoutMs: i64(1500)}
	require.Equal(t, 100, p.EffectiveRequestMaxRetries())
	require.Equal(t, 0, p.EffectiveStreamMaxRetries())
	require.Equal(t, 1500*time.Millisecond, p.EffectiveStreamIdleTimeout())
	p.StreamIdleTimeoutMs = i64(0)
	require.Equal(t, 300*time.Second, p.EffectiveStreamIdleTimeout())
}

func TestBuiltinProviders(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	b := model.BuiltinProviders()
	require.Len(t, b, 3)
	require.Equal(t, "https://api.openai.com/v1", b["openai"].BaseURL)
	require.Equal(t, "OPENAI_API_KEY", b["openai"].EnvKey)
	require.True(t, b["openai"].RequiresOpenAIAuth)
	require.Equal(t, "http://localhost:11434/v1", b["ollama"].BaseURL)
	require.Equal(t, "http://localhost:1234/v1", b["lmstudio"].BaseURL)
	for id, p := range b {
		require.Equal(t, id, p.ID)
		require.Equal(t, "responses", p.WireAPI)
	}
	t.Setenv("OPENAI_BASE_URL", "http://proxy.local/v1")
	require.Equal(t, "http://proxy.local/v1", model.BuiltinProviders()["openai"].BaseURL)
}

func TestCatalog(t *testing.T) {
	cat := model.Catalog()
	require.Len(t, cat, 12)
	visible, defaults := 0, 0
	ids := map[string]bool{}
	for _, m := range cat {
		require.False(t, ids[m.ID], "duplicate %s", m.ID)
		ids[m.ID] = true
		if !m.Hidden {
			visible++
		}
		if m.IsDefault {
			defaults++
			require.Equal(t, model.DefaultModel, m.ID)
		}
		require.NotEmpty(t, m.Description)
		found := false
		for _, e := range m.SupportedReasoningEfforts {
			require.NotEmpty(t, e.Description)
			found = found || e.ReasoningEffort == m.DefaultReasoningEffort
		}
		require.True(t, found, "%s default effort is supported", m.ID)
	}
	require.Equal(t, 9, visible)
	require.Equal(t, 1, defaults)
	require.Equal(t, model.DefaultModel, cat[0].ID)

	cat[0].DisplayName = "mutated"
	require.NotEqual(t, "mutated", model.Catalog()[0].DisplayName, "fresh copy per call")

	require.Equal(t, int64(258400), model.ContextWindow("mock-model"))
	require.Equal(t, int64(258400), model.ContextWindow(model.DefaultModel))
	_, ok := model.LookupModel("nope")
	require.False(t, ok)
}

func TestCatalogMatchesSchema(t *testing.T) {
	f, err := os.Open("../schema/codex_app_server_protocol.v2.schemas.json")
	if os.IsNotExist(err) {
		t.Skip("schema bundle not in the repo")
	}
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("bundle.json", doc))
	sch, err := c.Compile("bundle.json#/definitions/ModelListResponse")
	require.NoError(t, err)

	raw, err := json.Marshal(map[string]any{"data": model.Catalog(), "nextCursor": nil})
	require.NoError(t, err)
	v, err := jsonschema.UnmarshalJSON(bytesReader(raw))
	require.NoError(t, err)
	require.NoError(t, sch.Validate(v))

	var generic []map[string]any
	require.NoError(t, json.Unmarshal(mustJSON(t, model.Catalog()), &generic))
	require.NotContains(t, generic[0], "ContextWindow")
	require.Contains(t, generic[0], "supportedReasoningEfforts")
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

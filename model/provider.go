package model

import (
	"os"
	"time"
)

// Retry and timeout defaults of a provider when its config leaves them unset.
const (
	DefaultRequestMaxRetries = 4
	DefaultStreamMaxRetries  = 5
	// DefaultNetworkWaitMaxRetries bounds the "waiting for network" retries (the reference has no bound).
	DefaultNetworkWaitMaxRetries = 5
	MaxRetriesCap                = 100
	DefaultStreamIdleTimeoutMs   = 300_000
)

// WireAPIResponses is the only wire protocol the client speaks.
const WireAPIResponses = "responses"

// Provider describes one model provider, as configured under [model_providers.<id>].
// Pointer fields are nil when unset; use the Effective* methods for the values in force.
type Provider struct {
	ID                      string            // the table key, e.g. "openai"
	Name                    string            // display name
	BaseURL                 string            // e.g. "https://api.openai.com/v1"; /responses is appended
	EnvKey                  string            // env var holding the API key; set but missing/empty → error
	EnvKeyInstructions      string            // appended to the missing-key error
	ExperimentalBearerToken string            // a literal token; wins over EnvKey
	WireAPI                 string            // "responses" (empty means responses)
	QueryParams             map[string]string // added to every request URL (e.g. Azure api-version)
	HTTPHeaders             map[string]string // static extra headers
	EnvHTTPHeaders          map[string]string // header name → env var; skipped when the var is unset/empty
	RequestMaxRetries       *int64            // HTTP-level retries (5xx, transport errors)
	StreamMaxRetries        *int64            // stream-level retries (disconnects, idle, retryable statuses)
	StreamIdleTimeoutMs     *int64            // max silence on an open stream
	NetworkWaitMaxRetries   *int64            // retries while the provider cannot be reached (connect fails)
	RequiresOpenAIAuth      bool              // the provider authenticates with the OpenAI account
}

func clampRetries(p *int64, def int) int {
	if p == nil {
		return def
	}
	return int(min(max(*p, 0), MaxRetriesCap))
}

// EffectiveRequestMaxRetries returns request_max_retries or its default 4, capped at 100.
func (p Provider) EffectiveRequestMaxRetries() int {
	return clampRetries(p.RequestMaxRetries, DefaultRequestMaxRetries)
}

// EffectiveNetworkWaitMaxRetries returns network_wait_max_retries or its default 5, capped at 100.
func (p Provider) EffectiveNetworkWaitMaxRetries() int {
	return clampRetries(p.NetworkWaitMaxRetries, DefaultNetworkWaitMaxRetries)
}

// EffectiveStreamMaxRetries returns stream_max_retries or its default 5, capped at 100.
func (p Provider) EffectiveStreamMaxRetries() int {
	return clampRetries(p.StreamMaxRetries, DefaultStreamMaxRetries)
}

// EffectiveStreamIdleTimeout returns stream_idle_timeout_ms (default 300 s) as a duration.
func (p Provider) EffectiveStreamIdleTimeout() time.Duration {
	if p.StreamIdleTimeoutMs == nil || *p.StreamIdleTimeoutMs <= 0 {
		return DefaultStreamIdleTimeoutMs * time.Millisecond
	}
	return time.Duration(*p.StreamIdleTimeoutMs) * time.Millisecond
}

// Built-in provider ids.
const (
	ProviderOpenAI   = "openai"
	ProviderOllama   = "ollama"
	ProviderLMStudio = "lmstudio"
)

// BuiltinProviders returns the providers that exist without any config: openai (base URL
// overridable with OPENAI_BASE_URL, key from OPENAI_API_KEY), ollama and lmstudio.
// User config may add providers but, like the reference, should not replace these ids.
func BuiltinProviders() map[string]Provider {
	openaiBase := os.Getenv("OPENAI_BASE_URL")
	if openaiBase == "" {
		openaiBase = "https://api.openai.com/v1"
	}
	return map[string]Provider{
		ProviderOpenAI: {
			ID: ProviderOpenAI, Name: "OpenAI", BaseURL: openaiBase,
			EnvKey: "OPENAI_API_KEY", WireAPI: WireAPIResponses, RequiresOpenAIAuth: true,
		},
		ProviderOllama: {
			ID: ProviderOllama, Name: "Ollama", BaseURL: "http://localhost:11434/v1", WireAPI: WireAPIResponses,
		},
		ProviderLMStudio: {
			ID: ProviderLMStudio, Name: "LM Studio", BaseURL: "http://localhost:1234/v1", WireAPI: WireAPIResponses,
		},
	}
}

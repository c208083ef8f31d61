package thread

import (
	"appserver/config"
	"appserver/model"
	protocol "appserver/protocol/v2"
)

// ServiceTierDefault is the tier name that asks for standard speed (no service_tier in requests).
const ServiceTierDefault = "default"

// NormalizeServiceTier maps a client-facing tier name to the one the thread keeps ("fast" is "priority"), as the
// reference does for thread/start, turn/start, thread/resume and thread/settings/update.
func NormalizeServiceTier(tier string) string {
	if tier == "fast" {
		return "priority"
	}
	return tier
}

// requestServiceTier is the service_tier a request of model mdl carries for thread tier tier and turn/start's
// serviceTierForTurn forTurn (which wins, unaliased): none at standard speed or when the model does not advertise
// the tier.
func requestServiceTier(mdl string, tier, forTurn *string) string {
	t := deref(tier)
	if forTurn != nil {
		t = *forTurn
	}
	if t == "" || t == ServiceTierDefault || !model.ServiceTierAdvertised(mdl, t) {
		return ""
	}
	return t
}

// ReportedServiceTier is the serviceTier thread/start and thread/resume answer with: the thread's tier, or null
// when its model does not advertise it (it is then omitted from requests, and UnadvertisedTierWarning says so).
func ReportedServiceTier(s Settings) *string {
	if s.ServiceTier == nil || *s.ServiceTier == ServiceTierDefault || model.ServiceTierAdvertised(s.Model, *s.ServiceTier) {
		return s.ServiceTier
	}
	return nil
}

// UnadvertisedTierWarning is the reference's warning for a thread whose tier its model does not advertise ("" when
// there is nothing to warn about).
func UnadvertisedTierWarning(s Settings) string {
	if s.ServiceTier == nil || ReportedServiceTier(s) != nil {
		return ""
	}
	return "Configured service tier `" + *s.ServiceTier + "` is not advertised as supported for model `" + s.Model +
		"` and will be omitted from requests."
}

// tierAndPersonality returns a new thread's service tier and personality: the client's, else config.toml's
// service_tier and personality.
func tierAndPersonality(tier *string, p *protocol.Personality, cfg *config.Config) (*string, *protocol.Personality) {
	if tier == nil && cfg.ServiceTier != "" {
		tier = &cfg.ServiceTier
	}
	if tier != nil {
		tier = ptr(NormalizeServiceTier(*tier))
	}
	if p == nil && cfg.Personality != "" {
		p = ptr(protocol.Personality(cfg.Personality))
	}
	return tier, p
}

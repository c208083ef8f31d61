package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os/exec"
	"strings"

	"github.com/google/uuid"

	"appserver/auth"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/ratelimits"
)

// addAccountRoutes registers the account methods: reads as the reference answers them for an API-key or
// signed-out user, API-key login/logout stored in auth.json, and the ChatGPT login flows.
func (s *Server) addAccountRoutes(r map[string]route) {
	s.logins = &auth.Logins{Done: s.loginDone}
	s.addCloudAccountRoutes(r)
	r[protocol.MethodAccountRead] = handle(s.accountRead)
	r[protocol.MethodAccountLoginStart] = handle(s.accountLoginStart)
	r[protocol.MethodAccountLoginCancel] = handle(s.accountLoginCancel)
	r[protocol.MethodAccountLogout] = handle(s.accountLogout)
	r[protocol.MethodAccountRateLimitsRead] = handle(s.accountRateLimitsRead)
	r[protocol.MethodAccountUsageRead] = handle(s.accountNeedsChatGPT("to read token usage"))
	r[protocol.MethodAccountWorkspaceMessagesRead] = handle(s.accountNeedsChatGPT("to read workspace messages"))
	r[protocol.MethodAccountSendAddCreditsNudgeEmail] = handle(s.accountNeedsChatGPT("to notify workspace owner"))
	r[protocol.MethodAccountRateLimitResetCreditConsume] = handle(s.accountNeedsChatGPT("for rate limit reset credits"))
	r[protocol.MethodAccountBedrockCheckGovCloudRequirements] = handle(func(context.Context, *connection, *jsonrpc.Request, *protocol.BedrockCheckGovCloudRequirementsParams) (any, error) {
		return protocol.BedrockCheckGovCloudRequirementsResponse{}, nil
	})
	r[protocol.MethodAccountSessionList] = handle(func(context.Context, *connection, *jsonrpc.Request, *protocol.AccountSessionsListParams) (any, error) {
		return map[string]any{"activeSessionId": nil, "sessions": []any{}}, nil
	})
	r[protocol.MethodAccountSessionSwitch] = handle(func(context.Context, *connection, *jsonrpc.Request, *protocol.AccountSessionsSwitchParams) (any, error) {
		return nil, jsonrpc.InvalidRequest("Workspace switching requires a managed ChatGPT login")
	})
	r[protocol.MethodAccountSecuritySetupRead] = handle(func(context.Context, *connection, *jsonrpc.Request, *struct{}) (any, error) {
		return map[string]any{"notice": nil}, nil
	})
	r[protocol.MethodAccountGatewayOAuthRead] = handle(s.gatewayOAuthRead)
	r[protocol.MethodAccountGatewayOAuthLogin] = handle(func(context.Context, *connection, *jsonrpc.Request, *protocol.GatewayOAuthLoginParams) (any, error) {
		return nil, jsonrpc.InvalidRequest("The selected provider does not use gateway OAuth")
	})
	r[protocol.MethodAccountGatewayOAuthCancel] = handle(func(context.Context, *connection, *jsonrpc.Request, *struct{}) (any, error) {
		return struct{}{}, nil
	})
}

// accountRead reports the API-key account stored in auth.json when the selected provider uses OpenAI
// authentication; other providers have no account, as in the reference. A key only in the OPENAI_API_KEY
// environment variable is used for requests but is no account (the reference answers null then, and the
// TUI offers its sign-in).
func (s *Server) accountRead(_ context.Context, _ *connection, _ *jsonrpc.Request, _ *protocol.GetAccountParams) (any, error) {
	resp := protocol.GetAccountResponse{}
	p, err := s.currentConfig().Provider()
	if err != nil || !p.RequiresOpenAIAuth {
		return resp, nil
	}
	resp.RequiresOpenaiAuth = true
	if s.auth.APIKey() != "" {
		resp.Account = &protocol.Account{Value: protocol.AccountAPIKey{}}
	}
	return resp, nil
}

func (s *Server) accountLoginStart(ctx context.Context, c *connection, req *jsonrpc.Request, p *protocol.LoginAccountParams) (any, error) {
	switch v := p.Value.(type) {
	case protocol.LoginAccountParamsAPIKey:
		if err := s.auth.SaveAPIKey(v.APIKey); err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "failed to save api key: %v", err)
		}
		req.Reply(protocol.LoginAccountResponse{Value: protocol.LoginAccountResponseAPIKey{}}, nil)
		s.afterLogin(nil, nil)
		return nil, nil
	case protocol.LoginAccountParamsChatgpt:
		id, url, err := s.logins.StartBrowser(c.originator())
		if err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%v", err)
		}
		return protocol.LoginAccountResponse{Value: protocol.LoginAccountResponseChatgpt{LoginID: id, AuthURL: url}}, nil
	case protocol.LoginAccountParamsChatgptDeviceCode:
		if err := s.logins.RequestDeviceCode(ctx); err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%v", err)
		}
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "device code login is not supported by appserver")
	case protocol.LoginAccountParamsChatgptAuthTokens:
		if strings.Count(v.AccessToken, ".") != 2 {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "failed to set external auth: invalid ID token format")
		}
		return nil, jsonrpc.InvalidRequest("account/login/start with chatgptAuthTokens is not supported by appserver")
	}
	return nil, jsonrpc.InvalidRequest("account/login/start with this login type is not supported by appserver")
}

// afterLogin tells every connection that a login finished and the account changed.
func (s *Server) afterLogin(loginID *string, failure error) {
	n := protocol.AccountLoginCompletedNotification{LoginID: loginID, Success: failure == nil}
	if failure != nil {
		n.Error = ptr(failure.Error())
	}
	s.broadcast(protocol.NotifyAccountLoginCompleted, n)
	if failure == nil {
		s.broadcast(protocol.NotifyAccountUpdated, protocol.AccountUpdatedNotification{AuthMode: ptr(protocol.AuthModeApikey)})
	}
}

// loginDone reports the end of a browser login.
func (s *Server) loginDone(o auth.Outcome) { s.afterLogin(ptr(o.LoginID), o.Err) }

func (s *Server) accountLoginCancel(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.CancelLoginAccountParams) (any, error) {
	if _, err := uuid.Parse(p.LoginID); err != nil {
		return nil, jsonrpc.InvalidRequest("invalid login id: " + p.LoginID)
	}
	status := protocol.CancelLoginAccountStatusNotFound
	if s.logins.Cancel(p.LoginID) {
		status = protocol.CancelLoginAccountStatusCanceled
	}
	return protocol.CancelLoginAccountResponse{Status: status}, nil
}

func (s *Server) accountLogout(_ context.Context, _ *connection, req *jsonrpc.Request, _ *struct{}) (any, error) {
	if _, err := s.auth.Remove(); err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "failed to remove auth.json: %v", err)
	}
	req.Reply(struct{}{}, nil)
	s.broadcast(protocol.NotifyAccountUpdated, protocol.AccountUpdatedNotification{})
	return nil, nil
}

// accountNeedsChatGPT answers the ChatGPT-account-only reads with the reference's errors: "chatgpt
// authentication required …" for an API-key login, "codex account authentication required …" otherwise.
func (s *Server) accountNeedsChatGPT(what string) func(context.Context, *connection, *jsonrpc.Request, *struct{}) (any, error) {
	return func(context.Context, *connection, *jsonrpc.Request, *struct{}) (any, error) {
		if s.auth.APIKey() != "" {
			return nil, jsonrpc.InvalidRequest("chatgpt authentication required " + what)
		}
		return nil, jsonrpc.InvalidRequest("codex account authentication required " + what)
	}
}

func (s *Server) gatewayOAuthRead(_ context.Context, _ *connection, _ *jsonrpc.Request, _ *protocol.GatewayOAuthReadParams) (any, error) {
	cfg := s.currentConfig()
	p, err := cfg.Provider()
	if err != nil {
		return nil, jsonrpc.InvalidRequest(err.Error())
	}
	name := p.Name
	if name == "" {
		name = p.ID
	}
	return protocol.GatewayOAuthReadResponse{ProviderID: p.ID, ProviderName: name, SupportsDeviceAuth: ptr(false)}, nil
}

// addCloudAccountRoutes registers the Amazon Bedrock and Google Cloud setup methods and user verification.
func (s *Server) addCloudAccountRoutes(r map[string]route) {
	r[protocol.MethodAccountBedrockDiscover] = handle(func(context.Context, *connection, *jsonrpc.Request, *protocol.BedrockDiscoverParams) (any, error) {
		profiles, env := auth.DiscoverAWS(nil)
		resp := protocol.BedrockDiscoverResponse{Profiles: []protocol.BedrockAwsProfile{}, EnvironmentCredentials: []protocol.BedrockEnvironmentCredential{}}
		for _, p := range profiles {
			resp.Profiles = append(resp.Profiles, protocol.BedrockAwsProfile{Name: p.Name, Region: optString(p.Region)})
		}
		for _, e := range env {
			resp.EnvironmentCredentials = append(resp.EnvironmentCredentials, protocol.BedrockEnvironmentCredential{Type: protocol.AwsCredentialType(e.Type), Region: optString(e.Region)})
		}
		return resp, nil
	})
	r[protocol.MethodAccountBedrockSetup] = handle(s.bedrockSetup)
	r[protocol.MethodAccountGcpSetup] = handle(func(ctx context.Context, _ *connection, _ *jsonrpc.Request, _ *protocol.GcpSetupParams) (any, error) {
		cmd := exec.CommandContext(ctx, "gcloud", "auth", "print-access-token")
		if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) == "" {
			data, _ := json.Marshal(map[string]string{"reason": "authCommandFailed"})
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "The Google Cloud auth command could not obtain an access token.", Data: data}
		}
		return nil, jsonrpc.InvalidRequest("account/gcp/setup is not supported by appserver")
	})
	unavailable := "User verification is not available in this build or account."
	unavailableErr := func(context.Context, *connection, *jsonrpc.Request, any) (any, error) {
		data, _ := json.Marshal(map[string]string{"type": "unavailable", "reason": "providerUnavailable"})
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: unavailable, Data: data}
	}
	r[protocol.MethodUserVerificationStatus] = func(context.Context, *connection, *jsonrpc.Request, any) (any, error) {
		return protocol.UserVerificationStatusResponse{UnavailableReason: ptr(protocol.UserVerificationUnavailableReason("providerUnavailable")), UnavailableMessage: ptr(unavailable)}, nil
	}
	r[protocol.MethodUserVerificationEnroll] = unavailableErr
	r[protocol.MethodUserVerificationDelete] = unavailableErr
	r[protocol.MethodUserVerificationVerify] = handle(func(ctx context.Context, c *connection, req *jsonrpc.Request, p *protocol.UserVerificationVerifyParams) (any, error) {
		if b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(p.Challenge, "=")); err != nil || len(b) < 16 || strings.TrimSpace(p.Title) == "" {
			data, _ := json.Marshal(map[string]string{"type": "invalidRequest", "reason": "invalidParams"})
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid verification challenge or display text.", Data: data}
		}
		return unavailableErr(ctx, c, req, p)
	})
	r[protocol.MethodUserVerificationCancel] = func(context.Context, *connection, *jsonrpc.Request, any) (any, error) { return struct{}{}, nil }
}

// bedrockSetup checks the region and credentials and records them under
// [model_providers.amazon-bedrock.aws] in the user config.
func (s *Server) bedrockSetup(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.BedrockSetupParams) (any, error) {
	fields := map[string]any{}
	switch v := p.Value.(type) {
	case protocol.BedrockSetupParamsProfile:
		if err := auth.CheckBedrockRegion(v.Region); err != nil {
			return nil, jsonrpc.InvalidRequest(err.Error())
		}
		if err := auth.CheckAWSProfile(nil, v.Profile); err != nil {
			return nil, jsonrpc.InvalidRequest(err.Error())
		}
		fields["profile"], fields["region"] = v.Profile, v.Region
	case protocol.BedrockSetupParamsEnvironment:
		if err := auth.CheckBedrockRegion(v.Region); err != nil {
			return nil, jsonrpc.InvalidRequest(err.Error())
		}
		fields["region"] = v.Region
	default:
		return nil, jsonrpc.InvalidRequest("account/bedrock/setup with this setup type is not supported by appserver")
	}
	value, _ := json.Marshal(fields)
	if _, err := s.writeUserConfig(nil, nil, []protocol.ConfigEdit{{KeyPath: "model_providers.amazon-bedrock.aws", MergeStrategy: protocol.MergeStrategyReplace, Value: value}}); err != nil {
		return nil, err
	}
	return protocol.BedrockSetupResponse{}, nil
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// accountRateLimitsRead reports the rate limits of the last model response's headers; before any (or when
// the service sends none) it answers as the reference does for a non-ChatGPT account.
func (s *Server) accountRateLimitsRead(ctx context.Context, c *connection, req *jsonrpc.Request, p *struct{}) (any, error) {
	snap, ok := s.rateLimits.Latest()
	if !ok {
		return s.accountNeedsChatGPT("to read rate limits")(ctx, c, req, p)
	}
	rl := protocol.RateLimitSnapshot{LimitID: ptr("codex"), Primary: wireWindow(snap.Primary), Secondary: wireWindow(snap.Secondary)}
	if cr := snap.Credits; cr != nil {
		rl.Credits = &protocol.CreditsSnapshot{HasCredits: cr.HasCredits, Unlimited: cr.Unlimited, Balance: cr.Balance}
	}
	return protocol.GetAccountRateLimitsResponse{RateLimits: rl, RateLimitsByLimitID: map[string]protocol.RateLimitSnapshot{"codex": rl}}, nil
}

func wireWindow(w *ratelimits.Window) *protocol.RateLimitWindow {
	if w == nil {
		return nil
	}
	return &protocol.RateLimitWindow{UsedPercent: w.UsedPercent, WindowDurationMins: w.WindowMinutes, ResetsAt: w.ResetsAt}
}

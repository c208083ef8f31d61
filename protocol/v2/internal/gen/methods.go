package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// irregularResponses maps client request methods whose response type is not "<Params minus Params>Response".
var irregularResponses = map[string]string{
	"memory/reset":                             "MemoryResetResponse",
	"rollout/compress":                         "RolloutCompressResponse",
	"account/gatewayOAuth/cancel":              "GatewayOAuthCancelResponse",
	"account/gatewayOAuth/read":                "GatewayOAuthReadResponse",
	"account/gatewayOAuth/login":               "GatewayOAuthLoginResponse",
	"remoteControl/status/read":                "RemoteControlStatusReadResponse",
	"remoteControl/enable":                     "RemoteControlEnableResponse",
	"remoteControl/disable":                    "RemoteControlDisableResponse",
	"config/mcpServer/reload":                  "McpServerRefreshResponse",
	"windowsSandbox/readiness":                 "WindowsSandboxReadinessResponse",
	"accountSession/list":                      "AccountSessionsResponse",
	"account/logout":                           "LogoutAccountResponse",
	"account/securitySetup/read":               "GetAccountSecuritySetupResponse",
	"account/workspaceMessages/read":           "GetWorkspaceMessagesResponse",
	"account/rateLimits/read":                  "GetAccountRateLimitsResponse",
	"account/usage/read":                       "GetAccountTokenUsageResponse",
	"externalAgentConfig/import/readHistories": "ExternalAgentConfigImportHistoriesReadResponse",
	"config/value/write":                       "ConfigWriteResponse",
	"config/batchWrite":                        "ConfigWriteResponse",
	"configRequirements/read":                  "ConfigRequirementsReadResponse",
}

type method struct {
	name, constName   string
	params            string
	paramsRequired    bool
	result            string
	experimental      bool
	experimentalField []string
}

// readMethods lists the branches of a method union document (ClientRequest.json, ...) in schema order.
func (g *gen) readMethods(doc *Schema, prefix string, stableNames map[string]bool, results bool) ([]method, error) {
	var out []method
	for _, b := range doc.OneOf {
		vals := b.Properties["method"].stringEnum()
		if len(vals) != 1 {
			return nil, fmt.Errorf("branch %q has no single method name", b.Title)
		}
		m := method{name: vals[0], constName: prefix + pascal(vals[0])}
		if p := b.Properties["params"]; p != nil && !p.isNull() {
			ref := p.Ref
			if ref == "" {
				for _, x := range p.AnyOf {
					if x.Ref != "" {
						ref = x.Ref
					}
				}
			}
			if ref == "" {
				return nil, fmt.Errorf("%s: params without $ref", m.name)
			}
			m.params = refName(ref)
			m.paramsRequired = b.isRequired("params")
			if _, ok := g.defs[m.params]; !ok {
				return nil, fmt.Errorf("%s: params type %s not generated", m.name, m.params)
			}
		}
		if results {
			m.result = irregularResponses[m.name]
			if m.result == "" && strings.HasSuffix(m.params, "Params") {
				m.result = strings.TrimSuffix(m.params, "Params") + "Response"
			}
			if _, ok := g.defs[m.result]; !ok {
				return nil, fmt.Errorf("%s: response type %q not generated", m.name, m.result)
			}
		}
		if stableNames != nil {
			m.experimental = !stableNames[m.name]
		}
		out = append(out, m)
	}
	return out, nil
}

func methodNames(doc *Schema) map[string]bool {
	out := map[string]bool{}
	if doc == nil {
		return nil
	}
	for _, b := range doc.OneOf {
		if p := b.Properties["method"]; p != nil {
			for _, v := range p.stringEnum() {
				out[v] = true
			}
		}
	}
	return out
}

// experimentalFields lists the params properties of the experimental bundle missing from the stable bundle.
func experimentalFields(params string, v2, stable *Schema) []string {
	exp, st := v2.Definitions[params], stable.Definitions[params]
	if exp == nil || st == nil {
		return nil
	}
	expProps, _ := flatten(exp)
	stProps, _ := flatten(st)
	var out []string
	for k := range expProps {
		if _, ok := stProps[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func (g *gen) methods(schemaDir string, v2, stable *Schema) (string, error) {
	load := func(name string) (*Schema, error) { return loadBundle(filepath.Join(schemaDir, name)) }
	creqDoc, err := load("ClientRequest.json")
	if err != nil {
		return "", err
	}
	sreqDoc, err := load("ServerRequest.json")
	if err != nil {
		return "", err
	}
	notifDoc, err := load("ServerNotification.json")
	if err != nil {
		return "", err
	}
	cnotifDoc, err := load("ClientNotification.json")
	if err != nil {
		return "", err
	}
	creq, err := g.readMethods(creqDoc, "Method", methodNames(stable.Definitions["ClientRequest"]), true)
	if err != nil {
		return "", err
	}
	for i := range creq {
		if creq[i].params != "" && !creq[i].experimental {
			creq[i].experimentalField = experimentalFields(creq[i].params, v2, stable)
		}
	}
	sreq, err := g.readMethods(sreqDoc, "ServerRequest", nil, true)
	if err != nil {
		return "", err
	}
	notif, err := g.readMethods(notifDoc, "Notify", methodNames(stable.Definitions["ServerNotification"]), false)
	if err != nil {
		return "", err
	}
	cnotif, err := g.readMethods(cnotifDoc, "ClientNotify", nil, false)
	if err != nil {
		return "", err
	}

	var b strings.Builder
	b.WriteString("// Code generated by protocol/v2/internal/gen from the schema copy in /schema. DO NOT EDIT.\n\n")
	b.WriteString("package protocol\n\n")
	writeConsts := func(doc string, ms []method) {
		fmt.Fprintf(&b, "// %s\nconst (\n", doc)
		for _, m := range ms {
			fmt.Fprintf(&b, "\t%s = %q\n", m.constName, m.name)
		}
		b.WriteString(")\n\n")
	}
	writeConsts("Client → server request methods (ClientRequest.json), in schema order.", creq)
	writeConsts("Server → client request methods (ServerRequest.json).", sreq)
	writeConsts("Server → client notification methods (ServerNotification.json).", notif)
	writeConsts("Client → server notification methods (ClientNotification.json).", cnotif)

	writeTable := func(name, doc string, ms []method) {
		fmt.Fprintf(&b, "// %s %s\nvar %s = []MethodSpec{\n", name, doc, name)
		for _, m := range ms {
			fmt.Fprintf(&b, "\t{Name: %s", m.constName)
			if m.params != "" {
				fmt.Fprintf(&b, ", ParamsType: %q, NewParams: func() any { return new(%s) }, ParamsRequired: %v",
					m.params, m.params, m.paramsRequired)
			}
			if m.result != "" {
				fmt.Fprintf(&b, ", ResultType: %q, NewResult: func() any { return new(%s) }", m.result, m.result)
			}
			if m.experimental {
				b.WriteString(", Experimental: true")
			}
			if len(m.experimentalField) > 0 {
				fmt.Fprintf(&b, ", ExperimentalFields: %#v", m.experimentalField)
			}
			b.WriteString("},\n")
		}
		b.WriteString("}\n\n")
	}
	writeTable("ClientRequests", "describes every client → server request method in schema order.", creq)
	writeTable("ServerRequests", "describes every server → client request method in schema order.", sreq)
	writeTable("ServerNotifications", "describes every server → client notification method in schema order.", notif)
	writeTable("ClientNotifications", "describes every client → server notification method in schema order.", cnotif)
	return b.String(), nil
}

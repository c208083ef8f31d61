package server

import (
	"context"
	"os"

	"appserver/configedit"
	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
	"appserver/skills"
)

// addSkillsRoutes registers skills/list, skills/config/write and skills/extraRoots/set.
func (s *Server) addSkillsRoutes(r map[string]route) {
	home, _ := os.UserHomeDir()
	s.skills = skills.New(s.cfg.CodexHome, home)
	r[protocol.MethodSkillsList] = handle(s.skillsList)
	r[protocol.MethodSkillsConfigWrite] = handle(s.skillsConfigWrite)
	r[protocol.MethodSkillsExtraRootsSet] = handle(s.skillsExtraRootsSet)
}

// requestCwds is the cwds a per-directory request names, or the server's working directory.
func requestCwds(cwds []string) []string {
	if len(cwds) > 0 {
		return cwds
	}
	wd, err := os.Getwd()
	if err != nil {
		wd = "/"
	}
	return []string{wd}
}

// skillWire is SkillMetadata as the reference writes it: shortDescription and interface absent when unset.
type skillWire struct {
	Name             string                   `json:"name"`
	Description      string                   `json:"description"`
	ShortDescription *string                  `json:"shortDescription,omitempty"`
	Interface        *protocol.SkillInterface `json:"interface,omitempty"`
	Path             string                   `json:"path"`
	Scope            string                   `json:"scope"`
	Enabled          bool                     `json:"enabled"`
	PluginID         *string                  `json:"pluginId"`
}

type skillsEntryWire struct {
	Cwd    string                    `json:"cwd"`
	Skills []skillWire               `json:"skills"`
	Errors []protocol.SkillErrorInfo `json:"errors"`
}

func (s *Server) skillsList(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.SkillsListParams) (any, error) {
	rules := skills.RulesFromConfig(s.currentConfig().Raw())
	force := p.ForceReload != nil && *p.ForceReload
	data := []skillsEntryWire{}
	for _, cwd := range requestCwds(p.Cwds) {
		l := s.skills.List(cwd, force, rules)
		e := skillsEntryWire{Cwd: cwd, Skills: make([]skillWire, 0, len(l.Skills)), Errors: make([]protocol.SkillErrorInfo, 0, len(l.Errors))}
		for _, sk := range l.Skills {
			w := skillWire{Name: sk.Name, Description: sk.Description, Path: sk.Path, Scope: sk.Scope, Enabled: sk.Enabled}
			if sk.ShortDescription != "" {
				w.ShortDescription = ptr(sk.ShortDescription)
			}
			if in := sk.Interface; in != nil {
				w.Interface = &protocol.SkillInterface{DisplayName: in.DisplayName, ShortDescription: in.ShortDescription,
					BrandColor: in.BrandColor, DefaultPrompt: in.DefaultPrompt,
					IconSmall: in.IconSmall, IconLarge: in.IconLarge}
			}
			e.Skills = append(e.Skills, w)
		}
		for _, pr := range l.Errors {
			e.Errors = append(e.Errors, protocol.SkillErrorInfo{Path: pr.Path, Message: pr.Message})
		}
		data = append(data, e)
	}
	return map[string]any{"data": data}, nil
}

func (s *Server) skillsExtraRootsSet(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.SkillsExtraRootsSetParams) (any, error) {
	roots := make([]string, 0, len(p.ExtraRoots))
	for _, r := range p.ExtraRoots {
		roots = append(roots, string(r))
	}
	s.skills.SetExtraRoots(roots)
	return struct{}{}, nil
}

// skillsConfigWrite records `[[skills.config]]` enabled for a skill path or name in the user config.
func (s *Server) skillsConfigWrite(_ context.Context, _ *connection, _ *jsonrpc.Request, p *protocol.SkillsConfigWriteParams) (any, error) {
	if (p.Path == nil) == (p.Name == nil) {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "skills/config/write requires exactly one of path or name")
	}
	key, val := "name", deref(p.Name)
	if p.Path != nil {
		key, val = "path", string(*p.Path)
	}
	f := s.userConfigFile()
	_, err := f.Update("", func(data []byte) ([]byte, error) {
		return configedit.UpsertArrayTable(data, []string{"skills", "config"}, key, val,
			[]configedit.Field{{Key: key, Value: val}, {Key: "enabled", Value: p.Enabled}})
	})
	if err != nil {
		return nil, configWriteError(err)
	}
	s.reloadAfterWrite()
	return protocol.SkillsConfigWriteResponse{EffectiveEnabled: p.Enabled}, nil
}

// skillsPrompt is the skills block a new thread in cwd offers the model (enabled skills only).
func (s *Server) skillsPrompt(cwd string) string {
	if s.skills == nil {
		return ""
	}
	return skills.Instructions(s.skills.List(cwd, false, skills.RulesFromConfig(s.currentConfig().Raw())).Skills)
}

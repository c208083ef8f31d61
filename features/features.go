// Package features holds the catalogue of `[features]` flags the reference knows (name, stage, default)
// and the process-wide runtime enablement set by experimentalFeature/enablement/set.
package features

import (
	"errors"
	"slices"
	"strconv"
	"sync"
)

// Stage is a feature's maturity as the wire names it.
type Stage string

// Stages of a feature.
const (
	StageStable           Stage = "stable"
	StageBeta             Stage = "beta"
	StageUnderDevelopment Stage = "underDevelopment"
	StageRemoved          Stage = "removed"
	StageDeprecated       Stage = "deprecated"
)

// Feature is one catalogue entry. DisplayName, Description and Announcement are set for beta features only.
type Feature struct {
	Name                                   string
	Stage                                  Stage
	Default                                bool
	DisplayName, Description, Announcement string
}

// Entry is a feature with its effective state.
type Entry struct {
	Feature
	Enabled bool
}

// ErrInvalidCursor is returned by Page for a cursor that is not an offset into the list.
var ErrInvalidCursor = errors.New("invalid cursor")

// Catalogue returns every known feature in the reference's order.
func Catalogue() []Feature { return append([]Feature(nil), registry...) }

// Runtime is the enablement set at run time; it outranks defaults but not the config file.
type Runtime struct {
	mu sync.Mutex
	on map[string]bool
}

// Set records the runtime-toggleable entries of enablement and returns the ones accepted.
func (r *Runtime) Set(enablement map[string]bool) map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	accepted := map[string]bool{}
	for name, v := range enablement {
		if _, ok := slices.BinarySearch(runtimeToggleable, name); !ok {
			continue
		}
		if r.on == nil {
			r.on = map[string]bool{}
		}
		r.on[name] = v
		accepted[name] = v
	}
	return accepted
}

// Snapshot returns a copy of the runtime enablement.
func (r *Runtime) Snapshot() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]bool, len(r.on))
	for k, v := range r.on {
		out[k] = v
	}
	return out
}

// Effective reports name's state: the config file's `[features]` value, else the runtime one, else the
// catalogue default (fallback for names outside the catalogue).
func (r *Runtime) Effective(name string, configured map[string]bool, fallback bool) bool {
	if v, ok := configured[name]; ok {
		return v
	}
	r.mu.Lock()
	v, ok := r.on[name]
	r.mu.Unlock()
	if ok {
		return v
	}
	for _, f := range registry {
		if f.Name == name {
			return f.Default
		}
	}
	return fallback
}

// List returns every catalogue feature with its effective state.
func (r *Runtime) List(configured map[string]bool) []Entry {
	out := make([]Entry, 0, len(registry))
	for _, f := range registry {
		out = append(out, Entry{Feature: f, Enabled: r.Effective(f.Name, configured, f.Default)})
	}
	return out
}

// Page cuts entries at cursor (a decimal offset, "" = start) to at most limit (0 = all) and returns the
// next cursor ("" at the end).
func Page[T any](entries []T, cursor string, limit int) ([]T, string, error) {
	start := 0
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 0 || n > len(entries) {
			return nil, "", ErrInvalidCursor
		}
		start = n
	}
	end := len(entries)
	if limit > 0 && start+limit < end {
		end = start + limit
	}
	next := ""
	if end < len(entries) {
		next = strconv.Itoa(end)
	}
	return entries[start:end], next, nil
}

// ToggleableNames lists the features experimentalFeature/enablement/set accepts, sorted.
func ToggleableNames() []string {
	return slices.Clone(runtimeToggleable)
}

// Package toolsearch is the model's `tool_search` tool: a BM25 index over the tools that are not offered
// up front (deferred), the tool's spec, its `tool_search_output` answer and the `<tools>` notice that
// tells the model which namespaces hold such tools, as codex-cli 0.169.0 has them.
package toolsearch

import (
	"encoding/json"
	"math"
	"sort"
	"strings"
	"unicode"
)

// DefaultLimit is the number of tools a search returns when the model gives no limit.
const DefaultLimit = 8

// Tool is one deferred tool: a function inside a namespace.
type Tool struct {
	Namespace            string
	NamespaceDescription string
	Name                 string
	Description          string
	// Parameters is the tool's JSON schema (null or empty: an empty object schema).
	Parameters json.RawMessage
}

// Index ranks deferred tools against a query with BM25 (k1 1.2, b 0.75) over the words of the namespace,
// the tool's name, both descriptions and the schema's property names.
type Index struct {
	tools  []Tool
	docs   []map[string]int
	length []int
	avg    float64
	df     map[string]int
}

// New indexes tools, keeping their order for ties.
func New(tools []Tool) *Index {
	x := &Index{tools: tools, df: map[string]int{}}
	total := 0
	for _, t := range tools {
		words := Tokens(strings.Join(append([]string{t.Namespace, t.Name, t.NamespaceDescription, t.Description}, propertyNames(t.Parameters)...), " "))
		tf := map[string]int{}
		for _, w := range words {
			tf[w]++
		}
		for w := range tf {
			x.df[w]++
		}
		x.docs = append(x.docs, tf)
		x.length = append(x.length, len(words))
		total += len(words)
	}
	if len(tools) > 0 {
		x.avg = float64(total) / float64(len(tools))
	}
	return x
}

// Len is the number of indexed tools.
func (x *Index) Len() int { return len(x.tools) }

func propertyNames(schema json.RawMessage) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	names := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// Search returns up to limit tools matching query, best first (a limit of 0 or less returns none, as
// the reference's). A query with no searchable word matches nothing.
func (x *Index) Search(query string, limit int) []Tool {
	if limit <= 0 {
		return nil
	}
	terms := Tokens(query)
	type hit struct {
		i     int
		score float64
	}
	var hits []hit
	n := float64(len(x.tools))
	for i, tf := range x.docs {
		score := 0.0
		for _, w := range terms {
			f := float64(tf[w])
			if f == 0 {
				continue
			}
			df := float64(x.df[w])
			idf := math.Log((n-df+0.5)/(df+0.5) + 1)
			norm := 1.2 * (1 - 0.75 + 0.75*float64(x.length[i])/x.avg)
			score += idf * f * 2.2 / (f + norm)
		}
		if score > 0 {
			hits = append(hits, hit{i, score})
		}
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].score > hits[b].score })
	if len(hits) > limit {
		hits = hits[:limit]
	}
	out := make([]Tool, len(hits))
	for k, h := range hits {
		out[k] = x.tools[h.i]
	}
	return out
}

// Tokens splits text into lower-case words at anything but letters and digits (so snake_case and
// camelCase names give their words), drops common English words and reduces plurals and -ing/-ed forms.
func Tokens(text string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			w := string(cur)
			cur = cur[:0]
			if !stopWords[w] {
				out = append(out, stem(w))
			}
		}
	}
	prevLower := false
	for _, r := range text {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && prevLower {
				flush()
			}
			prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
			cur = append(cur, unicode.ToLower(r))
		default:
			prevLower = false
			flush()
		}
	}
	flush()
	return out
}

func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 5 && strings.HasSuffix(w, "ing"):
		return w[:len(w)-3]
	case len(w) > 4 && strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed"):
		return w[:len(w)-2]
	case len(w) > 4 && (strings.HasSuffix(w, "sses") || strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes")):
		return w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us"):
		return w[:len(w)-1]
	}
	return w
}

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be but by for from has have if in into is it its of on or
		such that the their then there these they this to was were will with`) {
		m[w] = true
	}
	return m
}()

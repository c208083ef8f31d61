package externalagent

import (
	"fmt"
	"os"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// document is a markdown file split into its YAML front matter (scalars only) and body.
type document struct {
	front    map[string]string
	body     string
	frontErr bool
}

func readDocument(path string) (document, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return document{}, err
	}
	return parseDocument(string(b)), nil
}

func parseDocument(content string) document {
	rest, ok := strings.CutPrefix(content, "---\n")
	if !ok {
		rest, ok = strings.CutPrefix(content, "---\r\n")
	}
	if !ok {
		return document{body: content}
	}
	end, bodyStart := -1, 0
	for _, d := range []string{"\r\n---\r\n", "\r\n---\n", "\n---\r\n", "\n---\n", "\r\n---", "\n---"} {
		if i := strings.Index(rest, d); i >= 0 && (end < 0 || i < end) {
			end, bodyStart = i, i+len(d)
		}
	}
	if end < 0 {
		return document{body: content}
	}
	doc := document{front: map[string]string{}, body: rest[bodyStart:]}
	var node yaml.Node
	if err := yaml.Unmarshal([]byte(rest[:end]), &node); err != nil {
		doc.frontErr = true
		return doc
	}
	if len(node.Content) == 0 {
		return doc
	}
	m := node.Content[0]
	if m.Kind != yaml.MappingNode {
		doc.frontErr = true
		return doc
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := strings.TrimSpace(k.Value)
		if k.Kind != yaml.ScalarNode || key == "" || v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
			continue
		}
		doc.front[key] = strings.TrimSpace(v.Value)
	}
	return doc
}

// yamlString renders s as a double-quoted YAML string.
func yamlString(s string) string {
	return fmt.Sprintf("\"%s\"", strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`))
}

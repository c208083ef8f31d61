// Command gen generates protocol/v2's Go types and method tables from the stripped JSON Schema copy in the
// repository's schema directory. It is run by `go generate ./protocol/...`; see protocol/v2/doc.go for the
// rules it follows.
package main

import (
	"flag"
	"fmt"
	"go/format"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	schemaDir := flag.String("schema", "../../schema", "directory holding the stripped schema copy")
	outDir := flag.String("out", ".", "output directory (the protocol/v2 package)")
	flag.Parse()
	if err := run(*schemaDir, *outDir); err != nil {
		slog.Error("gen", "err", err)
		os.Exit(1)
	}
}

func run(schemaDir, outDir string) error {
	v2, err := loadBundle(filepath.Join(schemaDir, "codex_app_server_protocol.v2.schemas.json"))
	if err != nil {
		return err
	}
	all, err := loadBundle(filepath.Join(schemaDir, "codex_app_server_protocol.schemas.json"))
	if err != nil {
		return err
	}
	stable, err := loadBundle(filepath.Join(schemaDir, "stable-only.v2.schemas.json"))
	if err != nil {
		return err
	}
	g := newGen()
	for name, s := range v2.Definitions {
		g.defs[name] = s
	}
	for name, s := range all.Definitions {
		if _, ok := g.defs[name]; ok || name == "v2" {
			continue
		}
		g.defs[name] = s
	}
	for _, name := range skipped {
		delete(g.defs, name)
	}
	types, err := g.types()
	if err != nil {
		return err
	}
	if err := writeGo(filepath.Join(outDir, "types_gen.go"), types); err != nil {
		return err
	}
	methods, err := g.methods(schemaDir, v2, stable)
	if err != nil {
		return err
	}
	return writeGo(filepath.Join(outDir, "methods_gen.go"), methods)
}

func writeGo(path, src string) error {
	out, err := format.Source([]byte(src))
	if err != nil {
		_ = os.WriteFile(path+".broken", []byte(src), 0o644)
		return fmt.Errorf("gofmt %s: %w", path, err)
	}
	return os.WriteFile(path, out, 0o644)
}

// skipped definitions are envelopes described by the method tables instead of Go types.
var skipped = []string{"ClientRequest", "ServerRequest", "ServerNotification", "ClientNotification", "JSONRPCMessage"}

// handwritten definitions are implemented in unions.go.
var handwritten = map[string]bool{
	"RequestId":                 true,
	"ForcedChatgptWorkspaceIds": true,
	"ThreadListCwdFilter":       true,
	"FunctionCallOutputBody":    true,
}

// omitNulls lists types whose nullable fields the reference leaves out when unset instead of writing null
// (observed in the golden transcripts; the schema does not say).
var omitNulls = map[string]bool{
	"CommandExecutionRequestApprovalParams": true,
	"Tool":                                  true,
}

// omitNullFields lists single nullable properties ("<owner>.<json name>") the reference leaves out when
// unset, where the rest of the type writes null.
var omitNullFields = map[string]bool{
	"ThreadItemMcpToolCall.mcpAppResourceUri": true,
}

type kind int

const (
	kStruct kind = iota
	kMap
	kRaw
	kString
	kEnum
	kTagged
	kExternal
	kMerged
	kNullable
	kHand
)

type gen struct {
	defs   map[string]*Schema
	kinds  map[string]kind
	idents map[string]string
	out    []string
	// required holds the entries of the generated requiredFields table.
	required []string
	// paths holds the entries of the generated absolutePathFields table.
	paths []string
	// enums holds the entries of the generated enumValues table.
	enums []string
}

func newGen() *gen {
	return &gen{defs: map[string]*Schema{}, kinds: map[string]kind{}, idents: map[string]string{}}
}

func (g *gen) sortedDefs() []string {
	names := make([]string, 0, len(g.defs))
	for n := range g.defs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// claim registers a top-level Go identifier and fails on a collision.
func (g *gen) claim(ident, origin string) {
	if prev, ok := g.idents[ident]; ok {
		panic(fmt.Sprintf("identifier %s from %s collides with %s", ident, origin, prev))
	}
	g.idents[ident] = origin
}

func (g *gen) emit(format string, args ...any) {
	g.out = append(g.out, fmt.Sprintf(format, args...))
}

// branches returns the oneOf or anyOf branches of s.
func branches(s *Schema) []*Schema {
	if s.OneOf != nil {
		return s.OneOf
	}
	return s.AnyOf
}

func (g *gen) classify(name string, s *Schema) kind {
	switch {
	case handwritten[name]:
		return kHand
	case s.isTrue():
		return kRaw
	}
	if bs := branches(s); bs != nil {
		if len(bs) == 2 && bs[0].Ref != "" && bs[1].isNull() {
			return kNullable
		}
		if allStringEnums(bs) {
			return kEnum
		}
		if _, ok := tagKey(bs); ok {
			return kTagged
		}
		if isExternal(bs) {
			return kExternal
		}
		if allInlineObjects(bs) {
			return kMerged
		}
		return kRaw
	}
	if s.stringEnum() != nil {
		return kEnum
	}
	if s.Type.has("string") && len(s.Type) == 1 {
		return kString
	}
	if s.Type.has("object") {
		if s.Properties == nil && s.AdditionalProperties != nil && s.AdditionalProperties.Bool == nil {
			return kMap
		}
		return kStruct
	}
	return kRaw
}

func allStringEnums(bs []*Schema) bool {
	for _, b := range bs {
		if b.stringEnum() == nil {
			return false
		}
	}
	return true
}

func allInlineObjects(bs []*Schema) bool {
	for _, b := range bs {
		if b.Ref != "" || !b.Type.has("object") {
			return false
		}
	}
	return true
}

// tagKey finds the discriminator of a tagged union: a property that every branch requires and restricts
// to a single string value.
func tagKey(bs []*Schema) (string, bool) {
	if !allInlineObjects(bs) {
		return "", false
	}
	for _, key := range []string{"type", "method", "mode", "kind", "handlerType"} {
		ok := true
		seen := map[string]bool{}
		for _, b := range bs {
			v, has := branchTag(b, key)
			if !has || seen[v] {
				ok = false
				break
			}
			seen[v] = true
		}
		if ok {
			return key, true
		}
	}
	return "", false
}

func branchTag(b *Schema, key string) (string, bool) {
	p := b.Properties[key]
	if p == nil || !b.isRequired(key) {
		return "", false
	}
	if vals := p.stringEnum(); len(vals) == 1 {
		return vals[0], true
	}
	if c, ok := p.Const.(string); ok {
		return c, true
	}
	return "", false
}

// isExternal reports an externally tagged union: every branch is a string enum or an object with exactly
// one required property.
func isExternal(bs []*Schema) bool {
	objects := 0
	for _, b := range bs {
		if b.stringEnum() != nil || isCatchAll(b) {
			continue
		}
		if b.Ref != "" || !b.Type.has("object") || len(b.Properties) != 1 || len(b.Required) != 1 ||
			b.Properties[b.Required[0]] == nil {
			return false
		}
		objects++
	}
	return objects > 0
}

// isCatchAll reports a forward-compatibility branch accepting any string or object ({"type":["string","object"]}).
func isCatchAll(b *Schema) bool {
	return b.Ref == "" && len(b.Type) == 2 && b.Type.has("string") && b.Type.has("object") && b.Properties == nil &&
		b.Enum == nil
}

// nilable reports whether a Go type expression already has a nil value that marshals as null.
func (g *gen) nilable(expr string) bool {
	if strings.HasPrefix(expr, "[]") || strings.HasPrefix(expr, "map[") || strings.HasPrefix(expr, "*") ||
		expr == "json.RawMessage" {
		return true
	}
	if k, ok := g.kinds[expr]; ok {
		switch k {
		case kRaw, kMap, kNullable:
			return true
		}
	}
	return false
}

var intFormats = map[string]string{
	"int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
	"uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64", "uint": "uint64",
}

// goType maps a property schema to a Go type expression; ctx names inline object types.
func (g *gen) goType(s *Schema, ctx string) (expr string, nullable bool) {
	if s.isTrue() {
		return "json.RawMessage", false
	}
	if s.Ref != "" {
		name := refName(s.Ref)
		if _, ok := g.defs[name]; !ok {
			panic("unknown $ref " + s.Ref)
		}
		return name, false
	}
	if len(s.AllOf) == 1 {
		return g.goType(s.AllOf[0], ctx)
	}
	if bs := branches(s); bs != nil {
		var nonNull []*Schema
		for _, b := range bs {
			if !b.isNull() {
				nonNull = append(nonNull, b)
			}
		}
		hasNull := len(nonNull) < len(bs)
		if len(nonNull) == 1 {
			t, n := g.goType(nonNull[0], ctx)
			return t, n || hasNull
		}
		if allStringEnums(nonNull) {
			return "string", hasNull
		}
		return "json.RawMessage", hasNull
	}
	nullable = s.Type.has("null")
	nn := s.Type.nonNull()
	if len(nn) == 0 {
		if s.Enum != nil {
			return "string", nullable
		}
		return "json.RawMessage", nullable
	}
	if len(nn) > 1 {
		return "json.RawMessage", nullable
	}
	switch nn[0] {
	case "string":
		return "string", nullable
	case "integer":
		if t, ok := intFormats[s.Format]; ok {
			return t, nullable
		}
		return "int64", nullable
	case "number":
		if s.Format == "float" {
			return "float32", nullable
		}
		return "float64", nullable
	case "boolean":
		return "bool", nullable
	case "array":
		if s.Items == nil || s.Items.isTrue() {
			return "[]json.RawMessage", nullable
		}
		t, n := g.goType(s.Items, ctx+"Item")
		if n && !g.nilable(t) {
			t = "*" + t
		}
		return "[]" + t, nullable
	case "object":
		if s.Properties != nil {
			g.claim(ctx, "inline object")
			g.emitStruct(ctx, fmt.Sprintf("%s is an inline object of the schema.", ctx), s, "", "")
			return ctx, nullable
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Bool == nil {
			t, n := g.goType(s.AdditionalProperties, ctx+"Value")
			if n && !g.nilable(t) {
				t = "*" + t
			}
			return "map[string]" + t, nullable
		}
		return "map[string]json.RawMessage", nullable
	}
	return "json.RawMessage", nullable
}

// flatten returns the properties of an object schema merged with those of its nested anyOf/oneOf object
// branches; a nested property is required only if every nested branch requires it.
func flatten(s *Schema) (map[string]*Schema, map[string]bool) {
	props := map[string]*Schema{}
	req := map[string]bool{}
	for k, p := range s.Properties {
		props[k] = p
	}
	for _, r := range s.Required {
		req[r] = true
	}
	if bs := branches(s); bs != nil {
		count := map[string]int{}
		for _, b := range bs {
			for k, p := range b.Properties {
				if _, ok := props[k]; !ok {
					props[k] = p
				}
			}
			for _, r := range b.Required {
				count[r]++
			}
		}
		for r, n := range count {
			if n == len(bs) {
				req[r] = true
			}
		}
	}
	return props, req
}

type field struct {
	goName, expr, tag string
	// required marks a required non-null property (missing it is a decode error in the reference).
	required bool
	jsonName string
}

// fields computes the Go fields of an object schema, leaving out skipKey (a union's tag).
func (g *gen) fields(owner string, s *Schema, skipKey string) []field {
	props, req := flatten(s)
	keys := make([]string, 0, len(props))
	for k := range props {
		if k != skipKey {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	used := map[string]bool{}
	var out []field
	for _, k := range keys {
		goName := pascal(k)
		for used[goName] {
			goName += "_"
		}
		used[goName] = true
		expr, nullable := g.goType(props[k], owner+pascal(k))
		tag := k
		switch {
		case nullable:
			if !g.nilable(expr) {
				expr = "*" + expr
			}
			if omitNulls[owner] || omitNullFields[owner+"."+k] {
				tag += ",omitzero"
			}
		case !req[k]:
			if !g.nilable(expr) {
				expr = "*" + expr
			}
			tag += ",omitzero"
		}
		out = append(out, field{goName: goName, expr: expr, tag: tag, required: req[k] && !nullable, jsonName: k})
	}
	return out
}

// emitStruct writes a struct for an object schema. For a tagged-union variant, skipKey is the tag property
// (left out of the fields) and tag its value, written by the variant's MarshalJSON.
func (g *gen) emitStruct(name, doc string, s *Schema, skipKey, tag string) {
	fs := g.fields(name, s, skipKey)
	// Required non-null lists and maps are written as [] / {} when left nil, as the reference never
	// writes null for them.
	var fixups strings.Builder
	for _, f := range fs {
		if f.required && (strings.HasPrefix(f.expr, "[]") || strings.HasPrefix(f.expr, "map[")) {
			fmt.Fprintf(&fixups, "\tif v.%s == nil {\n\t\tv.%s = %s{}\n\t}\n", f.goName, f.goName, f.expr)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// %s\ntype %s struct {\n", doc, name)
	for _, f := range fs {
		if strings.TrimLeft(f.expr, "*[]") == "AbsolutePathBuf" {
			g.paths = append(g.paths, fmt.Sprintf("\t%q,\n", name+"."+f.jsonName))
		}
		fmt.Fprintf(&b, "\t%s %s `json:%q`\n", f.goName, f.expr, f.tag)
	}
	open := s.AdditionalProperties != nil && (s.AdditionalProperties.Bool == nil || *s.AdditionalProperties.Bool)
	if open && skipKey == "" {
		known := make([]string, len(fs))
		for i, f := range fs {
			known[i] = fmt.Sprintf("%q", f.jsonName)
		}
		b.WriteString("\t// Extra holds the members not described by the schema (the object is open).\n" +
			"\tExtra map[string]json.RawMessage `json:\"-\"`\n}\n\n")
		fmt.Fprintf(&b, "// MarshalJSON writes the described fields plus Extra.\nfunc (v %s) MarshalJSON() ([]byte, error) {\n"+
			"\ttype plain %s\n%s\treturn marshalWithExtra(plain(v), v.Extra)\n}\n\n", name, name, fixups.String())
		fmt.Fprintf(&b, "// UnmarshalJSON reads the described fields and keeps the others in Extra.\n"+
			"func (v *%s) UnmarshalJSON(b []byte) error {\n\ttype plain %s\n\tif err := json.Unmarshal(b, (*plain)(v)); err != nil {\n"+
			"\t\treturn err\n\t}\n\tvar err error\n\tv.Extra, err = extraMembers(b, %s)\n\treturn err\n}\n\n",
			name, name, strings.Join(known, ", "))
	} else {
		b.WriteString("}\n\n")
		switch {
		case skipKey != "":
			fmt.Fprintf(&b, "// MarshalJSON writes the struct's fields plus %q:%q.\nfunc (v %s) MarshalJSON() ([]byte, error) {\n"+
				"\ttype plain %s\n%s\treturn marshalTagged(%q, %q, plain(v))\n}\n\n", skipKey, tag, name, name, fixups.String(), skipKey, tag)
		case fixups.Len() > 0:
			fmt.Fprintf(&b, "// MarshalJSON writes nil required lists and maps as empty ones.\nfunc (v %s) MarshalJSON() ([]byte, error) {\n"+
				"\ttype plain %s\n%s\treturn json.Marshal(plain(v))\n}\n\n", name, name, fixups.String())
		}
	}
	g.out = append(g.out, b.String())
	var req []string
	for _, f := range fs {
		if f.required {
			req = append(req, f.jsonName)
		}
	}
	if len(req) > 0 {
		g.required = append(g.required, fmt.Sprintf("\t{%q, %#v},\n", name, req))
	}
}

func (g *gen) types() (src string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	names := g.sortedDefs()
	for _, n := range names {
		g.kinds[n] = g.classify(n, g.defs[n])
		g.claim(n, "definition")
	}
	g.emit("// Code generated by protocol/v2/internal/gen from the schema copy in /schema. DO NOT EDIT.\n\n")
	g.emit("package protocol\n\nimport \"encoding/json\"\n\n")
	for _, n := range names {
		s := g.defs[n]
		switch g.kinds[n] {
		case kHand:
			continue
		case kRaw:
			note := "accepts any JSON value"
			if branches(s) != nil {
				note = "is an untyped union the generator does not model; TODO: type it when a handler needs it"
			}
			g.emit("// %s %s.\ntype %s = json.RawMessage\n\n", n, note, n)
		case kString:
			g.emit("// %s is a string.\ntype %s = string\n\n", n, n)
		case kNullable:
			target := refName(branches(s)[0].Ref)
			g.emit("// %s is a %s or null.\ntype %s = *%s\n\n", n, target, n, target)
		case kMap:
			t, _ := g.goType(s, n)
			g.emit("// %s is a JSON object with arbitrary keys.\ntype %s %s\n\n", n, n, t)
		case kStruct:
			g.emitStruct(n, fmt.Sprintf("%s is generated from the schema definition of the same name.", n), s, "", "")
		case kMerged:
			g.emitStruct(n, fmt.Sprintf("%s merges the object shapes of an untagged union; "+
				"properties not shared by every shape are optional.", n), s, "", "")
		case kEnum:
			g.emitEnum(n, s)
		case kTagged:
			g.emitTagged(n, s)
		case kExternal:
			g.emitExternal(n, s)
		}
	}
	sort.Strings(g.required)
	// A sorted slice rather than a map: the compiler lays it out as static data, so the table costs
	// no work (and no heap) at program start; CheckRequired binary-searches it.
	g.emit("// requiredFields lists, per struct type sorted by name, the JSON names of its required non-null properties.\n"+
		"var requiredFields = []requiredEntry{\n%s}\n", strings.Join(g.required, ""))
	sort.Strings(g.enums)
	g.emit("\n// enumValues lists, per string enum type sorted by name, its values in the schema's order.\n"+
		"var enumValues = []requiredEntry{\n%s}\n", strings.Join(g.enums, ""))
	sort.Strings(g.paths)
	g.emit("\n// absolutePathFields lists, sorted, the members (\"Type.jsonName\") typed AbsolutePathBuf, alone, in a list or\n"+
		"// optional.\nvar absolutePathFields = []string{\n%s}\n", strings.Join(g.paths, ""))
	return strings.Join(g.out, ""), nil
}

// variantOrder is the reference's declaration order of an externally tagged union's variants where the
// schema (strings first, then objects) does not show it: its "unknown variant" error lists them so.
var variantOrder = map[string][]string{
	"AskForApproval": {`"untrusted"`, `"on-request"`, `"granular"`, `"never"`},
}

func (g *gen) emitEnum(name string, s *Schema) {
	var vals []string
	if bs := branches(s); bs != nil {
		for _, b := range bs {
			vals = append(vals, b.stringEnum()...)
		}
	} else {
		vals = s.stringEnum()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// %s is a string enum.\ntype %s string\n\n// Values of %s.\nconst (\n", name, name, name)
	for _, v := range vals {
		c := name + pascal(v)
		if _, taken := g.idents[c]; taken {
			c += "Value"
		}
		g.claim(c, name+" enum")
		fmt.Fprintf(&b, "\t%s %s = %q\n", c, name, v)
	}
	b.WriteString(")\n\n")
	g.out = append(g.out, b.String())
	g.enums = append(g.enums, fmt.Sprintf("\t{%q, %#v},\n", name, vals))
}

func (g *gen) emitTagged(name string, s *Schema) {
	bs := branches(s)
	key, _ := tagKey(bs)
	iface := name + "Variant"
	marker := "is" + name
	g.claim(iface, name+" interface")
	var tags, variants []string
	for _, b := range bs {
		tag, _ := branchTag(b, key)
		v := name + pascal(tag)
		if _, taken := g.idents[v]; taken {
			v += "Alt"
		}
		g.claim(v, name+" variant")
		tags = append(tags, tag)
		variants = append(variants, v)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// %s is a tagged union discriminated by the %q property; Value holds one of the %s* variant structs"+
		" (%s).\ntype %s struct {\n\tValue %s\n}\n\n", name, key, name, strings.Join(variants, ", "), name, iface)
	fmt.Fprintf(&b, "// %s is implemented by the variant structs of %s.\ntype %s interface {\n\t%s()\n}\n\n",
		iface, name, iface, marker)
	fmt.Fprintf(&b, "// MarshalJSON writes the variant with its %q tag.\nfunc (u %s) MarshalJSON() ([]byte, error) {\n"+
		"\treturn marshalUnion(%q, u.Value)\n}\n\n", key, name, name)
	fmt.Fprintf(&b, "// UnmarshalJSON decodes the variant named by the %q property.\nfunc (u *%s) UnmarshalJSON(b []byte) error {\n"+
		"\ttag, err := readTag(b, %q, %q)\n\tif err != nil {\n\t\treturn err\n\t}\n\tswitch tag {\n", key, name, name, key)
	for i, t := range tags {
		fmt.Fprintf(&b, "\tcase %q:\n\t\treturn decodeVariant[%s](b, &u.Value)\n", t, variants[i])
	}
	quoted := make([]string, len(tags))
	for i, t := range tags {
		quoted[i] = fmt.Sprintf("%q", t)
	}
	fmt.Fprintf(&b, "\t}\n\treturn unknownVariant(tag, %s)\n}\n\n", strings.Join(quoted, ", "))
	g.out = append(g.out, b.String())
	for i, br := range bs {
		v := variants[i]
		g.emitStruct(v, fmt.Sprintf("%s is the %q variant of %s.", v, tags[i], name), withParent(br, s), key, tags[i])
		g.emit("func (%s) %s() {}\n\n", v, marker)
	}
}

func (g *gen) emitExternal(name string, s *Schema) {
	bs := branches(s)
	var names []string
	type obj struct{ key, goName, expr string }
	var objs []obj
	open := false
	for _, b := range bs {
		if isCatchAll(b) {
			open = true
			continue
		}
		if vals := b.stringEnum(); vals != nil {
			names = append(names, vals...)
			continue
		}
		key := b.Required[0]
		expr, _ := g.goType(b.Properties[key], name+pascal(key))
		if !g.nilable(expr) {
			expr = "*" + expr
		}
		objs = append(objs, obj{key: key, goName: pascal(key), expr: expr})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// %s is a string-or-object union: either Name holds one of the plain string forms"+
		" (constants %s*), or exactly one of the object-form fields is set.\ntype %s struct {\n\tName string\n", name, name, name)
	for _, o := range objs {
		if o.goName == "Name" || (open && o.goName == "Other") {
			panic(name + ": object form named " + o.goName)
		}
		fmt.Fprintf(&b, "\t%s %s\n", o.goName, o.expr)
	}
	if open {
		b.WriteString("\t// Other holds an object form the schema does not name (the union is open); Name may also hold\n" +
			"\t// a string the schema does not list.\n\tOther json.RawMessage\n")
	}
	b.WriteString("}\n\n")
	if len(names) > 0 {
		fmt.Fprintf(&b, "// Plain string forms of %s.\nconst (\n", name)
		for _, v := range names {
			c := name + pascal(v)
			g.claim(c, name+" string form")
			fmt.Fprintf(&b, "\t%s = %q\n", c, v)
		}
		b.WriteString(")\n\n")
	}
	fmt.Fprintf(&b, "// MarshalJSON writes the set object form as {\"<key>\":...}, else Name as a string.\n"+
		"func (u %s) MarshalJSON() ([]byte, error) {\n\tswitch {\n", name)
	for _, o := range objs {
		fmt.Fprintf(&b, "\tcase u.%s != nil:\n\t\treturn marshalSingleKey(%q, u.%s)\n", o.goName, o.key, o.goName)
	}
	if open {
		b.WriteString("\tcase u.Other != nil:\n\t\treturn u.Other, nil\n")
	}
	fmt.Fprintf(&b, "\tcase u.Name != \"\":\n\t\treturn json.Marshal(u.Name)\n\t}\n\treturn nil, emptyUnion(%q)\n}\n\n", name)
	quoted := make([]string, 0, len(names)+len(objs))
	for _, v := range names {
		quoted = append(quoted, fmt.Sprintf("%q", v))
	}
	for _, o := range objs {
		quoted = append(quoted, fmt.Sprintf("%q", o.key))
	}
	fmt.Fprintf(&b, "// UnmarshalJSON accepts a plain string form or a single-key object form.\n"+
		"func (u *%s) UnmarshalJSON(b []byte) error {\n\t*u = %s{}\n\tname, key, val, err := splitExternal(b, %q)\n"+
		"\tif err != nil {\n", name, name, name)
	if open {
		b.WriteString("\t\tif isJSONObject(b) {\n\t\t\tu.Other = append(json.RawMessage(nil), b...)\n\t\t\treturn nil\n\t\t}\n")
	}
	b.WriteString("\t\treturn err\n\t}\n\tswitch {\n")
	for _, v := range names {
		fmt.Fprintf(&b, "\tcase key == \"\" && name == %q:\n\t\tu.Name = name\n\t\treturn nil\n", v)
	}
	for _, o := range objs {
		fmt.Fprintf(&b, "\tcase key == %q:\n\t\treturn json.Unmarshal(val, &u.%s)\n", o.key, o.goName)
	}
	if open {
		b.WriteString("\tcase key == \"\":\n\t\tu.Name = name\n\t\treturn nil\n\tdefault:\n" +
			"\t\tu.Other = append(json.RawMessage(nil), b...)\n\t\treturn nil\n\t}\n}\n\n")
		g.out = append(g.out, b.String())
		return
	}
	if order, ok := variantOrder[name]; ok {
		quoted = order
	}
	fmt.Fprintf(&b, "\t}\n\tif key != \"\" {\n\t\tname = key\n\t}\n\treturn unknownVariant(name, %s)\n}\n\n",
		strings.Join(quoted, ", "))
	g.out = append(g.out, b.String())
}

// withParent returns branch b of a union with the union's own properties (shared by all branches) added.
func withParent(b, parent *Schema) *Schema {
	if len(parent.Properties) == 0 {
		return b
	}
	m := *b
	m.Properties = map[string]*Schema{}
	for k, p := range parent.Properties {
		m.Properties[k] = p
	}
	for k, p := range b.Properties {
		m.Properties[k] = p
	}
	m.Required = append(append([]string{}, parent.Required...), b.Required...)
	return &m
}

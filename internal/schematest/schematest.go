// Package schematest validates JSON-RPC messages against the repository's JSON Schema copy (/schema), for
// tests anywhere in the module. The schemas are compiled once per process.
//
// Typical use in a test that reads a server's stdout:
//
//	tr := schematest.NewTracker()
//	tr.ClientSent(requestLine)                   // remember id → method of each request we send
//	schematest.ValidateServerMessage(t, line, tr.MethodOf)
package schematest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	protocol "appserver/protocol/v2"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// printer renders validation error kinds in English.
var printer = message.NewPrinter(language.English)

// Files of the schema copy that the Validator loads, relative to the schema directory.
const (
	v2Bundle         = "codex_app_server_protocol.v2.schemas.json"
	allBundle        = "codex_app_server_protocol.schemas.json"
	serverNotifsFile = "ServerNotification.json"
	serverReqsFile   = "ServerRequest.json"
	clientReqsFile   = "ClientRequest.json"
	clientNotifsFile = "ClientNotification.json"
	errorFile        = "JSONRPCErrorError.json"
)

// intFormats are the integer "format" values of the schema, with their ranges.
var intFormats = map[string][2]float64{
	"int8": {math.MinInt8, math.MaxInt8}, "int16": {math.MinInt16, math.MaxInt16},
	"int32": {math.MinInt32, math.MaxInt32}, "int64": {math.MinInt64, math.MaxInt64},
	"uint8": {0, math.MaxUint8}, "uint16": {0, math.MaxUint16}, "uint32": {0, math.MaxUint32},
	"uint64": {0, math.MaxUint64}, "uint": {0, math.MaxUint64},
}

// Validator validates protocol messages against the compiled schema copy. It is safe for concurrent use.
type Validator struct {
	dir      string
	compiler *jsonschema.Compiler
	mu       sync.Mutex
	compiled map[string]*jsonschema.Schema
	notifs   map[string]int // method → oneOf index in ServerNotification.json
	sreqs    map[string]int
	creqs    map[string]int
	cnotifs  map[string]int
	v2Defs   map[string]bool
	allDefs  map[string]bool
}

var (
	defaultOnce sync.Once
	defaultV    *Validator
	defaultErr  error
)

// Default returns the process-wide Validator for <module root>/schema, compiling it on first use.
func Default() (*Validator, error) {
	defaultOnce.Do(func() {
		var dir string
		dir, defaultErr = SchemaDir()
		if defaultErr == nil {
			defaultV, defaultErr = New(dir)
		}
	})
	return defaultV, defaultErr
}

// SchemaDir returns the schema directory of the module: <dir of go.mod>/schema, searching upwards from this
// source file and, when that path is unavailable (e.g. -trimpath builds), from the working directory.
func SchemaDir() (string, error) {
	var starts []string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, start := range starts {
		for dir := start; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				if _, err := os.Stat(filepath.Join(dir, "schema", v2Bundle)); err == nil {
					return filepath.Join(dir, "schema"), nil
				}
				break
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return "", errors.New("schematest: no schema directory next to a go.mod found")
}

// New loads the schema files of dir into a Validator; schemas compile lazily per message kind.
func New(dir string) (*Validator, error) {
	v := &Validator{
		dir: dir, compiler: jsonschema.NewCompiler(), compiled: map[string]*jsonschema.Schema{},
	}
	v.compiler.AssertFormat()
	for name, r := range intFormats {
		r := r
		v.compiler.RegisterFormat(&jsonschema.Format{Name: name, Validate: func(x any) error {
			n, ok := x.(json.Number)
			if !ok {
				return nil
			}
			f, err := n.Float64()
			if err != nil || f < r[0] || f > r[1] || f != math.Trunc(f) {
				return fmt.Errorf("%s out of range for %s", n, name)
			}
			return nil
		}})
	}
	v.compiler.RegisterFormat(&jsonschema.Format{Name: "double", Validate: func(any) error { return nil }})
	docs := map[string]any{}
	for _, f := range []string{v2Bundle, allBundle, serverNotifsFile, serverReqsFile, clientReqsFile,
		clientNotifsFile, errorFile} {
		doc, err := loadJSON(filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		if err := v.compiler.AddResource(v.url(f), doc); err != nil {
			return nil, fmt.Errorf("schematest: add %s: %w", f, err)
		}
		docs[f] = doc
	}
	v.notifs = branchIndex(docs[serverNotifsFile])
	v.sreqs = branchIndex(docs[serverReqsFile])
	v.creqs = branchIndex(docs[clientReqsFile])
	v.cnotifs = branchIndex(docs[clientNotifsFile])
	v.v2Defs = defNames(docs[v2Bundle])
	v.allDefs = defNames(docs[allBundle])
	return v, nil
}

func (v *Validator) url(file string) string {
	return "file://" + filepath.ToSlash(filepath.Join(v.dir, file))
}

func loadJSON(path string) (any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("schematest: %w", err)
	}
	defer func() { _ = f.Close() }()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, fmt.Errorf("schematest: %s: %w", path, err)
	}
	return doc, nil
}

// branchIndex maps each method of a method-union document to its oneOf index.
func branchIndex(doc any) map[string]int {
	idx := map[string]int{}
	obj, _ := doc.(map[string]any)
	branches, _ := obj["oneOf"].([]any)
	for i, b := range branches {
		bo, _ := b.(map[string]any)
		props, _ := bo["properties"].(map[string]any)
		m, _ := props["method"].(map[string]any)
		enum, _ := m["enum"].([]any)
		if len(enum) != 1 {
			continue
		}
		name, _ := enum[0].(string)
		idx[name] = i
	}
	return idx
}

func defNames(doc any) map[string]bool {
	out := map[string]bool{}
	obj, _ := doc.(map[string]any)
	defs, _ := obj["definitions"].(map[string]any)
	for k := range defs {
		out[k] = true
	}
	return out
}

func (v *Validator) schema(loc string) (*jsonschema.Schema, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.compiled[loc]; ok {
		return s, nil
	}
	s, err := v.compiler.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("schematest: compile %s: %w", loc, err)
	}
	v.compiled[loc] = s
	return s, nil
}

// definitionLoc returns the schema location of a definition: the v2 bundle first, then the "all" bundle.
func (v *Validator) definitionLoc(name string) (string, bool) {
	switch {
	case v.v2Defs[name]:
		return v.url(v2Bundle) + "#/definitions/" + name, true
	case v.allDefs[name]:
		return v.url(allBundle) + "#/definitions/" + name, true
	}
	return "", false
}

// ResponseType returns the schema definition name of the result of a client request method ("" if unknown),
// as recorded in the generated method table of package protocol.
func (v *Validator) ResponseType(method string) string {
	if s, ok := protocol.LookupClientRequest(method); ok {
		return s.ResultType
	}
	return ""
}

// ServerRequestResponseType returns the definition name of the client's result for a server request method.
func (v *Validator) ServerRequestResponseType(method string) string {
	if s, ok := protocol.LookupServerRequest(method); ok {
		return s.ResultType
	}
	return ""
}

// Definition validates a JSON value against the named schema definition (e.g. "ThreadStartResponse").
func (v *Validator) Definition(name string, value []byte) error {
	loc, ok := v.definitionLoc(name)
	if !ok {
		return fmt.Errorf("schematest: no definition %q", name)
	}
	return v.validate(loc, value, name)
}

// ServerMessage validates one server → client JSON-RPC message: a notification against its
// ServerNotification branch (the top-level emittedAtMs is allowed), a server request against its
// ServerRequest branch, a result against the response type of the client request method that
// methodOfRequestID returns for the id (the decoded JSON id: string or json.Number), and an error against
// JSONRPCErrorError.
func (v *Validator) ServerMessage(line []byte, methodOfRequestID func(id any) string) error {
	msg, err := decodeObject(line)
	if err != nil {
		return err
	}
	method, hasMethod := msg["method"].(string)
	id, hasID := msg["id"]
	switch {
	case hasMethod && hasID:
		return v.validateBranch(serverReqsFile, v.sreqs, "server request", method, msg)
	case hasMethod:
		if _, known := v.notifs[method]; known {
			if ts, ok := msg["emittedAtMs"]; ok {
				if n, isNum := ts.(json.Number); !isNum || strings.ContainsAny(n.String(), ".eE-") {
					return fmt.Errorf("notification %q: at '/emittedAtMs': want a non-negative integer, got %v", method, ts)
				}
				delete(msg, "emittedAtMs")
			}
		}
		return v.validateBranch(serverNotifsFile, v.notifs, "notification", method, msg)
	case hasID:
		if err := checkID(id); err != nil {
			return err
		}
		result, hasResult := msg["result"]
		errObj, hasError := msg["error"]
		if hasResult == hasError {
			return errors.New("response must have exactly one of result and error")
		}
		if hasError {
			return v.validateAt(v.url(errorFile), errObj, "error response", "/error")
		}
		if methodOfRequestID == nil {
			return fmt.Errorf("response to id %v: no request-method lookup given", id)
		}
		reqMethod := methodOfRequestID(id)
		if reqMethod == "" {
			return fmt.Errorf("response to id %v: no matching client request", id)
		}
		name := v.ResponseType(reqMethod)
		loc, ok := v.definitionLoc(name)
		if !ok {
			return fmt.Errorf("response to %s: no response schema (looked for %q)", reqMethod, name)
		}
		return v.validateAt(loc, result, fmt.Sprintf("response to %s (%s)", reqMethod, name), "/result")
	}
	return errors.New("message is neither a request, a notification nor a response")
}

// ClientMessage validates one client → server message: requests against their ClientRequest branch,
// notifications against ClientNotification, and results answering a server request against the response
// type of serverRequestMethodOfID(id).
func (v *Validator) ClientMessage(line []byte, serverRequestMethodOfID func(id any) string) error {
	msg, err := decodeObject(line)
	if err != nil {
		return err
	}
	method, hasMethod := msg["method"].(string)
	id, hasID := msg["id"]
	switch {
	case hasMethod && hasID:
		return v.validateBranch(clientReqsFile, v.creqs, "client request", method, msg)
	case hasMethod:
		return v.validateBranch(clientNotifsFile, v.cnotifs, "client notification", method, msg)
	case hasID:
		if _, isErr := msg["error"]; isErr {
			return v.validateAt(v.url(errorFile), msg["error"], "error response", "/error")
		}
		m := ""
		if serverRequestMethodOfID != nil {
			m = serverRequestMethodOfID(id)
		}
		name := v.ServerRequestResponseType(m)
		loc, ok := v.definitionLoc(name)
		if !ok {
			return fmt.Errorf("client response to id %v (%q): no response schema", id, m)
		}
		return v.validateAt(loc, msg["result"], fmt.Sprintf("client response to %s (%s)", m, name), "/result")
	}
	return errors.New("message is neither a request, a notification nor a response")
}

// validateBranch validates msg against the oneOf branch of the method-union document file that idx names for
// method; kind ("server request", "notification", ...) prefixes the error.
func (v *Validator) validateBranch(file string, idx map[string]int, kind, method string, msg map[string]any) error {
	i, ok := idx[method]
	if !ok {
		return fmt.Errorf("%s %q: method not in %s schema", kind, method, strings.TrimSuffix(file, ".json"))
	}
	return v.validateValue(fmt.Sprintf("%s#/oneOf/%d", v.url(file), i), msg, kind+" "+method)
}

func decodeObject(line []byte) (map[string]any, error) {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	msg, ok := inst.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("message is not a JSON object: %.80s", line)
	}
	return msg, nil
}

func checkID(id any) error {
	switch x := id.(type) {
	case string:
		return nil
	case json.Number:
		if !strings.ContainsAny(x.String(), ".eE") {
			return nil
		}
	}
	return fmt.Errorf("at '/id': not a RequestId (string or integer): %v", id)
}

func (v *Validator) validate(loc string, value []byte, what string) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
	if err != nil {
		return fmt.Errorf("%s: not JSON: %w", what, err)
	}
	return v.validateValue(loc, inst, what)
}

func (v *Validator) validateValue(loc string, inst any, what string) error {
	return v.validateAt(loc, inst, what, "")
}

// validateAt validates inst and reports error locations prefixed with prefix (e.g. "/result").
func (v *Validator) validateAt(loc string, inst any, what, prefix string) error {
	s, err := v.schema(loc)
	if err != nil {
		return err
	}
	err = s.Validate(inst)
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		msgs := summarize(ve)
		if prefix != "" {
			for i, m := range msgs {
				msgs[i] = strings.Replace(m, "at '", "at '"+prefix, 1)
			}
		}
		return fmt.Errorf("%s: %s", what, strings.Join(msgs, "; "))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// summarize reduces a validation error tree to its leaf messages. In a oneOf/anyOf it follows only the
// branches whose discriminator matched (no enum/const failure on a direct property of the object); when
// none matched it reports the allowed discriminator values.
func summarize(e *jsonschema.ValidationError) []string {
	if len(e.Causes) == 0 {
		return []string{fmt.Sprintf("at '%s': %s", pointer(e.InstanceLocation), e.ErrorKind.LocalizedString(printer))}
	}
	switch e.ErrorKind.(type) {
	case *kind.OneOf, *kind.AnyOf:
		var best *jsonschema.ValidationError
		bestN := 0
		tagLoc := ""
		var allowed []string
		otherShapes := false
		for _, c := range e.Causes {
			ls := leaves(c)
			tagFail := false
			for _, l := range ls {
				d := len(l.InstanceLocation) - len(e.InstanceLocation)
				if d > 1 {
					continue
				}
				switch k := l.ErrorKind.(type) {
				case *kind.Const:
					tagFail = true
					tagLoc = pointer(l.InstanceLocation)
					allowed = append(allowed, fmt.Sprintf("'%v'", k.Want))
				case *kind.Enum:
					tagFail = true
					tagLoc = pointer(l.InstanceLocation)
					for _, w := range k.Want {
						allowed = append(allowed, fmt.Sprintf("'%v'", w))
					}
				case *kind.Type:
					if d == 0 {
						tagFail, otherShapes = true, true
					}
				}
			}
			if !tagFail && (best == nil || len(ls) < bestN) {
				best, bestN = c, len(ls)
			}
		}
		if otherShapes {
			allowed = append(allowed, "an object form (see the schema)")
		}
		if best != nil {
			return summarize(best)
		}
		if tagLoc != "" {
			return []string{fmt.Sprintf("at '%s': value matches no variant of the union; want one of %s",
				tagLoc, strings.Join(allowed, ", "))}
		}
		return []string{fmt.Sprintf("at '%s': value matches no branch of the union", pointer(e.InstanceLocation))}
	}
	var out []string
	for _, c := range e.Causes {
		out = append(out, summarize(c)...)
	}
	return out
}

// leaves returns the errors without causes below e.
func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return ""
	}
	return "/" + strings.Join(tokens, "/")
}

// ValidateServerMessage fails t unless line is a schema-valid server → client message (see
// Validator.ServerMessage).
func ValidateServerMessage(t testing.TB, line []byte, methodOfRequestID func(id any) string) {
	t.Helper()
	v, err := Default()
	if err != nil {
		t.Fatalf("schematest: %v", err)
	}
	if err := v.ServerMessage(line, methodOfRequestID); err != nil {
		t.Fatalf("schema violation: %v\nmessage: %.2000s", err, line)
	}
}

// Tracker remembers the method of each request sent in one direction, keyed by id, so responses can be
// matched to their request. It is safe for concurrent use.
type Tracker struct {
	mu      sync.Mutex
	methods map[string]string
}

// NewTracker returns an empty Tracker.
func NewTracker() *Tracker { return &Tracker{methods: map[string]string{}} }

// Sent records a request line (ignored unless it has both id and method).
func (tr *Tracker) Sent(line []byte) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(line, &m) != nil || m.ID == nil || m.Method == "" {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.methods[string(bytes.TrimSpace(m.ID))] = m.Method
}

// MethodOf returns the method of the recorded request with this id (a decoded JSON id: string,
// json.Number, float64 or int), or "".
func (tr *Tracker) MethodOf(id any) string {
	key, err := json.Marshal(id)
	if err != nil {
		return ""
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.methods[string(key)]
}

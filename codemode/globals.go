package codemode

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dop251/goja"
	"github.com/google/uuid"

	"appserver/thread"
)

// install defines the script's globals (on the loop goroutine).
func (c *cell) install() {
	vm := c.vm
	tools := vm.NewObject()
	all := make([]any, 0, len(c.set.tools))
	for _, t := range c.set.tools {
		_ = tools.Set(t.js, c.toolFunc(t))
		all = append(all, map[string]any{"name": t.js, "description": t.description})
	}
	_ = vm.Set("tools", tools)
	_ = vm.Set("ALL_TOOLS", all)
	_ = vm.Set("text", func(v goja.Value) { c.emit(textItem(c.stringify(v))) })
	_ = vm.Set("image", func(v goja.Value) {
		url := imageURL(v)
		if url == "" {
			panic(vm.NewTypeError("image() needs a data: URL, {image_url} or an MCP image block"))
		}
		c.emit(imageItem(url))
	})
	_ = vm.Set("exit", func() { vm.Interrupt(exitSignal) })
	_ = vm.Set("notify", func(v goja.Value) {
		text := c.stringify(v)
		c.mu.Lock()
		c.notes = append(c.notes, text)
		c.mu.Unlock()
	})
	_ = vm.Set("yield_control", func() {
		c.mu.Lock()
		mark := c.taken + len(c.items)
		c.mu.Unlock()
		select {
		case c.yielded <- mark:
		default:
		}
	})
	_ = vm.Set("store", func(key string, v goja.Value) {
		b, err := json.Marshal(v.Export())
		if err != nil {
			panic(vm.NewTypeError("store(): the value is not serialisable: " + err.Error()))
		}
		st := c.set.st
		st.mu.Lock()
		st.stored[key] = string(b)
		st.mu.Unlock()
	})
	_ = vm.Set("load", func(key string) goja.Value {
		st := c.set.st
		st.mu.Lock()
		raw, ok := st.stored[key]
		st.mu.Unlock()
		if !ok {
			return goja.Undefined()
		}
		return parseJSON(vm, raw, goja.Undefined())
	})
	_ = vm.Set("setTimeout", func(cb goja.Callable, delay goja.Value) int64 {
		ms := int64(0)
		if delay != nil && !goja.IsUndefined(delay) {
			ms = delay.ToInteger()
		}
		c.nextTimer++
		id := c.nextTimer
		c.timers[id] = time.AfterFunc(time.Duration(max(ms, 0))*time.Millisecond, func() {
			c.post(func() error {
				if _, live := c.timers[id]; !live {
					return nil
				}
				delete(c.timers, id)
				_, err := cb(goja.Undefined())
				return err
			})
		})
		return id
	})
	_ = vm.Set("clearTimeout", func(id goja.Value) {
		if id == nil || goja.IsUndefined(id) {
			return
		}
		if t, ok := c.timers[id.ToInteger()]; ok {
			t.Stop()
			delete(c.timers, id.ToInteger())
		}
	})
}

// emit appends an output item.
func (c *cell) emit(item json.RawMessage) {
	c.mu.Lock()
	c.items = append(c.items, item)
	c.mu.Unlock()
}

// stringify renders text()'s argument: a string as is, anything else through JSON.stringify when that
// gives a string, else its String().
func (c *cell) stringify(v goja.Value) string {
	if v == nil || goja.IsUndefined(v) {
		return "undefined"
	}
	if s, ok := v.Export().(string); ok {
		return s
	}
	if j, ok := goja.AssertFunction(c.vm.Get("JSON").ToObject(c.vm).Get("stringify")); ok {
		if out, err := j(goja.Undefined(), v); err == nil && !goja.IsUndefined(out) {
			return out.String()
		}
	}
	return v.String()
}

func imageURL(v goja.Value) string {
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return ""
	}
	switch x := v.Export().(type) {
	case string:
		return x
	case map[string]any:
		if u, ok := x["image_url"].(string); ok {
			return u
		}
		if x["type"] == "image" {
			data, _ := x["data"].(string)
			mt, _ := x["mimeType"].(string)
			if data != "" && mt != "" {
				return "data:" + mt + ";base64," + data
			}
		}
	}
	return ""
}

// toolFunc is tools.<name>: it starts the nested call on its own goroutine and returns a promise that
// the loop settles with the call's result.
func (c *cell) toolFunc(t nestedTool) func(goja.FunctionCall) goja.Value {
	return func(fc goja.FunctionCall) goja.Value {
		vm := c.vm
		call := thread.ToolCall{CallID: "exec-" + uuid.NewString(), Name: t.name, Namespace: t.namespace}
		arg := fc.Argument(0)
		s, isString := arg.Export().(string)
		switch {
		case t.custom:
			if !isString {
				panic(vm.NewTypeError("tools." + t.js + " takes a string"))
			}
			call.Type, call.Input = "custom_tool_call", s
		case isString:
			call.Type, call.Arguments = "function_call", s
		case goja.IsUndefined(arg) || goja.IsNull(arg):
			call.Type, call.Arguments = "function_call", "{}"
		default:
			b, err := json.Marshal(arg.Export())
			if err != nil {
				panic(vm.NewTypeError("tools." + t.js + ": the arguments are not serialisable: " + err.Error()))
			}
			call.Type, call.Arguments = "function_call", string(b)
		}
		item, _ := json.Marshal(map[string]string{"type": call.Type, "call_id": call.CallID, "name": call.Name})
		call.Item = item
		promise, resolve, reject := vm.NewPromise()
		go func() {
			var structured json.RawMessage
			var failure string
			out := c.dispatch(thread.WithResultSink(c.ctx, func(r json.RawMessage, f string) { structured, failure = r, f }), call)
			res, errText := result(t, out)
			switch {
			case failure != "":
				res, errText = nil, failure
			case structured != nil:
				res, errText = func(vm *goja.Runtime) goja.Value { return parseJSON(vm, string(structured), goja.Undefined()) }, ""
			}
			c.post(func() error {
				if errText != "" {
					return reject(errText)
				}
				return resolve(res(vm))
			})
		}()
		return vm.ToValue(promise)
	}
}

// dispatch runs a nested call through the nested tool sets.
func (c *cell) dispatch(ctx context.Context, call thread.ToolCall) (out json.RawMessage) {
	defer func() {
		if p := recover(); p != nil {
			out = thread.FunctionOutput(call.CallID, "tool "+call.Name+" failed: internal error")
		}
	}()
	for _, set := range c.set.nested {
		if o, ok := set.Call(ctx, c.tc, call); ok {
			return o
		}
	}
	return thread.FunctionOutput(call.CallID, "unsupported call: "+call.Name)
}

var (
	patchFrame = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^Exit code: (-?\d+)\nWall time: [0-9.]+ seconds\nOutput:\n`)
	})
	execHeader = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^Chunk ID: (\S*)\nWall time: ([0-9.]+) seconds\n(?:Process exited with code (-?\d+)\n|Process running with session ID (\d+)\n)?(?:[^\n]*\n)*?Original token count: (\d+)\nOutput:\n`)
	})
)

// result turns a nested call's output item into what its promise resolves to (a constructor run on the
// loop) or the text it rejects with.
func result(t nestedTool, out json.RawMessage) (func(*goja.Runtime) goja.Value, string) {
	var item struct {
		Output json.RawMessage `json:"output"`
	}
	_ = json.Unmarshal(out, &item)
	var text string
	if json.Unmarshal(item.Output, &text) != nil {
		// A content list: an image resolves to {image_url}, anything else to the list itself.
		var parts []map[string]any
		_ = json.Unmarshal(item.Output, &parts)
		if len(parts) == 1 && parts[0]["type"] == "input_image" {
			url := parts[0]["image_url"]
			return func(vm *goja.Runtime) goja.Value { return vm.ToValue(map[string]any{"image_url": url}) }, ""
		}
		return func(vm *goja.Runtime) goja.Value { return vm.ToValue(parts) }, ""
	}
	switch {
	case strings.HasPrefix(text, "failed to parse function arguments"):
		return nil, text // the call did not run: the script gets an exception, as from the reference
	case t.namespace == "" && (t.name == "exec_command" || t.name == "write_stdin"):
		m := execHeader().FindStringSubmatchIndex(text)
		if m == nil {
			return nil, text
		}
		sub := func(i int) string {
			if m[2*i] < 0 {
				return ""
			}
			return text[m[2*i]:m[2*i+1]]
		}
		chunk, wall, exit, session, tokens, body := sub(1), sub(2), sub(3), sub(4), sub(5), text[m[1]:]
		return func(vm *goja.Runtime) goja.Value {
			o := vm.NewObject()
			_ = o.Set("chunk_id", chunk)
			w, _ := strconv.ParseFloat(wall, 64)
			_ = o.Set("wall_time_seconds", w)
			if exit != "" {
				n, _ := strconv.Atoi(exit)
				_ = o.Set("exit_code", n)
			}
			if session != "" {
				n, _ := strconv.Atoi(session)
				_ = o.Set("session_id", n)
			}
			n, _ := strconv.Atoi(tokens)
			_ = o.Set("original_token_count", n)
			_ = o.Set("output", body)
			return o
		}, ""
	case t.namespace == "" && t.name == "apply_patch":
		if m := patchFrame().FindStringSubmatch(text); m != nil && m[1] == "0" {
			text = text[len(m[0]):]
		}
		if strings.HasPrefix(text, "Success.") {
			return func(vm *goja.Runtime) goja.Value { return vm.NewObject() }, ""
		}
		return nil, text
	}
	// Other tools: JSON text resolves to its value, any other text to the string.
	trimmed := strings.TrimSpace(text)
	if (strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[")) && json.Valid([]byte(trimmed)) {
		return func(vm *goja.Runtime) goja.Value { return parseJSON(vm, trimmed, vm.ToValue(text)) }, ""
	}
	return func(vm *goja.Runtime) goja.Value { return vm.ToValue(text) }, ""
}

// parseJSON is JSON.parse(text) (def when it throws).
func parseJSON(vm *goja.Runtime, text string, def goja.Value) goja.Value {
	parse, ok := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("parse"))
	if !ok {
		return def
	}
	v, err := parse(goja.Undefined(), vm.ToValue(text))
	if err != nil {
		return def
	}
	return v
}
